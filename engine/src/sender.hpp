// The sending half of a UDP endpoint, rule for rule hosts/udp/sender.py:
// packets of payload_bytes inside a window, paced at the rate control's
// rate (with re-pacing when it rose), RFC 6298 RTO with back-off restarted
// on progress, the RACK-like gap rule, the tail loss probe, SACK.
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "dcqcn.hpp"
#include "endpoint_io.hpp"
#include "lateness.hpp"
#include "packet.hpp"
#include "ring.hpp"
#include "sorted_run.hpp"

namespace sym {

constexpr int64_t DUPTHRESH = 3;
constexpr int64_t ECHO_MASK = 0xFFFF;
constexpr double MIN_PTO_S = 0.002;

using Chunk = std::shared_ptr<const std::vector<uint8_t>>;

// The Python's deque of (index, why): a ring, so a queued retransmission
// costs no allocation once it has grown.
using RtxQueue = Ring<std::pair<int64_t, Why>>;

struct SendFlow {
    SendFlow(int64_t step, Chunk chunk, int64_t total, int64_t psize);

    int64_t step;
    Chunk chunk;                    // null: a run without data (length only)
    int64_t total, n;
    std::vector<uint8_t> acked;
    int64_t n_acked = 0;
    int64_t cum = 0;                // packets [0, cum) are acked
    int64_t next_new = 0;           // first packet never sent
    std::vector<int64_t> txseq;     // transmission number of the last send
    std::vector<double> txtime;
    std::vector<int32_t> retries;
    std::vector<uint8_t> queued;
    RtxQueue rtx;
    int64_t hi_seq = 0;             // newest transmission number known to have arrived
    int64_t last_seq = 0;           // newest transmission number of this flow
    // the Python's dict transmission number -> time sent of retransmissions;
    // numbers only grow, so a vector kept in order and searched by halves
    std::vector<std::pair<int64_t, double>> rtx_time;
    double probe_at = TRANSPORT_INF;
    bool probed = false;
    double progress_at = -TRANSPORT_INF;
    bool done = false;
    // (txseq, index) of each transmission in the order sent, so by txseq: the
    // gap rule's candidates are the live ones at the front (not acked, not
    // queued, not sent again since), and it reads only those a step of hi_seq
    // brings under its threshold instead of the whole window on every ACK
    Ring<std::pair<int64_t, int64_t>> sent_order;

    bool pop_rtx_time(int64_t seq, double* sent);
};

// Where the sender's packets go: the frame's addresses, as SimTransport.data
// frames them (from tag_port(step) to the successor's data port, ECT(0)).
struct SenderAddr {
    uint16_t job = 0, rank = 0;
    int64_t succ_rank = 0;
    uint32_t ip = 0, succ_ip = 0;
    uint16_t data_port = 0;
};

class Sender {
public:
    Sender(const SenderAddr& addr, const UdpParams& params, EndpointIo& io,
           std::shared_ptr<RateControl> rp);

    void start(int64_t step, Chunk chunk, int64_t total, double now);
    bool done(int64_t step) const;
    bool sent_all(int64_t step) const;
    void finish(int64_t step);
    void poll_tx(double now);
    void fire_timers(double now);
    void on_ack(const Pkt& ack, double now);
    void on_cnp(const Pkt& cnp, double now);
    double next_wakeup(double now) const;

    SendFlow* flow(int64_t step) const;
    const std::vector<std::unique_ptr<SendFlow>>& flows() const { return flows_; }

    SenderAddr addr;
    UdpParams p;
    std::shared_ptr<RateControl> rp;
    int64_t cur_step = 0;
    bool peer_heard = false;        // any valid ACK from the successor yet
    Lateness late_pacing, late_timer;

private:
    struct Timer {
        double deadline;
        int64_t seq, step, idx;
    };
    // heapq's order on (deadline, txseq, step, index) tuples: a txseq is in
    // the queue at most once, so (deadline, txseq) orders it totally and
    // pops come in the Python's order
    struct TimerEarlier {
        bool operator()(const Timer& x, const Timer& y) const {
            return x.deadline < y.deadline || (x.deadline == y.deadline && x.seq < y.seq);
        }
    };
    struct Sample {
        int64_t seq = 0;
        double rtt = 0.0;
    };
    struct Pick {
        SendFlow* flow;
        int64_t idx;
        Why why;
    };

    int64_t window() const;
    double cur_rto() const;
    double pto() const;
    void arm_probe(SendFlow& flow, double now);
    bool pick(Pick& out);
    bool sendable() const;
    int64_t transmit(SendFlow& flow, int64_t idx, Why why, double now);
    void queue(SendFlow& flow, int64_t idx, Why why);
    void push_timer(double deadline, int64_t seq, int64_t step, int64_t idx);
    bool rp_due(double now);
    void probe(SendFlow& flow);
    void mark(SendFlow& flow, int64_t i, double now, Sample& sample);
    void mark_sack(SendFlow& flow, int64_t base, const std::vector<uint64_t>& sack, double now,
                   Sample& sample);
    void gap_rule(SendFlow& flow);
    void rtt_sample(double rtt);
    void log_rate(double now);

    EndpointIo& io_;
    int64_t psize_;
    std::vector<std::unique_ptr<SendFlow>> flows_;   // in the order started, as the Python's dict
    SortedRun<Timer, TimerEarlier> timers_;
    std::vector<int64_t> gap_due_;  // gap_rule's packets to queue, reused
    int64_t seq_ = 0;
    double next_tx_ = -TRANSPORT_INF;
    double gap_rate_ = 0.0;         // the rate the wait until next_tx_ was set at
    bool has_srtt_ = false;
    double srtt_ = 0.0, rttvar_ = 0.0;
    double rto_;                    // from the RTT estimator, before back-off
    int backoff_ = 0;
    bool has_last_rtt_ = false;
    double last_rtt_ = 0.0;
    double rto_hold_ = -TRANSPORT_INF;
    double ack_delay_;
    bool has_held_ = false;         // the pacer holds a sendable packet until held_
    double held_ = 0.0;
};

}  // namespace sym
