// topologies/switch/twin/pipeline.py on descriptors (see pipeline.hpp).
#include "pipeline.hpp"

#include <algorithm>
#include <stdexcept>

namespace sym {

namespace {
[[noreturn]] void refuse(const std::string& what) { throw std::invalid_argument(what); }

// zlib's CRC-32 table: the reflected polynomial 0xEDB88320
std::array<uint32_t, 256> crc_table() {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        t[i] = c;
    }
    return t;
}
const std::array<uint32_t, 256> CRC_TABLE = crc_table();
}  // namespace

uint32_t ecmp_hash(uint32_t src, uint32_t dst, uint8_t proto, uint16_t sport, uint16_t dport) {
    const uint8_t bytes[13] = {
        static_cast<uint8_t>(src >> 24), static_cast<uint8_t>(src >> 16), static_cast<uint8_t>(src >> 8),
        static_cast<uint8_t>(src), static_cast<uint8_t>(dst >> 24), static_cast<uint8_t>(dst >> 16),
        static_cast<uint8_t>(dst >> 8), static_cast<uint8_t>(dst), proto, static_cast<uint8_t>(sport >> 8),
        static_cast<uint8_t>(sport), static_cast<uint8_t>(dport >> 8), static_cast<uint8_t>(dport)};
    uint32_t c = 0xFFFFFFFFu;
    for (uint8_t b : bytes) c = CRC_TABLE[(c ^ b) & 0xFF] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
}

Pipeline::Pipeline(const std::vector<uint32_t>& seed_key) : seed_key_(seed_key), rng_(seed_key) { reset(); }

void Pipeline::reset() {
    rng_ = Rng(seed_key_);
    lpm_.clear();
    flows_.clear();
    ecmp_.assign(p4::ECMP_GROUPS * p4::ECMP_BUCKETS, -1);
    ranges_.clear();
    range_hits_.clear();
    range_order_ = 0;
    k_sym_ = p4::K_SYM_DEFAULT, p_sym_ = p4::PROB_ONE, gate_ = p4::GATE_DEFAULT;
    verdict_on_ = false;
    for (int r = 0; r < p4::N_REGS; r++) regs_[r].assign(p4::REGISTERS[r].size, 0);
    for (int c = 0; c < p4::N_CTRS; c++) ctrs_[c].assign(p4::COUNTERS[c].size, CounterCell{});
    drops_.fill(0);
}

// --- control plane ------------------------------------------------------------

