// hosts/udp/sender.py's Sender, rule for rule; the Python's comments and
// docs/hosts.md give each rule's reason, these only what the port adds.
#include "sender.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace sym {

SendFlow::SendFlow(int64_t step, Chunk chunk, int64_t total, int64_t psize)
    : step(step), chunk(std::move(chunk)), total(total),
      n(std::max<int64_t>(1, (total + psize - 1) / psize)),
      acked(n, 0), txseq(n, 0), txtime(n, 0.0), retries(n, 0), queued(n, 0) {}

bool SendFlow::pop_rtx_time(int64_t seq, double* sent) {
    auto it = std::lower_bound(rtx_time.begin(), rtx_time.end(), seq,
                               [](const std::pair<int64_t, double>& e, int64_t s) { return e.first < s; });
    if (it == rtx_time.end() || it->first != seq) return false;
    *sent = it->second;
    rtx_time.erase(it);
    return true;
}

Sender::Sender(const SenderAddr& addr, const UdpParams& params, EndpointIo& io,
               std::shared_ptr<RateControl> rp)
    : addr(addr), p(params), rp(std::move(rp)), io_(io), psize_(params.payload_bytes),
      rto_(params.rto_ms / 1000.0), ack_delay_(params.ack_delay_ms / 1000.0) {}

SendFlow* Sender::flow(int64_t step) const {
    for (const auto& f : flows_)
        if (f->step == step) return f.get();
    return nullptr;
}

void Sender::start(int64_t step, Chunk chunk, int64_t total, double now) {
    if (flow(step)) throw std::invalid_argument("step " + std::to_string(step) + " is already being sent");
    flows_.push_back(std::make_unique<SendFlow>(step, std::move(chunk), total, psize_));
    cur_step = step;
}

bool Sender::done(int64_t step) const {
    SendFlow* f = flow(step);
    return f && f->done;
}

bool Sender::sent_all(int64_t step) const {
    SendFlow* f = flow(step);
    return f && (f->done || f->next_new >= f->n);
}

void Sender::finish(int64_t step) {
    auto it = std::find_if(flows_.begin(), flows_.end(), [step](const auto& f) { return f->step == step; });
    if (it != flows_.end()) flows_.erase(it);
}

int64_t Sender::window() const { return peer_heard ? p.window_packets : 1; }

double Sender::cur_rto() const {
    if (!peer_heard) return p.rto_ms / 1000.0;
    // rto * (1 << backoff): a product with a power of two, exact, as ldexp
    return std::min(std::ldexp(rto_, backoff_), p.rto_max_ms / 1000.0);
}

double Sender::pto() const {
    double rtt = has_last_rtt_ ? last_rtt_ : rto_;
    return std::min(std::max(2 * rtt + ack_delay_, MIN_PTO_S), cur_rto());
}

void Sender::arm_probe(SendFlow& f, double now) {
    if (f.done || f.probed || f.next_new < f.n || !peer_heard)
        f.probe_at = TRANSPORT_INF;
    else
        f.probe_at = now + pto();
}

bool Sender::pick(Pick& out) {
    int64_t win = window();
    for (const auto& fp : flows_) {
        SendFlow& f = *fp;
        if (f.done) continue;
        while (!f.rtx.empty()) {
            auto [idx, why] = f.rtx.pop_front();
            f.queued[idx] = 0;
            if (!f.acked[idx]) {
                out = Pick{&f, idx, why};
                return true;
            }
        }
        if (f.next_new < f.n && f.next_new < f.cum + win) {
            out = Pick{&f, f.next_new++, Why::New};
            return true;
        }
    }
    return false;
}

bool Sender::sendable() const {
    int64_t win = window();
    for (const auto& fp : flows_) {
        const SendFlow& f = *fp;
        if (!f.done && (!f.rtx.empty() || (f.next_new < f.n && f.next_new < f.cum + win))) return true;
    }
    return false;
}

void Sender::push_timer(double deadline, int64_t seq, int64_t step, int64_t idx) {
    timers_.push(Timer{deadline, seq, step, idx});
}

int64_t Sender::transmit(SendFlow& f, int64_t idx, Why why, double now) {
    int64_t off = idx * psize_;
    int64_t length = std::min(psize_, f.total - off);
    ++seq_;
    Pkt pkt;
    pkt.src_ip = addr.ip;
    pkt.dst_ip = addr.succ_ip;
    pkt.sport = tag_port(f.step);
    pkt.dport = addr.data_port;
    pkt.tos = ECN_ECT0;
    pkt.len = static_cast<uint32_t>(length) + WIRE_OVERHEAD;
    pkt.kind = Kind::Data;
    pkt.job = addr.job;
    pkt.rank = addr.rank;
    pkt.step = static_cast<uint32_t>(f.step);
    pkt.offset = static_cast<uint32_t>(off);
    pkt.length = static_cast<uint32_t>(length);
    pkt.flags = static_cast<uint16_t>(seq_ & ECHO_MASK);
    pkt.set_chunk(f.chunk);
    io_.send(std::move(pkt));
    f.txseq[idx] = seq_;
    f.last_seq = seq_;
    f.txtime[idx] = now;
    f.sent_order.push_back({seq_, idx});
    if (why != Why::New) f.rtx_time.emplace_back(seq_, now);
    push_timer(now + cur_rto(), seq_, f.step, idx);
    arm_probe(f, now);
    io_.counters.add(Ctr::tx_data);
    if (why != Why::New) {
        io_.counters.add(why == Why::Timeout ? Ctr::retransmit_timeout
                         : why == Why::Gap   ? Ctr::retransmit_gap
                                             : Ctr::retransmit_probe);
        io_.record(LogKind::Retransmit, f.step, now, double(off), double(length), 0, why);
    }
    return length + WIRE_OVERHEAD;
}

