// One direction of a link's netem on descriptors: topologies/switch/twin/
// delayline.py rule for rule (delay, jitter from a distribution table or
// uniform, netem's delay correlation, loss, reorder with gap 1, tfifo order,
// the limit), drawing from its own Python-compatible generator.  The
// distribution tables are iproute2's as delayline.table() computes them,
// passed in from Python, once per parameter change.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "packet.hpp"
#include "queue.hpp"
#include "rng.hpp"

namespace sym {

// topologies/spec/netem.py's NetemParams (checked there)
struct NetemSpec {
    double delay_ms = 0, jitter_ms = 0, loss_pct = 0, correlation_pct = 0, reorder_pct = 0;
    std::string distribution = "uniform";
    int64_t limit = 1000;
    bool active() const { return delay_ms || jitter_ms || loss_pct || reorder_pct; }
};

struct LineStats { uint64_t in = 0, out = 0, lost = 0, reordered = 0, limit_drops = 0; };

class DelayLine {
public:
    // key: the init key of random.Random(f"{seed}:{name}:{port}:{direction}")
    DelayLine(const std::vector<uint32_t>& key, const NetemSpec& spec, const std::vector<int32_t>& table);
    void set(const NetemSpec& spec, const std::vector<int32_t>& table);
    size_t size() const { return held_.size() + now_.size(); }
    bool push(Pkt&& pkt, double now);                 // false: lost or the line is full
    void pop_due(double now, std::vector<Pkt>& out, size_t limit = 256);
    std::optional<double> deadline() const;

    NetemSpec params;
    bool active = false;
    LineStats stats;

private:
    struct Held {
        double t; uint64_t seq; Pkt pkt;
        // heapq's order on (send time, arrival order): the earliest on top
        bool operator<(const Held& o) const { return t != o.t ? t > o.t : seq > o.seq; }
    };
    Rng rng_;
    std::vector<Held> held_;               // a heap
    Ring<Pkt> now_;                        // reordered: out first
    uint64_t seq_ = 0;
    int64_t mu_ = 0, sigma_ = 0, counter_ = 0;
    std::vector<int32_t> dist_;            // empty: uniform
    uint32_t loss_ = 0, reorder_ = 0, gap_ = 0;
    // netem's crndstate (delayline._Correlated)
    uint32_t rho_ = 0, last_ = 0;

    uint32_t draw_correlated();
    int64_t tabledist(int64_t rnd) const;
};

}  // namespace sym
