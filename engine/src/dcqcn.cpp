// hosts/dcqcn_core.py's ReactionPoint and NotificationPoint, rule for rule
// (the Python's comments give the reasons; here only what the port adds).
#include "dcqcn.hpp"

#include <algorithm>
#include <cmath>

namespace sym {

ReactionPoint::ReactionPoint(const DcqcnParams& p, double now) : params(p), now_(now) {
    rate_bps = p.line_rate_bps;
    target_bps = p.line_rate_bps;
    alpha = 1.0;
    rep_rc_ = rate_bps;
    rep_rt_ = target_bps;
    rep_alpha_ = alpha;
}

bool ReactionPoint::on_cnp(double now) {
    run_timers(now);
    ++cnps;
    alpha_cnp_ = true;
    decrease_cnp_ = true;
    if (first_cnp_) {
        first_cnp_ = false;
        alpha = 1.0;
        alpha_cnp_ = false;
        t_alpha_ = now + params.alpha_period_s;
        t_dec_ = now + params.decrease_period_s;
        rate_bps = target_bps = params.rate_on_first_cnp * rate_bps;
    }
    return report();
}

bool ReactionPoint::advance(double now) {
    run_timers(now);
    return report();
}

bool ReactionPoint::on_bytes_sent(int64_t n, double now) {
    run_timers(now);
    const auto& bc = params.byte_counter_bytes;
    if (bc && t_inc_ < DCQCN_INF) {      // counting starts at the first decrease
        bytes_ += n;
        while (bytes_ >= *bc) {
            bytes_ -= *bc;
            increase(false);
        }
    }
    return report();
}

double ReactionPoint::next_event_time() const {
    if (decrease_cnp_ || alpha_cnp_ || !converged())
        return std::min({t_alpha_, t_dec_, t_inc_});
    if (std::max(rep_alpha_, std::abs(alpha - rep_alpha_)) >= ALPHA_REPORT_STEP) return t_alpha_;
    return DCQCN_INF;
}

bool ReactionPoint::converged() const {
    double line = params.line_rate_bps;
    return rate_bps == line && target_bps == line;
}

void ReactionPoint::run_timers(double now) {
    if (now < now_) {
        ++late_calls;
        now = now_;
    }
    now_ = now;
    const DcqcnParams& p = params;
    while (alpha_cnp_ || decrease_cnp_) {
        double t = std::min({t_alpha_, t_dec_, t_inc_});
        if (t > now) return;
        if (t_alpha_ == t) {
            alpha_timer();
        } else if (t_dec_ == t) {
            decrease_timer();
        } else {
            t_inc_ += p.increase_period_s;
            increase(true);
        }
    }
    // k as the Python's int: floor() of a double, then used as a double
    // exponent and factor exactly as float ** int and int * float are
    if (t_alpha_ <= now) {
        double k = std::floor((now - t_alpha_) / p.alpha_period_s) + 1;
        alpha *= std::pow(1 - p.g, k);
        t_alpha_ += k * p.alpha_period_s;
    }
    if (t_dec_ <= now) {
        double k = std::floor((now - t_dec_) / p.decrease_period_s) + 1;
        t_dec_ += k * p.decrease_period_s;
    }
    while (t_inc_ <= now && !converged()) {
        t_inc_ += p.increase_period_s;
        increase(true);
    }
    if (t_inc_ <= now) {
        double k = std::floor((now - t_inc_) / p.increase_period_s) + 1;
        stage_ += static_cast<int64_t>(k);
        increases += static_cast<int64_t>(k);
        t_inc_ += k * p.increase_period_s;
    }
}

void ReactionPoint::alpha_timer() {
    double g = params.g;
    alpha = (1 - g) * alpha + (alpha_cnp_ ? g : 0.0);
    alpha_cnp_ = false;
    t_alpha_ += params.alpha_period_s;
}

void ReactionPoint::decrease_timer() {
    const DcqcnParams& p = params;
    double t = t_dec_;
    t_dec_ += p.decrease_period_s;
    if (!decrease_cnp_) return;
    decrease_cnp_ = false;
    if (p.clamp_target_rate || stage_ || byte_stage_) target_bps = rate_bps;
    rate_bps = std::max(p.min_rate_bps, rate_bps * (1 - alpha / 2));
    stage_ = byte_stage_ = bytes_ = 0;
    t_inc_ = t + p.increase_period_s;
    ++decreases;
}

void ReactionPoint::increase(bool by_timer) {
    const DcqcnParams& p = params;
    int64_t f = p.fast_recovery_steps;
    int64_t low = stage_, high = stage_;
    if (p.byte_counter_bytes) {
        low = std::min(stage_, byte_stage_);
        high = std::max(stage_, byte_stage_);
    }
    if (high < f) {
        // fast recovery
    } else if (low > f) {
        target_bps = std::min(p.line_rate_bps, target_bps + p.r_hai_bps);
    } else {
        target_bps = std::min(p.line_rate_bps, target_bps + p.r_ai_bps);
    }
    rate_bps = (rate_bps + target_bps) / 2;
    if (std::abs(target_bps - rate_bps) < RATE_EPSILON_BPS) rate_bps = target_bps;
    if (by_timer)
        ++stage_;
    else
        ++byte_stage_;
    ++increases;
}

bool ReactionPoint::report() {
    if (rate_bps != rep_rc_ || target_bps != rep_rt_ || std::abs(alpha - rep_alpha_) >= ALPHA_REPORT_STEP
        || (alpha != rep_alpha_ && (alpha == 0.0 || alpha == 1.0))) {
        rep_rc_ = rate_bps;
        rep_rt_ = target_bps;
        rep_alpha_ = alpha;
        return true;
    }
    return false;
}

NotificationPoint::Flow& NotificationPoint::flow(uint64_t key) {
    for (Flow& f : flows)
        if (f.key == key) return f;
    flows.push_back(Flow{key});
    return flows.back();
}

bool NotificationPoint::on_data(uint64_t flow_key, bool ce, double now) {
    Flow& f = flow(flow_key);
    ++f.packets;
    if (!ce) return false;
    ++f.ce_packets;
    if (!cnp_interval_s) return false;
    if (f.has_last && now - f.last_cnp < *cnp_interval_s) return false;
    f.has_last = true;
    f.last_cnp = now;
    ++f.cnps;
    return true;
}

}  // namespace sym
