// The receiving half of a UDP endpoint, rule for rule hosts/udp/receiver.py:
// buffers any step from the next one up to max_ahead ahead, acks with a
// SACK bitmap (at once on reordering, duplicates and completion, else every
// ack_every packets or after ack_delay_ms), hands every data packet's ECN
// mark to the notification point and sends the CNP it asks for.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "dcqcn.hpp"
#include "endpoint_io.hpp"
#include "packet.hpp"

namespace sym {

// The chunk size expected at a step; nullopt for a step that is not part of
// the run (the Python's recv_len returning None).  Called once a step.
using RecvLen = std::function<std::optional<int64_t>(int64_t step)>;

struct RecvFlow {
    RecvFlow(int64_t step, int64_t total, int64_t psize, bool keep);

    bool complete() const { return n_got == n; }
    bool got(int64_t i) const { return (mask[size_t(i >> 6)] >> (i & 63)) & 1; }

    int64_t step, total, n;
    std::vector<uint8_t> buf;       // the step's bytes (keep), else empty
    // the Python's `got` bytearray and `mask` integer in one bitset: bit i
    // is packet i received
    std::vector<uint64_t> mask;
    int64_t hi_got = -1;            // highest packet received (where the SACK ends)
    int64_t n_got = 0;
    int64_t cum = 0;
    int64_t pending = 0;            // packets not yet acknowledged
    double ack_due = TRANSPORT_INF;
    int64_t echo = -1;              // flags (transmission number) of the newest data packet
};

// Where the receiver's packets go: as SimTransport.ctrl frames them (from
// the data port to the predecessor's control port, no ECN codepoint).
struct ReceiverAddr {
    uint16_t job = 0, rank = 0;
    int64_t pred_rank = 0;
    uint32_t ip = 0, pred_ip = 0;
    uint16_t data_port = 0;
};

class Receiver {
public:
    Receiver(const ReceiverAddr& addr, const UdpParams& params, RecvLen recv_len, EndpointIo& io,
             std::shared_ptr<NotificationPoint> np, int64_t max_ahead, bool keep);

    bool done(int64_t step) const;
    // A complete step's bytes (empty without keep) and its length; steps in order
    std::vector<uint8_t> take(int64_t step, int64_t* total);
    void on_data(const Pkt& pkt, double now);
    void fire_timers(double now);
    double next_wakeup() const;

    RecvFlow* flow(int64_t step) const;
    const std::vector<std::unique_ptr<RecvFlow>>& flows() const { return flows_; }

    ReceiverAddr addr;
    UdpParams p;
    RecvLen recv_len;
    std::shared_ptr<NotificationPoint> np;
    uint64_t flow_key;              // the Python's (pred_ip, data_port)
    int64_t max_ahead;
    bool keep;
    int64_t low = 0;                // lowest step not yet taken by the ring
    int64_t newest = -1;            // newest step a valid data packet came with
    double last_data = -TRANSPORT_INF;   // time of the last valid data packet

private:
    void send_ack(RecvFlow& f);
    void send_ctrl(Kind kind, int64_t step, uint32_t cum, uint16_t flags, uint16_t echo,
                   std::shared_ptr<const std::vector<uint64_t>> sack, uint32_t sack_bytes);
    std::shared_ptr<const std::vector<uint64_t>> sack_of(const RecvFlow& f, uint32_t* nbytes) const;
    RecvFlow* open_flow(int64_t step);
    void accept(RecvFlow& f, const Pkt& pkt, double now);
    void count_valid(int64_t step);

    EndpointIo& io_;
    int64_t psize_;
    std::vector<std::unique_ptr<RecvFlow>> flows_;   // in the order opened, as the Python's dict
    double ack_delay_;
};

}  // namespace sym
