// hosts/udp/receiver.py's Receiver, rule for rule; the Python's comments
// give each rule's reason, these only what the port adds.
#include "receiver.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

#include "endpoint_errors.hpp"

namespace sym {

RecvFlow::RecvFlow(int64_t step, int64_t total, int64_t psize, bool keep)
    : step(step), total(total), n(std::max<int64_t>(1, (total + psize - 1) / psize)),
      buf(keep ? size_t(total) : 0, 0), mask(size_t((n + 63) / 64), 0) {}

Receiver::Receiver(const ReceiverAddr& addr, const UdpParams& params, RecvLen recv_len, EndpointIo& io,
                   std::shared_ptr<NotificationPoint> np, int64_t max_ahead, bool keep)
    : addr(addr), p(params), recv_len(std::move(recv_len)), np(std::move(np)),
      flow_key((uint64_t(addr.pred_ip) << 16) | addr.data_port), max_ahead(max_ahead), keep(keep),
      io_(io), psize_(params.payload_bytes), ack_delay_(params.ack_delay_ms / 1000.0) {}

RecvFlow* Receiver::flow(int64_t step) const {
    for (const auto& f : flows_)
        if (f->step == step) return f.get();
    return nullptr;
}

bool Receiver::done(int64_t step) const {
    RecvFlow* f = flow(step);
    return f && f->complete();
}

std::vector<uint8_t> Receiver::take(int64_t step, int64_t* total) {
    if (step != low)
        throw std::invalid_argument("take(" + std::to_string(step) + ") out of order: next is " +
                                    std::to_string(low));
    auto it = std::find_if(flows_.begin(), flows_.end(), [step](const auto& f) { return f->step == step; });
    if (it == flows_.end()) throw MissingStep(std::to_string(step));
    // popped before the check, as the Python's flows.pop(step) is
    std::unique_ptr<RecvFlow> f = std::move(*it);
    flows_.erase(it);
    if (!f->complete()) throw std::invalid_argument("step " + std::to_string(step) + " is not complete");
    low = step + 1;
    *total = f->total;
    return std::move(f->buf);
}

std::shared_ptr<const std::vector<uint64_t>> Receiver::sack_of(const RecvFlow& f, uint32_t* nbytes) const {
    // (mask >> (cum + 1)) & SACK_MASK: packets cum+1 .. cum+MAX_SACK_BITS,
    // as many bits as the highest one received among them needs
    *nbytes = 0;
    int64_t base = f.cum + 1;
    int64_t top = std::min(f.hi_got, f.cum + MAX_SACK_BITS);
    while (top >= base && !f.got(top)) --top;
    if (top < base) return nullptr;
    int64_t nbits = top - base + 1;
    size_t nwords = size_t((nbits + 63) / 64);
    auto sack = std::make_shared<std::vector<uint64_t>>(nwords, 0);
    const auto& m = f.mask;
    for (size_t w = 0; w < nwords; ++w) {
        int64_t pos = base + int64_t(w) * 64;
        size_t i = size_t(pos >> 6);
        unsigned s = unsigned(pos & 63);
        uint64_t x = m[i] >> s;
        if (s && i + 1 < m.size()) x |= m[i + 1] << (64 - s);
        (*sack)[w] = x;
    }
    unsigned last = unsigned(nbits - int64_t(nwords - 1) * 64);   // bits used in the last word
    if (last < 64) sack->back() &= (uint64_t(1) << last) - 1;
    *nbytes = uint32_t((nbits + 7) / 8);
    return sack;
}

void Receiver::send_ctrl(Kind kind, int64_t step, uint32_t cum, uint16_t flags, uint16_t echo,
                         std::shared_ptr<const std::vector<uint64_t>> sack, uint32_t sack_bytes) {
    Pkt pkt;
    pkt.src_ip = addr.ip;
    pkt.dst_ip = addr.pred_ip;
    pkt.sport = addr.data_port;
    pkt.dport = uint16_t(addr.data_port + 1);    // the control port
    pkt.tos = 0;
    pkt.kind = kind;
    pkt.job = addr.job;
    pkt.rank = addr.rank;
    pkt.step = uint32_t(step);
    if (kind == Kind::Ack) {
        pkt.len = HEADERS + WIRE_ACK_HEADER + sack_bytes;
        pkt.cum = cum;
        pkt.flags = flags;
        pkt.echo = echo;
        pkt.set_sack(std::move(sack));
    } else {
        pkt.len = HEADERS + WIRE_CNP;
    }
    io_.send(std::move(pkt));
}

void Receiver::send_ack(RecvFlow& f) {
    uint32_t cum_bytes = uint32_t(std::min(f.cum * psize_, f.total));
    uint32_t nbytes;
    auto sack = sack_of(f, &nbytes);
    uint16_t flags = f.complete() ? ACK_COMPLETE : 0;
    uint16_t echo = 0;
    if (f.echo >= 0) {
        flags |= ACK_ECHO;
        echo = uint16_t(f.echo);
    }
    send_ctrl(Kind::Ack, f.step, cum_bytes, flags, echo, std::move(sack), nbytes);
    io_.counters.add(Ctr::tx_ack);
    f.pending = 0;
    f.ack_due = TRANSPORT_INF;
}

RecvFlow* Receiver::open_flow(int64_t step) {
    std::optional<int64_t> total;
    if (step < low + max_ahead) total = recv_len(step);
    if (!total) return nullptr;
    flows_.push_back(std::make_unique<RecvFlow>(step, *total, psize_, keep));
    return flows_.back().get();
}

void Receiver::on_data(const Pkt& pkt, double now) {
    Counters& c = io_.counters;
    if (pkt.job != addr.job) {
        c.add(Ctr::drop_job);
        return;
    }
    if (pkt.src_ip != addr.pred_ip || pkt.rank != addr.pred_rank) {
        c.add(Ctr::drop_peer);
        return;
    }
    int64_t step = pkt.step;
    if (port_tag(pkt.sport) != int32_t(step & TAG_MASK)) {
        c.add(Ctr::drop_tag);
        return;
    }
    if (step < low) {
        // taken already: the sender missed our last ACK
        count_valid(step);
        c.add(Ctr::dup_data);
        last_data = now;
        send_ctrl(Kind::Ack, step, 0, ACK_COMPLETE, 0, nullptr, 0);
        c.add(Ctr::tx_ack);
        return;
    }
    RecvFlow* f = flow(step);
    if (!f && !(f = open_flow(step))) {
        c.add(Ctr::drop_step);
        return;
    }
    int64_t off = pkt.offset, length = pkt.length;
    if (off % psize_ || off >= f->total || length != std::min(psize_, f->total - off)) {
        c.add(Ctr::drop_offset);
        return;
    }
    accept(*f, pkt, now);
}

// hosts/udp/receiver.py's _count_valid: rx_data, and rx_older_step for a
// packet behind one of a newer step (ECMP's reordering, late retransmissions)
void Receiver::count_valid(int64_t step) {
    io_.counters.add(Ctr::rx_data);
    if (step < newest)
        io_.counters.add(Ctr::rx_older_step);
    else
        newest = step;
}

void Receiver::accept(RecvFlow& f, const Pkt& pkt, double now) {
    Counters& c = io_.counters;
    count_valid(f.step);
    last_data = now;
    f.echo = pkt.flags;
    bool ce = (pkt.tos & 3) == ECN_CE;
    if (ce) c.add(Ctr::rx_ce);
    if (np->on_data(flow_key, ce, now)) {
        send_ctrl(Kind::Cnp, f.step, 0, 0, 0, nullptr, 0);
        c.add(Ctr::tx_cnp);
        io_.record(LogKind::CnpTx, f.step, now, double(addr.pred_rank));
    }
    int64_t off = pkt.offset, length = pkt.length;
    int64_t idx = off / psize_;
    if (f.got(idx)) {
        c.add(Ctr::dup_data);
        send_ack(f);
        return;
    }
    // the descriptor carries the step's whole chunk: this packet's bytes
    // are its [offset, offset + length)
    const auto* chunk = pkt.chunk();
    if (keep && chunk && chunk->size() >= size_t(off + length))
        std::memcpy(f.buf.data() + off, chunk->data() + off, size_t(length));
    f.mask[size_t(idx >> 6)] |= uint64_t(1) << (idx & 63);
    if (idx > f.hi_got) f.hi_got = idx;
    ++f.n_got;
    bool in_order = idx == f.cum;
    if (in_order) {
        int64_t cum = f.cum + 1;
        while (cum < f.n && f.got(cum)) ++cum;
        f.cum = cum;
    }
    ++f.pending;
    if (!in_order || f.n_got == f.n || f.pending >= p.ack_every)
        send_ack(f);
    else if (f.ack_due == TRANSPORT_INF)
        f.ack_due = now + ack_delay_;
}

void Receiver::fire_timers(double now) {
    for (const auto& f : flows_)
        if (f->ack_due <= now) send_ack(*f);
}

double Receiver::next_wakeup() const {
    double t = TRANSPORT_INF;
    for (const auto& f : flows_) t = std::min(t, f->ack_due);
    return t;
}

}  // namespace sym
