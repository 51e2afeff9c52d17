// A switch port's egress queue on descriptors: topologies/switch/twin/
// queues.py's EgressQueue rule for rule (drop-tail depth; packets/s,
// bits/s store-and-forward or unlimited; the control lane; the catch-up
// bound; the fidelity figures, their lateness as lateness.hpp records it).
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "lateness.hpp"
#include "packet.hpp"
#include "ring.hpp"

namespace sym {

class EgressQueue {
public:
    static constexpr int DEFAULT_DEPTH = 64;
    static constexpr double MAX_CATCH_UP_S = 0.002;
    static constexpr double FULL_FRAME_BYTES = 1500;   // only bounds the catch-up burst in bits/s mode

    explicit EgressQueue(int64_t depth = DEFAULT_DEPTH) { set_depth(depth); set_rate(std::nullopt); }

    void set_depth(int64_t depth);
    void set_rate(std::optional<double> pps);       // packets/s (BMv2's unit); none: unlimited
    void set_rate_bps(std::optional<double> bps);   // bits/s (a link's rate); none: unlimited
    void set_ctrl_lane(bool on) { ctrl_lane = on; }

    bool unlimited() const { return !pps && !bps; }
    bool store_and_forward() const { return bps.has_value(); }
    size_t size() const { return q_.size(); }        // the data lane, the frame on the wire included
    bool empty() const { return q_.empty() && ctrl_.empty(); }
    double catch_up_s() const { return std::max(4 * gap, MAX_CATCH_UP_S); }
    int64_t waiting(double now) const;
    int64_t waiting_at(double now, double t) const;
    bool room(bool ctrl = false) const { return static_cast<int64_t>(lane_size(ctrl)) < depth; }
    void push(Pkt&& pkt, double now, bool ctrl = false);
    // frames due by now (at most limit) appended to out, in departure order
    void pop_due(double now, std::vector<Pkt>& out, size_t limit = 256);
    std::optional<double> deadline() const;
    double service_time(const Pkt& p) const { return bps ? static_cast<double>(p.len) * 8 / *bps : gap; }
    double in_flight_s(const Pkt& p) const { return store_and_forward() ? 0.0 : service_time(p); }

    int64_t depth = DEFAULT_DEPTH;
    std::optional<double> pps, bps;
    double gap = 0.0;
    bool ctrl_lane = false;
    // fidelity (queues.py's figures())
    Lateness late;
    double service_s = 0.0, lost_s = 0.0;
    uint64_t bytes_out = 0;

private:
    enum class Lane : uint8_t { None, Data, Ctrl };
    struct Timed { double arrival = 0.0; Pkt pkt; };
    Ring<Pkt> q_;
    Ring<Timed> ctrl_;                   // the control lane: (arrival, frame)
    Lane serving_ = Lane::None;          // the lane whose head started at an idle port
    double next_time_ = 0.0;             // when the head may start
    bool fresh_ = false, restart_ = true;

    static double check_rate(double rate, const char* unit);
    Lane lane_of(bool ctrl) const { return ctrl && ctrl_lane ? Lane::Ctrl : Lane::Data; }
    size_t lane_size(bool ctrl) const { return lane_of(ctrl) == Lane::Ctrl ? ctrl_.size() : q_.size(); }
    Lane head_lane() const;
    const Pkt& head(Lane l) const { return l == Lane::Ctrl ? ctrl_.front().pkt : q_.front(); }
    Pkt pop(Lane l) { return l == Lane::Ctrl ? ctrl_.pop_front().pkt : q_.pop_front(); }
    double leaves(const Pkt& p) const { return next_time_ + (store_and_forward() ? service_time(p) : 0.0); }
    double head_leaves() const;
};

}  // namespace sym