void Sender::poll_tx(double now) {
    double rate = rp->rate_bps;     // read once a call, as the Python does
    bool has_held = has_held_;
    double held = held_;
    has_held_ = false;
    if (rate != 0 && now < next_tx_ && rate > gap_rate_) {
        // re-pacing: what is left of the wait goes at the new, higher rate
        next_tx_ = now + (next_tx_ - now) * gap_rate_ / rate;
        if (has_held) held = std::min(held, next_tx_);
        gap_rate_ = rate;
    }
    while (true) {
        if (rate != 0 && now < next_tx_) {
            if (sendable()) {
                has_held_ = true;
                held_ = next_tx_;
            }
            return;
        }
        Pick pk;
        if (!pick(pk)) return;
        if (has_held) {
            late_pacing.add(now - held);
            has_held = false;
        }
        int64_t nbytes = transmit(*pk.flow, pk.idx, pk.why, now);
        if (rp->on_bytes_sent(nbytes, now)) log_rate(now);
        if (rate != 0) {
            double gap = nbytes * 8.0 / rate;
            next_tx_ = std::max(next_tx_, now - double(p.burst_packets) * gap) + gap;
            gap_rate_ = rate;
        }
    }
}

void Sender::queue(SendFlow& f, int64_t idx, Why why) {
    // Karn: from here on the packet's ACK gives no RTT sample, whatever resent it
    ++f.retries[idx];
    f.queued[idx] = 1;
    f.rtx.push_back({idx, why});
}

void Sender::fire_timers(double now) {
    while (!timers_.empty() && timers_.top().deadline <= now) {
        Timer t = timers_.pop();
        SendFlow* f = flow(t.step);
        if (!f || f->done || f->acked[t.idx] || f->queued[t.idx] || f->txseq[t.idx] != t.seq) continue;
        double due = std::max(f->txtime[t.idx], f->progress_at) + cur_rto();
        if (now < due) {
            push_timer(due, t.seq, t.step, t.idx);
            continue;
        }
        if (now < rto_hold_) {
            push_timer(rto_hold_, t.seq, t.step, t.idx);
            continue;
        }
        queue(*f, t.idx, Why::Timeout);
        if (peer_heard && cur_rto() < p.rto_max_ms / 1000.0) ++backoff_;
        rto_hold_ = now + cur_rto();
    }
    for (const auto& fp : flows_)
        if (fp->probe_at <= now) probe(*fp);
    if (rp_due(now) && rp->advance(now)) log_rate(now);
}

bool Sender::rp_due(double now) {
    double due = rp->next_event_time();
    if (due > now) return false;
    late_timer.add(now - due);
    return true;
}

void Sender::probe(SendFlow& f) {
    f.probe_at = TRANSPORT_INF;
    if (f.done || !f.rtx.empty()) return;
    for (int64_t i = f.next_new - 1; i > f.cum - 1; --i) {
        if (!f.acked[i]) {
            f.probed = true;
            queue(f, i, Why::Probe);
            return;
        }
    }
}

void Sender::mark(SendFlow& f, int64_t i, double now, Sample& sample) {
    f.acked[i] = 1;
    ++f.n_acked;
    int64_t seq = f.txseq[i];
    if (f.retries[i] == 0) {
        if (seq > f.hi_seq) f.hi_seq = seq;
        if (seq > sample.seq) {
            sample.seq = seq;
            sample.rtt = now - f.txtime[i];
        }
    }
}

void Sender::mark_sack(SendFlow& f, int64_t base, const std::vector<uint64_t>& sack, double now,
                       Sample& sample) {
    // bits from the lowest up, as the Python's sack & -sack; the first past
    // the flow's end ends it (all later ones are further past)
    for (size_t w = 0; w < sack.size(); ++w) {
        uint64_t x = sack[w];
        while (x) {
            int64_t i = base + int64_t(w) * 64 + __builtin_ctzll(x);
            if (i >= f.n) return;
            if (!f.acked[i]) mark(f, i, now, sample);
            x &= x - 1;
        }
    }
}

