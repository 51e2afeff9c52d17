// topologies/switch/twin/core.py's SwitchCore on descriptors (switch.hpp).
#include "switch.hpp"

#include <algorithm>
#include <stdexcept>

namespace sym {

SwitchCore::SwitchCore(std::string name_, const std::vector<std::pair<int, std::string>>& ports,
                       int64_t queue_depth, const std::vector<uint32_t>& seed_key)
    : name(std::move(name_)), pipeline(seed_key), queue_depth_(queue_depth) {
    for (const auto& [number, ifname] : ports) {
        if (number < 0 || number >= static_cast<int>(p4::NUM_PORTS))
            throw std::invalid_argument("switch " + name + ": port " + std::to_string(number) + " out of 0..511");
        if (has_port(number)) throw std::invalid_argument("switch " + name + ": port " + std::to_string(number) + " twice");
        if (static_cast<int>(index_.size()) <= number) index_.resize(number + 1, -1);
        index_[number] = static_cast<int>(ports_.size());
        auto p = std::make_unique<Port>();
        p->number = number, p->name = ifname, p->queue = EgressQueue(queue_depth);
        ports_.push_back(std::move(p));
    }
}

Port& SwitchCore::port_at(int port) {
    if (!has_port(port)) throw std::invalid_argument("switch " + name + " has no port " + std::to_string(port));
    return *ports_[index_[port]];
}

const Port& SwitchCore::port_at(int port) const { return const_cast<SwitchCore*>(this)->port_at(port); }

std::vector<int> SwitchCore::port_numbers() const {
    std::vector<int> out;
    for (const auto& p : ports_) out.push_back(p->number);
    return out;
}

void SwitchCore::set_netem(int port, Dir dir, const NetemSpec& spec, const std::vector<int32_t>& table,
                           const std::vector<uint32_t>& key) {
    Port& p = port_at(port);
    auto& line = p.line[static_cast<int>(dir)];
    if (line) {
        line->set(spec, table);           // held frames keep their times
    } else if (spec.active()) {
        line = std::make_unique<DelayLine>(key, spec, table);
        line_order_[static_cast<int>(dir)].push_back(port);
    }
}

void SwitchCore::reset_state() {
    // as BMv2's reset_state: the program's start, queues emptied, unlimited,
    // at the start-up depth, no delay lines (counters and stats stay)
    pipeline.reset();
    for (auto& p : ports_) {
        p->queue = EgressQueue(queue_depth_);
        p->line[0].reset(), p->line[1].reset();
        p->delivered.reset();
    }
    line_order_[0].clear(), line_order_[1].clear();
}

// --- hooks ----------------------------------------------------------------------

void SwitchCore::transmit(int port, Pkt&& pkt, double now) {
    if (on_transmit) on_transmit(port, std::move(pkt), now);
    else if (collecting_) transmitted.emplace_back(port, std::move(pkt), now);
}

void SwitchCore::held(Held kind, int port) {
    if (on_held) on_held(kind, port);
    else if (collecting_) held_log.emplace_back(kind, port);
}

void SwitchCore::send(Port& p, Pkt&& pkt, double now) {
    p.stats.tx++;
    transmit(p.number, std::move(pkt), now);
}

// --- data path ------------------------------------------------------------------

void SwitchCore::arrive(int port, Pkt pkt, double now) {
    Port& p = port_at(port);
    p.stats.rx++;
    DelayLine* line = p.line[static_cast<int>(Dir::Ingress)].get();
    if (line && line->active) {
        line->push(std::move(pkt), now);
        held(Held::Ingress, port);
    } else {
        forward(port, std::move(pkt), now);
    }
}

void SwitchCore::forward(int port, Pkt pkt, double now) {
    Meta meta = pipeline.ingress(port, pkt);
    if (meta.drop != Drop::None) return;
    if (!has_port(meta.egress_port)) {
        no_port_drops++;
        return;
    }
    Port& out = *ports_[index_[meta.egress_port]];
    EgressQueue& q = out.queue;
    const bool ctrl = q.ctrl_lane && is_ctrl(pkt);
    if (!q.room(ctrl)) {
        out.stats.queue_drops++;
        return;
    }
    pipeline.egress(pkt, meta, q.waiting_at(now, delivery(port_at(port), pkt, now)));
    if (q.unlimited() && q.empty()) {
        leave(out.number, std::move(pkt), now);     // unlimited and idle: straight on
    } else {
        q.push(std::move(pkt), now, ctrl);
        held(Held::Queue, out.number);
    }
}

double SwitchCore::delivery(Port& in, const Pkt& pkt, double now) {
    // when the link into the port would have delivered the frame: not before
    // the previous one plus this one's serialisation, no further ahead than
    // a bunch can be (core.py's module docstring)
    const EgressQueue& link = in.queue;
    if (!link.store_and_forward()) return now;
    double t = in.delivered ? std::max(now, *in.delivered + link.service_time(pkt)) : now;
    t = std::min(t, now + link.catch_up_s());
    in.delivered = t;
    return t - now < DELIVERY_SLACK_S ? now : t;
}

void SwitchCore::leave(int port, Pkt pkt, double now) {
    Port& p = port_at(port);
    DelayLine* line = p.line[static_cast<int>(Dir::Egress)].get();
    if (line && line->active) {
        line->push(std::move(pkt), now);
        held(Held::Egress, port);
    } else {
        send(p, std::move(pkt), now);
    }
}

void SwitchCore::drain(double now) {
    // by index: a line made while draining (by a hook) is drained too, and no copy is made
    for (size_t i = 0; i < line_order_[1].size(); i++) drain_line(Dir::Ingress, line_order_[1][i], now);
    for (auto& p : ports_)
        if (!p->queue.empty()) drain_queue(p->number, now);
    for (size_t i = 0; i < line_order_[0].size(); i++) drain_line(Dir::Egress, line_order_[0][i], now);
}

void SwitchCore::drain_queue(int port, double now) {
    Port& p = port_at(port);
    std::vector<Pkt> frames = take_scratch();
    p.queue.pop_due(now, frames);
    if (!frames.empty()) p.served = now;
    for (Pkt& f : frames) leave(port, std::move(f), now);
    give_scratch(frames);
}

void SwitchCore::drain_line(Dir dir, int port, double now) {
    Port& p = port_at(port);
    DelayLine* line = p.line[static_cast<int>(dir)].get();
    if (!line) throw std::invalid_argument("switch " + name + ": no delay line at port " + std::to_string(port));
    std::vector<Pkt> frames = take_scratch();
    line->pop_due(now, frames);
    if (dir == Dir::Ingress)
        for (Pkt& f : frames) forward(port, std::move(f), now);
    else
        for (Pkt& f : frames) send(p, std::move(f), now);
    give_scratch(frames);
}

std::optional<double> SwitchCore::due(Held kind, int port) const {
    const Port& p = port_at(port);
    if (kind == Held::Queue) return p.queue.deadline();
    const DelayLine* line = p.line[kind == Held::Ingress ? static_cast<int>(Dir::Ingress) : 0].get();
    if (!line) throw std::invalid_argument("switch " + name + ": no delay line at port " + std::to_string(port));
    return line->deadline();
}

std::optional<double> SwitchCore::next_due() const {
    std::optional<double> best;
    auto take = [&](std::optional<double> d) { if (d && (!best || *d < *best)) best = d; };
    for (const auto& p : ports_) {
        take(p->queue.deadline());
        for (const auto& line : p->line)
            if (line) take(line->deadline());
    }
    return best;
}

}  // namespace sym
