// topologies/switch/twin/queues.py's EgressQueue on descriptors (queue.hpp).
#include "queue.hpp"

#include <algorithm>

namespace sym {

void EgressQueue::set_depth(int64_t d) {
    if (d < 1) throw std::invalid_argument("queue depth must be >= 1 packet, got " + std::to_string(d));
    depth = d;
}

double EgressQueue::check_rate(double rate, const char* unit) {
    if (!(rate > 0))
        throw std::invalid_argument(std::string("queue rate must be > 0 ") + unit +
                                    " (or None: unlimited), got " + std::to_string(rate));
    return rate;
}

void EgressQueue::set_rate(std::optional<double> r) {
    pps = r ? std::optional<double>(check_rate(*r, "packets/s")) : std::nullopt;
    bps.reset();
    gap = pps ? 1.0 / *pps : 0.0;
    // a new rate restarts the pacing clock: the head may leave at the next
    // pop, the rest at the new rate, nothing counted lost or late
    next_time_ = 0.0;
    restart_ = true;
}

void EgressQueue::set_rate_bps(std::optional<double> r) {
    bps = r ? std::optional<double>(check_rate(*r, "bits/s")) : std::nullopt;
    pps.reset();
    gap = bps ? FULL_FRAME_BYTES * 8 / *bps : 0.0;   // a full-size frame's time: the catch-up allowance
    next_time_ = 0.0;
    restart_ = true;
}

int64_t EgressQueue::waiting(double now) const {
    // in bits/s mode the head being serialised has left as far as the depth goes
    int64_t n = static_cast<int64_t>(q_.size());
    if (n && store_and_forward() && next_time_ <= now && head_lane() == Lane::Data) n -= 1;
    return n;
}

int64_t EgressQueue::waiting_at(double now, double t) const {
    // the data lane's frames whose serialisation has not started by t
    if (t <= now || !store_and_forward() || !ctrl_.empty() || restart_) return waiting(now);
    int64_t n = static_cast<int64_t>(q_.size());
    double start = next_time_;
    for (size_t i = 0; i < q_.size(); i++) {
        if (start > t) break;
        n -= 1;
        start += service_time(q_[i]);
    }
    return n;
}

void EgressQueue::push(Pkt&& pkt, double now, bool ctrl) {
    const Lane lane = lane_of(ctrl);
    if (empty() && (next_time_ <= now || restart_)) {
        next_time_ = now;                 // idle queue: the head starts at once
        fresh_ = !store_and_forward();
        restart_ = false;                 // the clock starts here
        serving_ = lane;                  // on the wire: what arrives after it waits
    }
    if (lane == Lane::Ctrl) ctrl_.push_back(Timed{now, std::move(pkt)});
    else q_.push_back(std::move(pkt));
}

EgressQueue::Lane EgressQueue::head_lane() const {
    // the lane that started at an idle port; else the control lane's head if
    // it arrived before the port freed, or if there is no data; else data
    if (serving_ != Lane::None) return serving_;
    if (!ctrl_.empty() && (ctrl_.front().arrival < next_time_ || q_.empty())) return Lane::Ctrl;
    if (!q_.empty()) return Lane::Data;
    return Lane::None;
}

double EgressQueue::head_leaves() const {
    const Lane l = head_lane();
    return l == Lane::None ? next_time_ : leaves(head(l));
}

void EgressQueue::pop_due(double now, std::vector<Pkt>& out, size_t limit) {
    size_t popped = 0;
    if (unlimited()) {
        while (!empty() && popped < limit) {
            out.push_back(pop(head_lane()));
            serving_ = Lane::None;
            popped++;
        }
        return;
    }
    // a late wake-up may catch up a little, never with an unbounded burst
    bool fresh = fresh_ || restart_;
    if (restart_) next_time_ = now, restart_ = false;   // a new rate: the head starts now, nothing lost
    double schedule = head_leaves();                     // as scheduled, before a late wake-up's cut
    const double floor = now - catch_up_s();
    if (next_time_ < floor) {
        lost_s += floor - next_time_;
        next_time_ = floor;
    }
    while (popped < limit) {
        const Lane l = head_lane();
        if (l == Lane::None || leaves(head(l)) > now) break;
        Pkt p = pop(l);
        serving_ = Lane::None;
        if (fresh) fresh = fresh_ = false;
        else late.add(now - schedule);
        const double s = service_time(p);
        next_time_ += s;
        schedule = head_leaves();
        service_s += s;
        bytes_out += p.len;
        out.push_back(std::move(p));
        popped++;
    }
}

std::optional<double> EgressQueue::deadline() const {
    const Lane l = head_lane();
    if (l == Lane::None) return std::nullopt;
    if (unlimited() || restart_) return 0.0;    // a pop lets it go, or restarts the clock
    return leaves(head(l));
}

}  // namespace sym
