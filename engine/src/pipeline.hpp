// The Symphony pipeline on packet descriptors: topologies/switch/twin/
// pipeline.py rule for rule (which is p4/include/control.p4's), its tables,
// registers, counters, widths and wrap-around.  The names and sizes mirror
// contract/p4names.py (tests/engine/test_switch_p4names.py holds them
// together).  The control plane parses BMv2's strings in Python (the twin's
// tables.py) and hands over plain ints; the Python Table objects stay the
// record of what was installed, this file only looks entries up.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "flatmap.hpp"
#include "packet.hpp"
#include "rng.hpp"

namespace sym {

// contract/p4names.py (p4/include/constants.p4)
namespace p4 {
constexpr uint32_t TAG_BASE = 0xC000;
constexpr uint32_t TAG_BITS = 14, TAG_MASK = (1u << TAG_BITS) - 1, TAG_HALF = 1u << (TAG_BITS - 1);
constexpr uint32_t DSCP_TAG_BITS = 6, DSCP_TAG_MASK = (1u << DSCP_TAG_BITS) - 1,
                   DSCP_TAG_HALF = 1u << (DSCP_TAG_BITS - 1);
constexpr uint32_t W = 64, W_BITS = 6;
constexpr uint32_t STEP_WINDOW = W, DSCP_STEP_WINDOW = DSCP_TAG_HALF - 1;
constexpr uint32_t MAX_FLOWS = 1024, MAX_JOBS = 64, STEP_SLOTS = MAX_JOBS * W, NUM_PORTS = 512;
constexpr uint32_t PROB_ONE = 1u << 16, K_SYM_DEFAULT = 1, GATE_DEFAULT = 0, RUN_MAX = 0xFFFF;
constexpr uint32_t FORWARD_SIZE = 4096, FLOWS_SIZE = 1024, QUEUE_ECN_SIZE = 256, SYM_ECN_SIZE = 1;
constexpr uint32_t SYM_VERDICT_SIZE = 1;
constexpr uint32_t QDEPTH_BITS = 19, PORT_BITS = 9, QDEPTH_MAX = (1u << QDEPTH_BITS) - 1;
constexpr uint8_t PROTO_TCP = 6;  // PROTO_UDP: packet.hpp
// contract/ecmp.py: buckets of the 5-tuple's CRC-32, groups of equal-cost ports
constexpr uint32_t ECMP_BUCKET_BITS = 6, ECMP_BUCKETS = 1u << ECMP_BUCKET_BITS, ECMP_GROUPS = 256;

// per mode (tcp 0 or 1), as pipeline.py's _MASK, _HALF, _WINDOW
constexpr uint32_t MASK[2] = {TAG_MASK, DSCP_TAG_MASK};
constexpr uint32_t HALF[2] = {TAG_HALF, DSCP_TAG_HALF};
constexpr uint32_t WINDOW[2] = {STEP_WINDOW, DSCP_STEP_WINDOW};

struct RegisterSpec { const char* name; uint32_t width, size; };
struct CounterSpec { const char* name; uint32_t size; };

enum Reg : uint8_t { FLOW_STEP, STEP_COUNT, FRONTIER, AHEAD_RUN, N_REGS };
constexpr RegisterSpec REGISTERS[N_REGS] = {
    {"flow_step", 16, MAX_FLOWS}, {"step_count", 16, STEP_SLOTS},
    {"frontier", 16, MAX_JOBS}, {"ahead_run", 16, NUM_PORTS}};

enum Ctr : uint8_t { PKTS, STEP_JUMPS, SYM_MARKS, FLOW_QUEUE_MARKS, QUEUE_MARKS, VERDICT_MARKS, N_CTRS };
constexpr CounterSpec COUNTERS[N_CTRS] = {
    {"pkts", MAX_FLOWS}, {"step_jumps", MAX_FLOWS}, {"sym_marks", MAX_FLOWS},
    {"flow_queue_marks", MAX_FLOWS}, {"queue_marks", NUM_PORTS}, {"verdict_marks", NUM_PORTS}};

inline uint32_t step_slot(uint32_t job_slot, uint32_t step) { return (job_slot << W_BITS) | (step & (W - 1)); }
}  // namespace p4

// why ingress dropped a packet (pipeline.py's drop reasons, the dump's keys)
enum class Drop : uint8_t { None, ParserError, NotIpv4, BadIpv4, Ttl, NoRoute, N };
constexpr const char* DROP_NAMES[] = {"", "parser_error", "not_ipv4", "bad_ipv4", "ttl", "no_route"};

// serial-number 'a is after b' on the mode's tag (pipeline.after)
inline bool after(uint32_t a, uint32_t b, int tcp) {
    uint32_t d = (a - b) & p4::MASK[tcp];
    return d != 0 && d < p4::HALF[tcp];
}

// contract/ecmp.py's flow_hash: zlib's CRC-32 of (src, dst, proto, sport,
// dport), each in network byte order; bucket: its low bits, the source port
// masked first
uint32_t ecmp_hash(uint32_t src, uint32_t dst, uint8_t proto, uint16_t sport, uint16_t dport);
inline uint32_t ecmp_bucket(uint32_t src, uint32_t dst, uint8_t proto, uint16_t sport, uint16_t dport,
                            uint16_t sport_mask) {
    return ecmp_hash(src, dst, proto, static_cast<uint16_t>(sport & sport_mask), dport) & (p4::ECMP_BUCKETS - 1);
}

enum class Move : uint8_t { Old, New, Jump };
// pipeline.step_move
inline Move step_move(uint32_t step, uint32_t newest, int tcp) {
    const uint32_t mask = p4::MASK[tcp], window = p4::WINDOW[tcp];
    uint32_t d = (step - newest) & mask;
    if (d > 0 && d <= window) return Move::New;
    return (window < d && d < mask + 1 - window) ? Move::Jump : Move::Old;
}

// pipeline.py's Packet minus the frame: what ingress decided and egress reads
struct Meta {
    int egress_port = -1;
    Drop drop = Drop::None;
    uint64_t dst_mac = 0;          // the forward entry's (the frame's deparser writes it)
    bool tracked = false, jump = false, complete = false, outpacing = false;
    bool queue_mark = false, sym_mark = false;
    uint16_t flow_id = 0;
    uint8_t job_slot = 0, enabled = 0, tcp = 0;
    uint32_t step = 0, frontier = 0, qdepth = 0;
};

struct CounterCell { uint64_t packets = 0, bytes = 0; };

class Pipeline {
public:
    explicit Pipeline(const std::vector<uint32_t>& seed_key);
    void reset();                          // as a new Pipeline(seed): every table, register, counter, drop