void Pipeline::table_add(const std::string& table, const std::string& action, const std::vector<uint64_t>& keys,
                         const std::vector<uint64_t>& params, int64_t prio) {
    if (table == "forward") {
        if (keys.size() != 2) refuse("forward: keys are {value, prefix length}");
        const int plen = static_cast<int>(keys[1]);
        if (plen < 0 || plen > 32) refuse("forward: prefix length out of 0..32");
        Fwd e{FwdKind::Drop, 0, 0, 0, 0};
        if (action == "ipv4_forward") {
            if (params.size() != 2) refuse("ipv4_forward: params are {dst_mac, port}");
            e.kind = FwdKind::Port, e.dst_mac = params[0], e.port = static_cast<uint16_t>(params[1]);
        } else if (action == "ecmp_forward") {
            if (params.size() != 3) refuse("ecmp_forward: params are {dst_mac, group, sport_mask}");
            if (params[1] >= p4::ECMP_GROUPS) refuse("ecmp_forward: group out of range");
            e.kind = FwdKind::Ecmp, e.dst_mac = params[0], e.group = static_cast<uint8_t>(params[1]);
            e.sport_mask = static_cast<uint16_t>(params[2]);
        }
        auto it = std::find_if(lpm_.begin(), lpm_.end(), [&](const auto& b) { return b.first == plen; });
        if (it == lpm_.end()) {
            lpm_.emplace_back(plen, FlatMap<uint32_t, Fwd, AddrHash>{});
            // tables.py's lpm_lengths: longest first
            std::sort(lpm_.begin(), lpm_.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
            it = std::find_if(lpm_.begin(), lpm_.end(), [&](const auto& b) { return b.first == plen; });
        }
        it->second.put(static_cast<uint32_t>(keys[0]), e);
    } else if (table == "symphony_flows") {
        if (keys.size() != 3) refuse("symphony_flows: keys are {src, dst, dport}");
        Track t{action == "track", 0, 0, 0, 0, 0, 0};
        if (t.track) {
            if (params.size() != 6) refuse("track: expects 6 params");
            t.flow_id = static_cast<uint16_t>(params[0]), t.job_slot = static_cast<uint8_t>(params[1]);
            t.n_local = static_cast<uint8_t>(params[2]), t.threshold = static_cast<uint16_t>(params[3]);
            t.enabled = static_cast<uint8_t>(params[4]), t.tcp = static_cast<uint8_t>(params[5]);
        }
        FlowKey k{static_cast<uint32_t>(keys[0]), static_cast<uint32_t>(keys[1]), static_cast<uint16_t>(keys[2])};
        flows_.put(k, t);
    } else if (table == "ecmp_select") {
        if (keys.size() != 2) refuse("ecmp_select: keys are {group, bucket}");
        if (keys[0] >= p4::ECMP_GROUPS || keys[1] >= p4::ECMP_BUCKETS) refuse("ecmp_select: key out of range");
        int32_t port = -1;
        if (action == "ecmp_port") {
            if (params.size() != 1) refuse("ecmp_port: expects 1 param");
            port = static_cast<int32_t>(params[0]);
        }
        ecmp_[keys[0] * p4::ECMP_BUCKETS + keys[1]] = port;
    } else if (table == "queue_ecn") {
        if (keys.size() != 2) refuse("queue_ecn: keys are {lo, hi}");
        int32_t prob = -1;
        if (action == "queue_mark_prob") {
            if (params.size() != 1) refuse("queue_mark_prob: expects 1 param");
            prob = static_cast<int32_t>(params[0]);
        }
        ranges_.push_back({prio, static_cast<uint32_t>(keys[0]), static_cast<uint32_t>(keys[1]), range_order_++, prob});
        // tables.py sorts by (prio, handle): among overlapping ranges the lowest prio, then the oldest
        std::stable_sort(ranges_.begin(), ranges_.end(), [](const Range& a, const Range& b) {
            return a.prio != b.prio ? a.prio < b.prio : a.order < b.order;
        });
        range_hits_.clear();
    } else {
        refuse("table " + table + ": no entries to add in the compiled pipeline");
    }
}

void Pipeline::table_set_default(const std::string& table, const std::string& action,
                                 const std::vector<uint64_t>& params) {
    // only the keyless tables' defaults reach the data path (pipeline.py's
    // lookups return None on a miss, whatever the table's default)
    if (table == "sym_verdict") {
        if (action != "set_verdict" || params.size() != 1) refuse("sym_verdict: set_verdict takes {on}");
        verdict_on_ = params[0] != 0;
        return;
    }
    if (table != "sym_ecn") return;
    if (action != "set_sym_ecn" || params.size() != 3) refuse("sym_ecn: set_sym_ecn takes {k, p, g}");
    k_sym_ = static_cast<uint32_t>(params[0]), p_sym_ = static_cast<uint32_t>(params[1]);
    gate_ = static_cast<uint32_t>(params[2]);
}

void Pipeline::table_clear(const std::string& table) {
    if (table == "forward") lpm_.clear();
    else if (table == "symphony_flows") flows_.clear();
    else if (table == "ecmp_select") std::fill(ecmp_.begin(), ecmp_.end(), -1);
    else if (table == "queue_ecn") ranges_.clear(), range_hits_.clear();
    // sym_ecn has no entries: clearing keeps its default, as tables.py's clear
}

int Pipeline::reg_id(const std::string& name) const {
    for (int r = 0; r < p4::N_REGS; r++)
        if (name == p4::REGISTERS[r].name) return r;
    refuse("unknown register " + name);
}

int Pipeline::ctr_id(const std::string& name) const {
    for (int c = 0; c < p4::N_CTRS; c++)
        if (name == p4::COUNTERS[c].name) return c;
    refuse("unknown counter " + name);
}

uint32_t Pipeline::register_read(const std::string& name, uint32_t index) const {
    const auto& cells = regs_[reg_id(name)];
    if (index >= cells.size()) refuse(name + ": index out of range");
    return cells[index];
}

const std::vector<uint32_t>& Pipeline::register_cells(const std::string& name) const { return regs_[reg_id(name)]; }

void Pipeline::register_write(const std::string& name, uint32_t index, uint64_t value) {
    const int r = reg_id(name);
    if (index >= regs_[r].size()) refuse(name + ": index out of range");
    if (value >> p4::REGISTERS[r].width) refuse(name + ": value does not fit");
    regs_[r][index] = static_cast<uint32_t>(value);
}

void Pipeline::register_reset(const std::string& name) {
    auto& cells = regs_[reg_id(name)];
    std::fill(cells.begin(), cells.end(), 0);
}

CounterCell Pipeline::counter_read(const std::string& name, uint32_t index) const {
    const auto& cells = ctrs_[ctr_id(name)];
    if (index >= cells.size()) refuse(name + ": index out of range");
    return cells[index];
}

const std::vector<CounterCell>& Pipeline::counter_cells(const std::string& name) const {
    return ctrs_[ctr_id(name)];
}

// --- data path ----------------------------------------------------------------

const Pipeline::Fwd* Pipeline::lookup_lpm(uint32_t dst) const {
    for (const auto& [plen, bucket] : lpm_) {
        const uint32_t mask = plen == 0 ? 0 : 0xFFFFFFFFu << (32 - plen);
        if (const Fwd* f = bucket.find(dst & mask)) return f;
    }
    return nullptr;
}

Meta Pipeline::drop(Meta& meta, Drop reason) {
    meta.drop = reason;
    count_drop(reason);
    return meta;
}

Meta Pipeline::ingress(int in_port, Pkt& pkt) {
    // pipeline.py's _decide on what a descriptor holds: a well-formed IPv4
    // header (malformed frames are from_frame's to report, in Python)
    Meta meta;
    if (pkt.ttl <= 1) return drop(meta, Drop::Ttl);
    const Fwd* fwd = lookup_lpm(pkt.dst_ip);
    if (fwd == nullptr || fwd->kind == FwdKind::Drop) return drop(meta, Drop::NoRoute);
    const int32_t port = egress_of(*fwd, pkt);
    if (port < 0) return drop(meta, Drop::NoRoute);
    const bool udp = pkt.proto == PROTO_UDP, tcp = pkt.proto == p4::PROTO_TCP;
    meta.egress_port = port;
    meta.dst_mac = fwd->dst_mac;
    pkt.ttl -= 1;
    // candidates: tagged UDP (top two bits of the source port) or TCP (tag in the DSCP)
    if ((udp && pkt.sport >= p4::TAG_BASE) || tcp) {
        const Track* t = flows_.find(FlowKey{pkt.src_ip, pkt.dst_ip, pkt.dport});
        if (t != nullptr && t->track && t->tcp == static_cast<uint8_t>(tcp)) {
            const uint32_t step = tcp ? static_cast<uint32_t>(pkt.tos >> 2) : (pkt.sport & p4::TAG_MASK);
            track(meta, *t, step, pkt.len);
        }
    }
    return meta;
}

int32_t Pipeline::egress_of(const Fwd& fwd, const Pkt& pkt) const {
    // pipeline.py's _ecmp_port: a descriptor without an L4 header carries
    // proto 0 and ports 0 (from_frame), as meta's l4 ports are then
    if (fwd.kind == FwdKind::Port) return fwd.port;
    const uint32_t b = ecmp_bucket(pkt.src_ip, pkt.dst_ip, pkt.proto, pkt.sport, pkt.dport, fwd.sport_mask);
    return ecmp_[fwd.group * p4::ECMP_BUCKETS + b];
}

void Pipeline::track(Meta& m, const Track& t, uint32_t step, uint32_t length) {
    m.tracked = true, m.flow_id = t.flow_id, m.job_slot = t.job_slot, m.enabled = t.enabled, m.step = step;
    m.tcp = t.tcp;
    const int tcp = t.tcp;
    const uint32_t n_local_m1 = static_cast<uint8_t>(t.n_local - 1);   // bit<8> arithmetic, as in track()
    if (t.flow_id >= p4::MAX_FLOWS || t.job_slot >= p4::MAX_JOBS) {
        // BMv2 ignores out-of-range register accesses
        m.tracked = false;
        return;
    }
    auto& cell = ctrs_[p4::PKTS][t.flow_id];
    cell.packets += 1, cell.bytes += length;
    auto& flow_step = regs_[p4::FLOW_STEP];
    auto& step_count = regs_[p4::STEP_COUNT];
    auto& frontier = regs_[p4::FRONTIER];
    const Move move = step_move(step, flow_step[t.flow_id], tcp);     // FlowStepUpdate
    if (move == Move::Jump) {
        count(p4::STEP_JUMPS, t.flow_id, length);
        m.jump = true;
    } else if (move == Move::New) {
        flow_step[t.flow_id] = step;
        const uint32_t slot = p4::step_slot(t.job_slot, step);            // StepCountUpdate
        const uint32_t c = step_count[slot];
        if (c >= n_local_m1) {
            step_count[slot] = 0;
            m.complete = true;
        } else {
            step_count[slot] = (c + 1) & 0xFFFF;
        }
    }
    uint32_t current = frontier[t.job_slot];                               // FrontierUpdate
    if (m.complete && after(step, current, tcp)) current = frontier[t.job_slot] = step;
    m.frontier = current;
    const uint32_t ahead = (step - current) & p4::MASK[tcp];
    m.outpacing = ahead < p4::HALF[tcp] && ahead > t.threshold && !m.jump;
}

uint32_t Pipeline::queue_prob(uint32_t qdepth) {
    // tables.py's lookup_range keeps its answer per depth until the table changes
    if (qdepth >= range_hits_.size()) range_hits_.resize(qdepth + 1, -2);
    int32_t hit = range_hits_[qdepth];
    if (hit == -2) {
        hit = -1;
        for (size_t i = 0; i < ranges_.size(); i++)
            if (ranges_[i].lo <= qdepth && qdepth <= ranges_[i].hi) { hit = static_cast<int32_t>(i); break; }
        range_hits_[qdepth] = hit;
    }
    return hit < 0 || ranges_[hit].prob < 0 ? 0 : static_cast<uint32_t>(ranges_[hit].prob);
}

void Pipeline::egress(Pkt& pkt, Meta& m, int64_t qdepth) {
    qdepth = std::min<int64_t>(std::max<int64_t>(qdepth, 0), p4::QDEPTH_MAX);
    m.qdepth = static_cast<uint32_t>(qdepth);
    const int ecn = pkt.tos & 3;
    if (ecn != 1 && ecn != 2) return;
    const uint32_t r_queue = rng_.getrandbits(16);
    const uint32_t r_sym = rng_.getrandbits(16);
    const uint32_t q_prob = queue_prob(m.qdepth);
    m.queue_mark = r_queue < q_prob;
    const bool candidate = verdict(pkt, m, m.tracked && m.enabled == 1 && m.outpacing);
    const uint32_t run = run_ahead(m.egress_port, candidate);
    m.sym_mark = candidate && (gate_ == 0 || run < gate_) && m.qdepth >= k_sym_ && r_sym < p_sym_;
    if (m.queue_mark || m.sym_mark) pkt.tos |= 3;
    if (m.queue_mark) {
        count(p4::QUEUE_MARKS, static_cast<uint32_t>(m.egress_port), pkt.len);
        if (m.tracked) count(p4::FLOW_QUEUE_MARKS, m.flow_id, pkt.len);
    }
    if (m.sym_mark) {
        if (m.tracked) count(p4::SYM_MARKS, m.flow_id, pkt.len);
        else count(p4::VERDICT_MARKS, static_cast<uint32_t>(m.egress_port), pkt.len);
    }
}

bool Pipeline::verdict(Pkt& pkt, const Meta& m, bool own) const {
    // pipeline.py's _verdict: sym_verdict on, a tracked packet carries its
    // candidacy onward; an untracked one is a candidate when it carries one
    if (!verdict_on_) return own;
    if (m.tracked) {
        pkt.ip_flags = own ? (pkt.ip_flags | VERDICT_FLAG) : (pkt.ip_flags & ~VERDICT_FLAG);
        return own;
    }
    return (pkt.ip_flags & VERDICT_FLAG) != 0;
}

uint32_t Pipeline::run_ahead(int port, bool ahead) {
    // AheadRunUpdate; the port is a 9-bit action parameter, below NUM_PORTS
    auto& cell = regs_[p4::AHEAD_RUN][static_cast<uint32_t>(port)];
    const uint32_t run = cell;
    if (!ahead) cell = 0;
    else if (run != p4::RUN_MAX) cell = run + 1;
    return run;
}

void Pipeline::count(p4::Ctr c, uint32_t index, uint32_t length) {
    auto& cells = ctrs_[c];
    if (index < cells.size()) cells[index].packets += 1, cells[index].bytes += length;
}

}  // namespace sym
