// topologies/switch/twin/delayline.py's DelayLine on descriptors (delayline.hpp).
#include "delayline.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace sym {

namespace {
constexpr int64_t NETEM_DIST_SCALE = 8192;
constexpr double U32_MAX = 4294967295.0;

// Python's round(): half to even, as nearbyint in the default rounding mode
int64_t py_round(double x) { return static_cast<int64_t>(std::nearbyint(x)); }
uint32_t pct_to_u32(double pct) { return static_cast<uint32_t>(py_round(pct / 100.0 * U32_MAX)); }
}  // namespace

DelayLine::DelayLine(const std::vector<uint32_t>& key, const NetemSpec& spec, const std::vector<int32_t>& table)
    : rng_(key) {
    set(spec, table);
}

void DelayLine::set(const NetemSpec& spec, const std::vector<int32_t>& table) {
    params = spec;
    active = spec.active();
    mu_ = py_round(spec.delay_ms * 1e6);
    sigma_ = py_round(spec.jitter_ms * 1e6);
    // a table only where a jitter draws from it
    if (sigma_ && spec.distribution != "uniform") {
        if (table.empty()) throw std::invalid_argument("netem " + spec.distribution + ": no distribution table");
        dist_ = table;
    } else {
        dist_.clear();
    }
    loss_ = pct_to_u32(spec.loss_pct);
    reorder_ = pct_to_u32(spec.reorder_pct);
    gap_ = spec.reorder_pct ? 1 : 0;
    counter_ = 0;                          // netem_change resets it
    rho_ = pct_to_u32(spec.correlation_pct);
    last_ = rng_.getrandbits(32);          // a new crndstate draws its first value
}

uint32_t DelayLine::draw_correlated() {
    const uint32_t value = rng_.getrandbits(32);
    if (rho_ == 0) return value;
    const unsigned __int128 rho = static_cast<unsigned __int128>(rho_) + 1;
    const unsigned __int128 u32 = static_cast<unsigned __int128>(1) << 32;
    last_ = static_cast<uint32_t>((value * (u32 - rho) + last_ * rho) >> 32);
    return last_;
}

int64_t DelayLine::tabledist(int64_t rnd) const {
    // netem's tabledist, ns in, ns out; C's truncating division where netem has it
    if (sigma_ == 0) return mu_;
    if (dist_.empty()) return rnd % (2 * sigma_) + mu_ - sigma_;
    const int64_t t = dist_[static_cast<size_t>(rnd % static_cast<int64_t>(dist_.size()))];
    int64_t x = (sigma_ % NETEM_DIST_SCALE) * t;
    x += x >= 0 ? NETEM_DIST_SCALE / 2 : -(NETEM_DIST_SCALE / 2);
    return x / NETEM_DIST_SCALE + (sigma_ / NETEM_DIST_SCALE) * t + mu_;
}

bool DelayLine::push(Pkt&& pkt, double now) {
    stats.in++;
    if (loss_ && loss_ >= rng_.getrandbits(32)) {
        stats.lost++;
        return false;
    }
    if (static_cast<int64_t>(size()) >= params.limit) {
        stats.limit_drops++;
        return false;
    }
    if (gap_ == 0 || counter_ < static_cast<int64_t>(gap_) - 1 || reorder_ < rng_.getrandbits(32)) {
        const int64_t delay_ns = tabledist(sigma_ ? draw_correlated() : 0);
        counter_++;
        held_.push_back(Held{now + static_cast<double>(std::max<int64_t>(0, delay_ns)) * 1e-9, seq_++, std::move(pkt)});
        std::push_heap(held_.begin(), held_.end());
    } else {
        counter_ = 0;
        now_.push_back(std::move(pkt));
        stats.reordered++;
    }
    return true;
}

void DelayLine::pop_due(double now, std::vector<Pkt>& out, size_t limit) {
    size_t n = 0;
    while (!now_.empty() && n < limit) out.push_back(now_.pop_front()), n++;
    while (!held_.empty() && held_.front().t <= now && n < limit) {
        std::pop_heap(held_.begin(), held_.end());
        out.push_back(std::move(held_.back().pkt));
        held_.pop_back();
        n++;
    }
    stats.out += n;
}

std::optional<double> DelayLine::deadline() const {
    if (!now_.empty()) return 0.0;
    if (!held_.empty()) return held_.front().t;
    return std::nullopt;
}

}  // namespace sym
