// One rank's end of its two ring flows, hosts/udp/endpoint.py's Endpoint:
// a Sender (to the successor) and a Receiver (from the predecessor) sharing
// counters, log and the packet hook, with the Python's time interface.
// Packets come and go as sym::Pkt descriptors, so the Python's parse step
// (and its WireError counters) has nothing to check: the engine made them.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dcqcn.hpp"
#include "endpoint_io.hpp"
#include "packet.hpp"
#include "receiver.hpp"
#include "sender.hpp"

namespace sym {

struct EndpointConfig {
    uint16_t job = 0, rank = 0;
    int64_t pred_rank = 0, succ_rank = 0;
    uint32_t pred_ip = 0, succ_ip = 0;
    uint32_t ip = 0;                // this host's address: the source of its frames
    uint16_t data_port = 0;         // the control port is data_port + 1
    UdpParams params;
    int64_t max_ahead = 64;
    bool keep = true;
};

// Endpoint.waiting_on's dict
struct WaitingOn {
    bool for_data;                  // "waiting_for": "data", else "send"
    int64_t peer;
    std::string peer_ip;
    int64_t step;
    std::string what;
};

std::string dotted_quad(uint32_t ip);

class Endpoint {
public:
    // rp null: FixedRate(None), np null: NotificationPoint(None), as the Python's defaults
    Endpoint(const EndpointConfig& cfg, RecvLen recv_len, std::shared_ptr<RateControl> rp = nullptr,
             std::shared_ptr<NotificationPoint> np = nullptr);
    Endpoint(const Endpoint&) = delete;
    Endpoint& operator=(const Endpoint&) = delete;

    // the ring's side
    void start_send(int64_t step, Chunk chunk, int64_t total, double now) {
        sender.start(step, std::move(chunk), total, now);
    }
    bool send_done(int64_t step) const { return sender.done(step); }
    bool sent_all(int64_t step) const { return sender.sent_all(step); }
    void finish_send(int64_t step) { sender.finish(step); }
    bool step_complete(int64_t step) const { return sender.sent_all(step) && receiver.done(step); }
    std::vector<int64_t> reap();
    double quiet_at(double since, double idle_s) const;
    bool recv_done(int64_t step) const { return receiver.done(step); }
    std::vector<uint8_t> take(int64_t step, int64_t* total) { return receiver.take(step, total); }
    double last_data() const { return receiver.last_data; }

    // packets off the wire, for the data port and the control port
    void on_data(const Pkt& pkt, double now);
    void on_ctrl(const Pkt& pkt, double now);

    // time
    void service(double now);
    double next_wakeup(double now) const { return std::min(sender.next_wakeup(now), receiver.next_wakeup()); }
    WaitingOn waiting_on(int64_t step) const;

    EndpointConfig cfg;
    EndpointIo io;                  // before sender and receiver: they hold references to it
    Sender sender;
    Receiver receiver;
};

}  // namespace sym
