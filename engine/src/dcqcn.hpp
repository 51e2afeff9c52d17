// DCQCN as pure state machines, rule for rule hosts/dcqcn_core.py: the
// reaction point (the sender's rate), the notification point (the
// receiver's CNP pacing) and FixedRate (DCQCN off).  Time is double
// seconds passed in, rates bit/s, and every expression is computed in the
// Python's order so the two give the same doubles.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

namespace sym {

// hosts/dcqcn_core.py INF (named apart from loop.hpp's INF so both headers
// can meet in one translation unit)
constexpr double DCQCN_INF = std::numeric_limits<double>::infinity();
constexpr double ALPHA_REPORT_STEP = 0.01;
constexpr double RATE_EPSILON_BPS = 1.0;

// hosts/dcqcn_core.py DcqcnParams; checked there, so not again here (the
// Python face builds this from the checked dataclass's fields)
struct DcqcnParams {
    double line_rate_bps = 0, min_rate_bps = 0, g = 0, rate_on_first_cnp = 0;
    double alpha_period_s = 0, decrease_period_s = 0, increase_period_s = 0;
    std::optional<int64_t> byte_counter_bytes;   // nullopt: no byte counter
    int64_t fast_recovery_steps = 0;             // F
    double r_ai_bps = 0, r_hai_bps = 0, cnp_interval_s = 0;
    bool clamp_target_rate = false;
};

// What the sender asks of its rate control: ReactionPoint and FixedRate
// share the Python's duck-typed interface.  rate_bps 0 stands for
// FixedRate(None): the Python tests `if rate`, which None and 0 fail alike.
class RateControl {
public:
    double rate_bps = 0, target_bps = 0, alpha = 0;
    virtual ~RateControl() = default;
    virtual bool on_cnp(double now) = 0;
    virtual bool advance(double now) = 0;
    virtual bool on_bytes_sent(int64_t n, double now) = 0;
    virtual double next_event_time() const = 0;
};

class FixedRate final : public RateControl {
public:
    explicit FixedRate(double rate) { rate_bps = target_bps = rate; }
    bool on_cnp(double) override { return false; }
    bool advance(double) override { return false; }
    bool on_bytes_sent(int64_t, double) override { return false; }
    double next_event_time() const override { return DCQCN_INF; }
};

class ReactionPoint final : public RateControl {
public:
    ReactionPoint(const DcqcnParams& params, double now);

    bool on_cnp(double now) override;
    bool advance(double now) override;
    bool on_bytes_sent(int64_t n, double now) override;
    double next_event_time() const override;

    DcqcnParams params;
    int64_t cnps = 0, decreases = 0, increases = 0;
    int64_t late_calls = 0;      // calls with a time before an earlier call's

private:
    bool converged() const;
    void run_timers(double now);
    void alpha_timer();
    void decrease_timer();
    void increase(bool by_timer);
    bool report();

    bool first_cnp_ = true, alpha_cnp_ = false, decrease_cnp_ = false;
    double t_alpha_ = DCQCN_INF, t_dec_ = DCQCN_INF, t_inc_ = DCQCN_INF;
    int64_t stage_ = 0;          // timer events since the last decrease
    int64_t byte_stage_ = 0;     // byte-counter events since the last decrease
    int64_t bytes_ = 0;
    double now_;
    double rep_rc_, rep_rt_, rep_alpha_;   // the Python's _reported triple
};

// hosts/dcqcn_core.py NotificationPoint.  Flows are keyed by a 64-bit key
// (the endpoint uses pred_ip << 16 | data_port, the Python's (ip, port)
// tuple); a receiver has one flow, so a short vector searched in order
// beats a hash map.
class NotificationPoint {
public:
    explicit NotificationPoint(std::optional<double> cnp_interval_s) : cnp_interval_s(cnp_interval_s) {}

    bool on_data(uint64_t flow_key, bool ce, double now);

    struct Flow {
        uint64_t key;
        int64_t packets = 0, ce_packets = 0, cnps = 0;
        bool has_last = false;   // the Python's _last_cnp holds the key
        double last_cnp = 0;
    };
    std::optional<double> cnp_interval_s;   // nullopt: DCQCN off, count only
    std::vector<Flow> flows;                // in the order first seen

private:
    Flow& flow(uint64_t key);
};

}  // namespace sym