    // --- control plane: already-parsed values (the Python side checked them) ---
    // forward: keys {value, prefix length}, action ipv4_forward {dst_mac, port},
    //   ecmp_forward {dst_mac, group, sport_mask} or drop
    // ecmp_select: keys {group, bucket}, action ecmp_port {port} or drop
    // symphony_flows: keys {src, dst, dport}, action track {6 params} or NoAction
    // queue_ecn: keys {lo, hi}, action queue_mark_prob {prob} or NoAction, prio
    void table_add(const std::string& table, const std::string& action, const std::vector<uint64_t>& keys,
                   const std::vector<uint64_t>& params, int64_t prio);
    void table_set_default(const std::string& table, const std::string& action,
                           const std::vector<uint64_t>& params);
    void table_clear(const std::string& table);
    uint32_t register_read(const std::string& name, uint32_t index) const;
    const std::vector<uint32_t>& register_cells(const std::string& name) const;
    void register_write(const std::string& name, uint32_t index, uint64_t value);
    void register_reset(const std::string& name);
    CounterCell counter_read(const std::string& name, uint32_t index) const;
    const std::vector<CounterCell>& counter_cells(const std::string& name) const;
    const std::array<uint64_t, static_cast<size_t>(Drop::N)>& drops() const { return drops_; }
    void count_drop(Drop reason) { drops_[static_cast<size_t>(reason)]++; }

    // --- data path ---
    // parser + ingress on a descriptor: decrements the TTL of what it forwards
    Meta ingress(int in_port, Pkt& pkt);
    // egress with the depth the packet saw at enqueue: may set CE in pkt.tos
    void egress(Pkt& pkt, Meta& meta, int64_t qdepth);

private:
    enum class FwdKind : uint8_t { Drop, Port, Ecmp };
    struct Fwd { FwdKind kind; uint64_t dst_mac; uint16_t port; uint8_t group; uint16_t sport_mask; };
    struct Track { bool track; uint16_t flow_id; uint8_t job_slot, n_local; uint16_t threshold; uint8_t enabled, tcp; };
    struct Range { int64_t prio; uint32_t lo, hi; uint64_t order; int32_t prob; };  // prob -1: NoAction
    struct FlowKey {
        uint32_t src, dst; uint16_t dport;
        bool operator==(const FlowKey& o) const { return src == o.src && dst == o.dst && dport == o.dport; }
    };
    struct FlowHash {
        size_t operator()(const FlowKey& k) const {
            uint64_t h = (static_cast<uint64_t>(k.src) << 32 | k.dst) * 0x9E3779B97F4A7C15ULL;
            return static_cast<size_t>(h ^ (h >> 29) ^ (static_cast<uint64_t>(k.dport) * 0xBF58476D1CE4E5B9ULL));
        }
    };
    struct AddrHash {            // FlatMap spreads the bits itself
        size_t operator()(uint32_t a) const { return a; }
    };

    std::vector<uint32_t> seed_key_;
    Rng rng_;
    // forward (LPM): per prefix length a hash map, longest first
    std::vector<std::pair<int, FlatMap<uint32_t, Fwd, AddrHash>>> lpm_;
    FlatMap<FlowKey, Track, FlowHash> flows_;
    std::vector<int32_t> ecmp_;              // group * BUCKETS + bucket -> port, -1: no entry or drop
    std::vector<Range> ranges_;              // by (prio, order): the first match wins
    uint64_t range_order_ = 0;
    std::vector<int32_t> range_hits_;        // depth -> index into ranges_, -1 none, -2 not yet looked up
    uint32_t k_sym_ = p4::K_SYM_DEFAULT, p_sym_ = p4::PROB_ONE, gate_ = p4::GATE_DEFAULT;
    bool verdict_on_ = false;
    std::vector<uint32_t> regs_[p4::N_REGS];
    std::vector<CounterCell> ctrs_[p4::N_CTRS];
    std::array<uint64_t, static_cast<size_t>(Drop::N)> drops_{};

    int reg_id(const std::string& name) const;
    int ctr_id(const std::string& name) const;
    const Fwd* lookup_lpm(uint32_t dst) const;
    int32_t egress_of(const Fwd& fwd, const Pkt& pkt) const;
    uint32_t queue_prob(uint32_t qdepth);
    Meta drop(Meta& meta, Drop reason);
    void track(Meta& meta, const Track& t, uint32_t step, uint32_t length);
    uint32_t run_ahead(int port, bool ahead);
    bool verdict(Pkt& pkt, const Meta& m, bool own) const;
    void count(p4::Ctr c, uint32_t index, uint32_t length);
};

}  // namespace sym
