// What the two halves of an endpoint share (hosts/udp/endpoint.py gives its
// Sender and Receiver one counters dict, one log and one `out`): the
// transport's parameters, the counters, the log's records and the hook
// that puts a packet on the wire.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <limits>
#include <vector>

#include "packet.hpp"

namespace sym {

constexpr double TRANSPORT_INF = std::numeric_limits<double>::infinity();

// hosts/udp/params.py UdpParams (checked there)
struct UdpParams {
    int64_t payload_bytes = 1400;
    double rto_ms = 50.0;
    int64_t window_packets = 1024;
    int64_t ack_every = 8;
    double ack_delay_ms = 10.0;
    int64_t burst_packets = 8;
    double rto_max_ms = 1000.0;
};

// hosts/wire.py sizes, and the frame bytes on top of them (HEADERS)
constexpr uint32_t WIRE_DATA_HEADER = 20;
constexpr uint32_t WIRE_ACK_HEADER = 22;
constexpr uint32_t WIRE_CNP = 16;
constexpr uint32_t WIRE_OVERHEAD = HEADERS + WIRE_DATA_HEADER;   // hosts/udp/params.py
constexpr uint16_t ACK_COMPLETE = 0x1;
constexpr uint16_t ACK_ECHO = 0x2;
constexpr int64_t MAX_SACK_BITS = 8 * 1024;

// contract/tags.py
constexpr uint16_t TAG_PORT_BASE = 0xC000;
constexpr uint32_t TAG_MASK = 0x3FFF;
constexpr uint8_t ECN_ECT0 = 0b10;
constexpr uint8_t ECN_CE = 0b11;
inline uint16_t tag_port(int64_t step) { return static_cast<uint16_t>(TAG_PORT_BASE | (step & TAG_MASK)); }
// port_tag: -1 for an untagged port (the Python's None, unequal to any tag)
inline int32_t port_tag(uint16_t port) {
    return (port & ~TAG_MASK & 0xFFFF) == TAG_PORT_BASE ? static_cast<int32_t>(port & TAG_MASK) : -1;
}

// The counters the Python's defaultdict(int) can hold.  A key exists there
// once it was written (rtt_sum_us may be written with 0), so each counter
// carries whether it was: the dict the Python face builds has the same keys.
enum class Ctr : uint8_t {
    tx_data, rx_data, tx_ack, rx_ack, tx_cnp, rx_cnp, rx_ce, dup_data, stale_ack, rx_older_step,
    retransmit_timeout, retransmit_gap, retransmit_probe,
    drop_bad_magic, drop_job, drop_peer, drop_tag, drop_step, drop_offset, drop_bad_ack,
    drop_misdirected,
    rtt_samples, rtt_sum_us, rtt_min_us, rtt_srtt_us,
    N_
};
constexpr size_t N_COUNTERS = static_cast<size_t>(Ctr::N_);
extern const char* const COUNTER_NAMES[N_COUNTERS];

struct Counters {
    std::array<int64_t, N_COUNTERS> value{};
    std::array<bool, N_COUNTERS> present{};

    void add(Ctr c, int64_t d = 1) {
        value[size_t(c)] += d;
        present[size_t(c)] = true;
    }
    void set(Ctr c, int64_t v) {
        value[size_t(c)] = v;
        present[size_t(c)] = true;
    }
    int64_t get(Ctr c) const { return value[size_t(c)]; }
};

// Why a packet is (re)sent: the Python's why=None / "timeout" / "gap" / "probe"
enum class Why : uint8_t { New = 0, Timeout, Gap, Probe };
extern const char* const WHY_NAMES[4];

// One log(kind, step, **fields) call as a compact record, stamped with the
// time the endpoint was called at:
//   Retransmit: a = offset, b = length, why      ("retransmit", offset=, length=, why=)
//   CnpRx, CnpTx: a = peer                       ("cnp", dir="rx"/"tx", peer=)
//   Rate: a = rc, b = rt, c = alpha              ("rate", rc=, rt=, alpha=)
enum class LogKind : uint8_t { Retransmit = 0, CnpRx, CnpTx, Rate };

struct LogRec {
    LogKind kind;
    Why why;
    int64_t step;
    double time;
    double a, b, c;
};

// Where an endpoint's packets and records go.  emit, when set, takes each
// packet as it is made (the world's hook); unset, packets collect in
// outbox for whoever drains it (the tests).
struct EndpointIo {
    Counters counters;
    std::vector<LogRec> log;
    std::function<void(Pkt&&)> emit;
    std::vector<Pkt> outbox;

    void send(Pkt&& p) {
        if (emit)
            emit(std::move(p));
        else
            outbox.push_back(std::move(p));
    }
    void record(LogKind k, int64_t step, double now, double a = 0, double b = 0, double c = 0,
                Why why = Why::New) {
        log.push_back(LogRec{k, why, step, now, a, b, c});
    }
};

}  // namespace sym