void Sender::on_ack(const Pkt& ack, double now) {
    SendFlow* fp = flow(ack.step);
    Counters& c = io_.counters;
    if (!fp || fp->done) {
        c.add(Ctr::stale_ack);
        return;
    }
    SendFlow& f = *fp;
    int64_t upto;
    bool use_sack = false;
    if (ack.flags & ACK_COMPLETE) {
        upto = f.n;
    } else {
        int64_t cum = ack.cum;
        if (cum > f.total || (cum % psize_ && cum != f.total)) {
            c.add(Ctr::drop_bad_ack);
            return;
        }
        upto = (cum + psize_ - 1) / psize_;
        use_sack = ack.sack() != nullptr;
    }
    c.add(Ctr::rx_ack);
    peer_heard = true;
    Sample sample;
    bool has_echo_sample = false;
    Sample echo_sample;
    if (ack.flags & ACK_ECHO) {
        // two's complement & as the Python's on its unbounded ints
        int64_t echoed = seq_ - ((seq_ - int64_t(ack.echo)) & ECHO_MASK);
        if (f.hi_seq < echoed && echoed <= f.last_seq) f.hi_seq = echoed;
        double sent;
        if (f.pop_rtx_time(echoed, &sent)) {
            has_echo_sample = true;
            echo_sample = Sample{echoed, now - sent};
        }
    }
    int64_t n_before = f.n_acked;
    for (int64_t i = f.cum; i < upto; ++i)
        if (!f.acked[i]) mark(f, i, now, sample);
    if (use_sack) mark_sack(f, upto + 1, *ack.sack(), now, sample);
    int64_t cum = std::max(f.cum, upto);
    while (cum < f.n && f.acked[cum]) ++cum;
    f.cum = cum;
    if (has_echo_sample && echo_sample.seq > sample.seq) sample = echo_sample;
    if (sample.seq) rtt_sample(sample.rtt);
    if (f.n_acked > n_before) {
        rto_hold_ = now;
        f.probed = false;
        f.progress_at = now;
    }
    if (f.n_acked == f.n) {
        f.done = true;
        f.rtx.clear();
        f.probe_at = TRANSPORT_INF;
        return;
    }
    gap_rule(f);
    if (f.n_acked > n_before) arm_probe(f, now);
}

void Sender::gap_rule(SendFlow& f) {
    // the Python's scan of the window, in index order, queues each live
    // packet with hi - txseq >= DUPTHRESH, or > 0 at the tail: those are
    // the live transmissions of sent_order up to a txseq threshold
    const int64_t hi = f.hi_seq;
    const int64_t upto = hi >= f.last_seq ? hi - 1 : hi - DUPTHRESH;
    gap_due_.clear();
    while (!f.sent_order.empty() && f.sent_order.front().first <= upto) {
        auto [seq, i] = f.sent_order.pop_front();
        if (!f.acked[i] && !f.queued[i] && f.txseq[i] == seq) gap_due_.push_back(i);
    }
    std::sort(gap_due_.begin(), gap_due_.end());
    for (int64_t i : gap_due_) queue(f, i, Why::Gap);
}

void Sender::rtt_sample(double rtt) {
    if (!has_srtt_) {
        has_srtt_ = true;
        srtt_ = rtt;
        rttvar_ = rtt / 2;
    } else {
        rttvar_ = 0.75 * rttvar_ + 0.25 * std::abs(srtt_ - rtt);
        srtt_ = 0.875 * srtt_ + 0.125 * rtt;
    }
    rto_ = std::min(std::max(p.rto_ms / 1000.0, srtt_ + 4 * rttvar_), p.rto_max_ms / 1000.0);
    has_last_rtt_ = true;
    last_rtt_ = rtt;
    backoff_ = 0;
    // round() of the Python: to the nearest integer, ties to even
    Counters& c = io_.counters;
    int64_t us = static_cast<int64_t>(std::nearbyint(rtt * 1e6));
    c.add(Ctr::rtt_samples);
    c.add(Ctr::rtt_sum_us, us);
    c.set(Ctr::rtt_min_us, c.get(Ctr::rtt_samples) == 1 ? us : std::min(c.get(Ctr::rtt_min_us), us));
    c.set(Ctr::rtt_srtt_us, static_cast<int64_t>(std::nearbyint(srtt_ * 1e6)));
}

void Sender::on_cnp(const Pkt& cnp, double now) {
    io_.counters.add(Ctr::rx_cnp);
    io_.record(LogKind::CnpRx, cnp.step, now, double(addr.succ_rank));
    rp_due(now);                    // a timer event the CNP's call runs first
    if (rp->on_cnp(now)) log_rate(now);
}

void Sender::log_rate(double now) {
    io_.record(LogKind::Rate, cur_step, now, rp->rate_bps, rp->target_bps, rp->alpha);
}

double Sender::next_wakeup(double now) const {
    double t = timers_.empty() ? TRANSPORT_INF : timers_.top().deadline;
    for (const auto& f : flows_)
        if (f->probe_at < t) t = f->probe_at;
    if (sendable()) t = std::min(t, rp->rate_bps != 0 ? next_tx_ : now);
    return std::min(t, rp->next_event_time());
}

}  // namespace sym
