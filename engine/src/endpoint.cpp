// hosts/udp/endpoint.py's Endpoint over descriptors.
#include "endpoint.hpp"

#include <algorithm>

namespace sym {

const char* const COUNTER_NAMES[N_COUNTERS] = {
    "tx_data", "rx_data", "tx_ack", "rx_ack", "tx_cnp", "rx_cnp", "rx_ce", "dup_data", "stale_ack", "rx_older_step",
    "retransmit_timeout", "retransmit_gap", "retransmit_probe",
    "drop_bad_magic", "drop_job", "drop_peer", "drop_tag", "drop_step", "drop_offset", "drop_bad_ack",
    "drop_misdirected",
    "rtt_samples", "rtt_sum_us", "rtt_min_us", "rtt_srtt_us",
};
const char* const WHY_NAMES[4] = {"", "timeout", "gap", "probe"};

std::string dotted_quad(uint32_t ip) {
    return std::to_string(ip >> 24) + "." + std::to_string((ip >> 16) & 255) + "." +
           std::to_string((ip >> 8) & 255) + "." + std::to_string(ip & 255);
}

namespace {

SenderAddr sender_addr(const EndpointConfig& c) {
    SenderAddr a;
    a.job = c.job;
    a.rank = c.rank;
    a.succ_rank = c.succ_rank;
    a.ip = c.ip;
    a.succ_ip = c.succ_ip;
    a.data_port = c.data_port;
    return a;
}

ReceiverAddr receiver_addr(const EndpointConfig& c) {
    ReceiverAddr a;
    a.job = c.job;
    a.rank = c.rank;
    a.pred_rank = c.pred_rank;
    a.ip = c.ip;
    a.pred_ip = c.pred_ip;
    a.data_port = c.data_port;
    return a;
}

}  // namespace

Endpoint::Endpoint(const EndpointConfig& cfg, RecvLen recv_len, std::shared_ptr<RateControl> rp,
                   std::shared_ptr<NotificationPoint> np)
    : cfg(cfg),
      sender(sender_addr(cfg), cfg.params, io, rp ? std::move(rp) : std::make_shared<FixedRate>(0.0)),
      receiver(receiver_addr(cfg), cfg.params, std::move(recv_len), io,
               np ? std::move(np) : std::make_shared<NotificationPoint>(std::nullopt), cfg.max_ahead,
               cfg.keep) {}

std::vector<int64_t> Endpoint::reap() {
    std::vector<int64_t> done;
    for (const auto& f : sender.flows())
        if (f->done) done.push_back(f->step);
    for (int64_t step : done) sender.finish(step);
    return done;
}

double Endpoint::quiet_at(double since, double idle_s) const {
    double t = std::max(receiver.last_data, since) + idle_s;
    bool pending = false;
    double latest = since;          // max(pending + [since])
    for (const auto& f : sender.flows()) {
        if (f->done) continue;
        pending = true;
        latest = std::max(latest, f->progress_at);
    }
    return pending ? std::max(t, latest + idle_s) : t;
}

void Endpoint::on_data(const Pkt& pkt, double now) {
    // not an agent's packet: the Python's parse finds no magic there
    if (pkt.kind == Kind::Other)
        io.counters.add(Ctr::drop_bad_magic);
    else if (pkt.kind != Kind::Data)
        io.counters.add(Ctr::drop_misdirected);
    else
        receiver.on_data(pkt, now);
}

void Endpoint::on_ctrl(const Pkt& pkt, double now) {
    Counters& c = io.counters;
    if (pkt.kind == Kind::Other)
        c.add(Ctr::drop_bad_magic);
    else if (pkt.kind == Kind::Data)
        c.add(Ctr::drop_misdirected);
    else if (pkt.job != cfg.job)
        c.add(Ctr::drop_job);
    else if (pkt.src_ip != cfg.succ_ip || pkt.rank != cfg.succ_rank)
        c.add(Ctr::drop_peer);
    else if (pkt.kind == Kind::Ack)
        sender.on_ack(pkt, now);
    else
        sender.on_cnp(pkt, now);
}

void Endpoint::service(double now) {
    sender.fire_timers(now);
    receiver.fire_timers(now);
    sender.poll_tx(now);
}

WaitingOn Endpoint::waiting_on(int64_t step) const {
    RecvFlow* rf = receiver.flow(step);
    if (!rf || !rf->complete()) {
        std::string got = rf ? std::to_string(rf->n_got) + "/" + std::to_string(rf->n) + " packets" : "no packet";
        std::string ip = dotted_quad(cfg.pred_ip);
        return {true, cfg.pred_rank, ip, step,
                "data of step " + std::to_string(step) + " from rank " + std::to_string(cfg.pred_rank) + " (" +
                    ip + "): " + got + " received"};
    }
    SendFlow* sf = sender.flow(step);
    std::string sent = sf ? std::to_string(sf->next_new) + "/" + std::to_string(sf->n) + " packets sent, " +
                                std::to_string(sf->n_acked) + " acknowledged"
                          : "nothing sent";
    std::string ip = dotted_quad(cfg.succ_ip);
    return {false, cfg.succ_rank, ip, step,
            "sending step " + std::to_string(step) + " to rank " + std::to_string(cfg.succ_rank) + " (" + ip +
                "): " + sent};
}

}  // namespace sym
