// Python face of the switch part: the Python-compatible generator, the
// pipeline, the egress queue, the delay line and the switch core, with what
// the control plane (experiments/sim/compiled_switch.py) and the tests that
// hold them against topologies/switch/twin need.  Nothing here runs per
// packet in a world: the world drives SwitchCore from C++.
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "delayline.hpp"
#include "pipeline.hpp"
#include "queue.hpp"
#include "rng.hpp"
#include "switch.hpp"

namespace nb = nanobind;
using namespace sym;

namespace {

Held held_kind(const std::string& kind) {
    if (kind == "queue") return Held::Queue;
    if (kind == "ingress") return Held::Ingress;
    if (kind == "egress") return Held::Egress;
    throw std::invalid_argument("kind must be queue, ingress or egress, got " + kind);
}

const char* held_name(Held k) { return k == Held::Queue ? "queue" : k == Held::Ingress ? "ingress" : "egress"; }

Dir direction(const std::string& d) {
    if (d == "egress") return Dir::Egress;
    if (d == "ingress") return Dir::Ingress;
    throw std::invalid_argument("netem direction must be one of egress, ingress, got '" + d + "'");
}

Drop drop_reason(const std::string& r) {
    for (size_t i = 1; i < static_cast<size_t>(Drop::N); i++)
        if (r == DROP_NAMES[i]) return static_cast<Drop>(i);
    throw std::invalid_argument("unknown drop reason " + r);
}

nb::dict drops_dict(const Pipeline& p) {
    nb::dict d;
    for (size_t i = 1; i < static_cast<size_t>(Drop::N); i++)
        if (p.drops()[i]) d[DROP_NAMES[i]] = p.drops()[i];
    return d;
}

nb::dict lateness_raw(const Lateness& l) {
    nb::dict counts;
    for (size_t b = 0; b < l.counts.size(); b++)
        if (l.counts[b]) counts[nb::int_(b)] = l.counts[b];
    nb::dict d;
    d["counts"] = counts, d["n"] = l.n, d["total"] = l.total, d["max"] = l.max;
    return d;
}

nb::dict line_stats(const LineStats& s) {
    nb::dict d;
    d["in"] = s.in, d["out"] = s.out, d["lost"] = s.lost, d["reordered"] = s.reordered;
    d["limit_drops"] = s.limit_drops;
    return d;
}

nb::list pkts(std::vector<Pkt>& v) {
    nb::list out;
    for (auto& p : v) out.append(nb::cast(std::move(p)));
    return out;
}

void bind_constants(nb::module_& m) {
    nb::dict c;
    c["TAG_BASE"] = p4::TAG_BASE, c["TAG_BITS"] = p4::TAG_BITS, c["TAG_MASK"] = p4::TAG_MASK;
    c["TAG_HALF"] = p4::TAG_HALF, c["DSCP_TAG_BITS"] = p4::DSCP_TAG_BITS;
    c["DSCP_TAG_MASK"] = p4::DSCP_TAG_MASK, c["DSCP_TAG_HALF"] = p4::DSCP_TAG_HALF;
    c["W"] = p4::W, c["W_BITS"] = p4::W_BITS, c["STEP_WINDOW"] = p4::STEP_WINDOW;
    c["DSCP_STEP_WINDOW"] = p4::DSCP_STEP_WINDOW, c["MAX_FLOWS"] = p4::MAX_FLOWS, c["MAX_JOBS"] = p4::MAX_JOBS;
    c["STEP_SLOTS"] = p4::STEP_SLOTS, c["NUM_PORTS"] = p4::NUM_PORTS, c["PROB_ONE"] = p4::PROB_ONE;
    c["K_SYM_DEFAULT"] = p4::K_SYM_DEFAULT, c["GATE_DEFAULT"] = p4::GATE_DEFAULT, c["RUN_MAX"] = p4::RUN_MAX;
    c["FORWARD_SIZE"] = p4::FORWARD_SIZE, c["FLOWS_SIZE"] = p4::FLOWS_SIZE;
    c["QUEUE_ECN_SIZE"] = p4::QUEUE_ECN_SIZE, c["SYM_ECN_SIZE"] = p4::SYM_ECN_SIZE;
    c["SYM_VERDICT_SIZE"] = p4::SYM_VERDICT_SIZE, c["VERDICT_BIT"] = VERDICT_BIT;
    c["QDEPTH_BITS"] = p4::QDEPTH_BITS, c["PORT_BITS"] = p4::PORT_BITS;
    c["ECMP_BUCKET_BITS"] = p4::ECMP_BUCKET_BITS, c["ECMP_BUCKETS"] = p4::ECMP_BUCKETS;
    c["ECMP_GROUPS"] = p4::ECMP_GROUPS, c["ECMP_SELECT_SIZE"] = p4::ECMP_GROUPS * p4::ECMP_BUCKETS;
    m.attr("P4_CONSTANTS") = c;
    nb::list regs, ctrs;
    for (const auto& r : p4::REGISTERS) regs.append(nb::make_tuple(r.name, r.width, r.size));
    for (const auto& k : p4::COUNTERS) ctrs.append(nb::make_tuple(k.name, k.size));
    m.attr("P4_REGISTERS") = regs;
    m.attr("P4_COUNTERS") = ctrs;
    m.attr("CTRL_FRAME_BYTES") = CTRL_FRAME_BYTES;
    // contract/ecmp.py's hash, for the tests that hold the two to fixed vectors
    m.def("ecmp_hash", &ecmp_hash, nb::arg("src"), nb::arg("dst"), nb::arg("proto"), nb::arg("sport"),
          nb::arg("dport"));
    m.def("ecmp_bucket", &ecmp_bucket, nb::arg("src"), nb::arg("dst"), nb::arg("proto"), nb::arg("sport"),
          nb::arg("dport"), nb::arg("sport_mask"));
}

void bind_rng(nb::module_& m) {
    nb::class_<Rng>(m, "Rng")
        .def(nb::init<const std::vector<uint32_t>&>(), nb::arg("key"))
        .def("genrand_uint32", &Rng::genrand_uint32)
        .def("getrandbits", &Rng::getrandbits, nb::arg("k"));
}

void bind_pipeline(nb::module_& m) {
    nb::class_<Pipeline>(m, "Pipeline")
        .def(nb::init<const std::vector<uint32_t>&>(), nb::arg("seed_key"))
        .def("reset", &Pipeline::reset)
        .def("table_add", &Pipeline::table_add, nb::arg("table"), nb::arg("action"), nb::arg("keys"),
             nb::arg("params"), nb::arg("prio") = 0)
        .def("table_set_default", &Pipeline::table_set_default)
        .def("table_clear", &Pipeline::table_clear)
        .def("register_read", &Pipeline::register_read)
        .def("register_cells", &Pipeline::register_cells)
        .def("register_write", &Pipeline::register_write)
        .def("register_reset", &Pipeline::register_reset)
        .def("counter_read", [](const Pipeline& p, const std::string& n, uint32_t i) {
            auto c = p.counter_read(n, i);
            return std::make_pair(c.packets, c.bytes);
        })
        .def("counter_cells", [](const Pipeline& p, const std::string& n) {
            std::vector<std::pair<uint64_t, uint64_t>> out;
            for (const auto& c : p.counter_cells(n)) out.emplace_back(c.packets, c.bytes);
            return out;
        })
        .def("drops", &drops_dict)
        .def("count_drop", [](Pipeline& p, const std::string& r) { p.count_drop(drop_reason(r)); })
        // ingress then egress at a given enq_qdepth (the conformance runner's
        // TwinTarget.send): None when dropped, else (port, dst MAC, packet out)
        .def("process", [](Pipeline& p, int port, Pkt pkt, int64_t qdepth) -> nb::object {
            Meta meta = p.ingress(port, pkt);
            if (meta.drop != Drop::None) return nb::none();
            p.egress(pkt, meta, qdepth);
            return nb::make_tuple(meta.egress_port, meta.dst_mac, pkt);
        });
}

void bind_queue(nb::module_& m) {
    nb::class_<EgressQueue>(m, "EgressQueue")
        .def(nb::init<int64_t>(), nb::arg("depth") = EgressQueue::DEFAULT_DEPTH)
        .def("set_depth", &EgressQueue::set_depth)
        .def("set_rate", &EgressQueue::set_rate, nb::arg("pps").none())
        .def("set_rate_bps", &EgressQueue::set_rate_bps, nb::arg("bps").none())
        .def("set_ctrl_lane", &EgressQueue::set_ctrl_lane)
        .def_ro("depth", &EgressQueue::depth)
        .def_ro("pps", &EgressQueue::pps)
        .def_ro("bps", &EgressQueue::bps)
        .def_ro("ctrl_lane", &EgressQueue::ctrl_lane)
        .def_prop_ro("unlimited", &EgressQueue::unlimited)
        .def_prop_ro("store_and_forward", &EgressQueue::store_and_forward)
        .def_prop_ro("empty", &EgressQueue::empty)
        .def_prop_ro("catch_up_s", &EgressQueue::catch_up_s)
        .def("__len__", &EgressQueue::size)
        .def("waiting", &EgressQueue::waiting)
        .def("waiting_at", &EgressQueue::waiting_at)
        .def("room", &EgressQueue::room, nb::arg("ctrl") = false)
        .def("push", [](EgressQueue& q, Pkt p, double now, bool ctrl) { q.push(std::move(p), now, ctrl); },
             nb::arg("pkt"), nb::arg("now"), nb::arg("ctrl") = false)
        .def("pop_due", [](EgressQueue& q, double now, size_t limit) {
            std::vector<Pkt> out;
            q.pop_due(now, out, limit);
            return pkts(out);
        }, nb::arg("now"), nb::arg("limit") = 256)
        .def("deadline", &EgressQueue::deadline)
        .def("service_time", &EgressQueue::service_time)
        .def("in_flight_s", &EgressQueue::in_flight_s)
        .def_ro("service_s", &EgressQueue::service_s)
        .def_ro("lost_s", &EgressQueue::lost_s)
        .def_ro("bytes_out", &EgressQueue::bytes_out)
        .def_prop_ro("lateness", [](const EgressQueue& q) { return lateness_raw(q.late); });
}

void bind_line(nb::module_& m) {
    nb::class_<NetemSpec>(m, "NetemSpec")
        .def(nb::init<>())
        .def_rw("delay_ms", &NetemSpec::delay_ms).def_rw("jitter_ms", &NetemSpec::jitter_ms)
        .def_rw("loss_pct", &NetemSpec::loss_pct).def_rw("correlation_pct", &NetemSpec::correlation_pct)
        .def_rw("reorder_pct", &NetemSpec::reorder_pct).def_rw("distribution", &NetemSpec::distribution)
        .def_rw("limit", &NetemSpec::limit)
        .def_prop_ro("active", &NetemSpec::active);
    nb::class_<DelayLine>(m, "DelayLine")
        .def(nb::init<const std::vector<uint32_t>&, const NetemSpec&, const std::vector<int32_t>&>(),
             nb::arg("key"), nb::arg("spec"), nb::arg("table"))
        .def("set", &DelayLine::set)
        .def("__len__", &DelayLine::size)
        .def("push", [](DelayLine& l, Pkt p, double now) { return l.push(std::move(p), now); })
        .def("pop_due", [](DelayLine& l, double now, size_t limit) {
            std::vector<Pkt> out;
            l.pop_due(now, out, limit);
            return pkts(out);
        }, nb::arg("now"), nb::arg("limit") = 256)
        .def("deadline", &DelayLine::deadline)
        .def_ro("active", &DelayLine::active)
        .def_prop_ro("stats", [](const DelayLine& l) { return line_stats(l.stats); });
}

void bind_core(nb::module_& m) {
    nb::class_<SwitchCore>(m, "SwitchCore")
        .def(nb::init<std::string, const std::vector<std::pair<int, std::string>>&, int64_t,
                      const std::vector<uint32_t>&>(),
             nb::arg("name"), nb::arg("ports"), nb::arg("queue_depth"), nb::arg("seed_key"))
        .def_ro("name", &SwitchCore::name)
        .def_prop_ro("pipeline", [](SwitchCore& s) -> Pipeline& { return s.pipeline; }, nb::rv_policy::reference_internal)
        .def_ro("no_port_drops", &SwitchCore::no_port_drops)
        .def("port_numbers", &SwitchCore::port_numbers)
        .def("has_port", &SwitchCore::has_port)
        .def("port_name", [](const SwitchCore& s, int p) { return s.port_at(p).name; })
        .def("port_counters", [](const SwitchCore& s, int p) {
            const PortStats& st = s.port_at(p).stats;
            nb::dict d;
            d["rx"] = st.rx, d["tx"] = st.tx, d["queue_drops"] = st.queue_drops, d["tx_errors"] = st.tx_errors;
            return d;
        })
        .def("queue", [](SwitchCore& s, int p) -> EgressQueue& { return s.port_at(p).queue; },
             nb::rv_policy::reference_internal)
        .def("line", [](SwitchCore& s, const std::string& d, int p) -> DelayLine* {
            return s.port_at(p).line[static_cast<int>(direction(d))].get();
        }, nb::rv_policy::reference_internal)
        .def("line_ports", [](const SwitchCore& s, const std::string& d) { return s.line_ports(direction(d)); })
        .def("served", [](const SwitchCore& s, int p) { return s.port_at(p).served; })
        .def("set_queue_depth", &SwitchCore::set_queue_depth)
        .def("set_queue_rate", &SwitchCore::set_queue_rate, nb::arg("port"), nb::arg("pps").none())
        .def("set_queue_rate_bps", &SwitchCore::set_queue_rate_bps, nb::arg("port"), nb::arg("bps").none())
        .def("set_ctrl_lane", &SwitchCore::set_ctrl_lane)
        .def("set_netem", [](SwitchCore& s, int port, const std::string& d, const NetemSpec& spec,
                             const std::vector<int32_t>& table, const std::vector<uint32_t>& key) {
            s.set_netem(port, direction(d), spec, table, key);
        })
        .def("reset_state", &SwitchCore::reset_state)
        .def("arrive", &SwitchCore::arrive)
        .def("forward", &SwitchCore::forward)
        .def("drain", &SwitchCore::drain)
        .def("drain_queue", &SwitchCore::drain_queue)
        .def("drain_line", [](SwitchCore& s, const std::string& d, int port, double now) {
            s.drain_line(direction(d), port, now);
        })
        .def("due", [](const SwitchCore& s, const std::string& kind, int port) { return s.due(held_kind(kind), port); })
        .def("next_due", &SwitchCore::next_due)
        .def("collect", &SwitchCore::collect)
        .def("take_transmitted", [](SwitchCore& s) {
            nb::list out;
            for (auto& [port, pkt, now] : s.transmitted) out.append(nb::make_tuple(port, std::move(pkt), now));
            s.transmitted.clear();
            return out;
        })
        .def("take_held", [](SwitchCore& s) {
            nb::list out;
            for (auto& [kind, port] : s.held_log) out.append(nb::make_tuple(held_name(kind), port));
            s.held_log.clear();
            return out;
        });
}

// A micro-benchmark's loop in C++ (the figure is the data path's, not the
// binding's): n copies of `pkt` arrive at `port` dt apart, every queue and
// delay line drained when due, transmits counted.  Returns the count.
uint64_t bench_switch(SwitchCore& s, int port, const Pkt& pkt, uint64_t n, double dt) {
    uint64_t sent = 0;
    auto keep = std::move(s.on_transmit);
    s.on_transmit = [&sent](int, Pkt&&, double) { sent++; };
    for (uint64_t i = 0; i < n; i++) {
        const double now = static_cast<double>(i) * dt;
        s.arrive(port, pkt, now);
        for (auto due = s.next_due(); due && *due <= now; due = s.next_due()) s.drain(now);
    }
    s.on_transmit = std::move(keep);
    return sent;
}

}  // namespace

void bind_switch(nb::module_& m) {
    bind_constants(m);
    bind_rng(m);
    bind_pipeline(m);
    bind_queue(m);
    bind_line(m);
    bind_core(m);
    m.def("bench_switch", &bench_switch, nb::arg("core"), nb::arg("port"), nb::arg("pkt"), nb::arg("n"),
          nb::arg("dt"));
}
