// Python face of the transport: DCQCN's reaction and notification points
// and the UDP endpoint, under the Python's names, so the tests drive them
// with the same event sequences as hosts/dcqcn_core.py and hosts/udp/.
// What runs per packet stays in C++; what this file builds (dicts, log
// tuples, bytes) is for the tests and for once-a-run reads.
#include <nanobind/nanobind.h>
#include <nanobind/stl/function.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cmath>

#include "dcqcn.hpp"
#include "endpoint.hpp"
#include "endpoint_errors.hpp"
#include "lateness.hpp"

namespace nb = nanobind;
using namespace nb::literals;
using namespace sym;

namespace {

// --- addresses: the Python passes dotted quads, the engine keeps integers ----

uint32_t ip_of(nb::handle h) {
    if (nb::isinstance<nb::int_>(h)) return nb::cast<uint32_t>(h);
    std::string s = nb::cast<std::string>(h);
    uint32_t ip = 0;
    int parts = 0;
    size_t i = 0;
    while (i <= s.size() && parts < 4) {
        size_t j = s.find('.', i);
        if (j == std::string::npos) j = s.size();
        int v = std::stoi(s.substr(i, j - i));
        if (v < 0 || v > 255) break;
        ip = ip << 8 | uint32_t(v);
        ++parts;
        i = j + 1;
    }
    if (parts != 4 || i != s.size() + 1) throw std::invalid_argument("not an IPv4 address: " + s);
    return ip;
}

// --- contract/lateness.py's record, from the C++ histogram ------------------

std::optional<double> quantile_s(const Lateness& h, double q) {
    if (!h.n) return std::nullopt;
    int64_t rank = std::max<int64_t>(1, int64_t(std::ceil(q * double(h.n))));
    int64_t seen = 0;
    for (size_t b = 0; b < h.counts.size(); ++b) {
        if (!h.counts[b]) continue;
        seen += h.counts[b];
        if (seen >= rank) {
            if (!b) return std::min(LATENESS_FLOOR_S, h.max);
            return std::min(LATENESS_FLOOR_S * std::pow(2.0, double(b) / LATENESS_PER_OCTAVE), h.max);
        }
    }
    return h.max;
}

// Lateness.as_dict, rounded by Python's own round() so the record is the
// Python's to the last digit
nb::dict lateness_record(const Lateness& h) {
    nb::object round = nb::module_::import_("builtins").attr("round");
    auto ms = [&](double s) { return round(s * 1e3, 4); };
    nb::dict out;
    out["n"] = h.n;
    out["max_ms"] = ms(h.max);
    out["mean_ms"] = h.n ? ms(h.total / double(h.n)) : nb::none();
    const std::pair<const char*, double> quantiles[] = {{"p50_ms", 0.5}, {"p90_ms", 0.9}, {"p99_ms", 0.99}};
    for (const auto& [name, q] : quantiles) {
        auto v = quantile_s(h, q);
        out[name] = v ? ms(*v) : nb::none();
    }
    nb::dict buckets;
    for (size_t b = 0; b < h.counts.size(); ++b)
        if (h.counts[b]) buckets[nb::str(std::to_string(b).c_str())] = h.counts[b];
    out["buckets"] = buckets;
    return out;
}

// --- the endpoint's records as the Python's log(kind, step, **fields) sees them

nb::tuple log_tuple(const LogRec& r) {
    nb::dict f;
    const char* kind = "rate";
    switch (r.kind) {
    case LogKind::Retransmit:
        kind = "retransmit";
        f["offset"] = int64_t(r.a);
        f["length"] = int64_t(r.b);
        f["why"] = WHY_NAMES[size_t(r.why)];
        break;
    case LogKind::CnpRx:
    case LogKind::CnpTx:
        kind = "cnp";
        f["dir"] = r.kind == LogKind::CnpRx ? "rx" : "tx";
        f["peer"] = int64_t(r.a);
        break;
    case LogKind::Rate:
        f["rc"] = r.a;
        f["rt"] = r.b;
        f["alpha"] = r.c;
        break;
    }
    return nb::make_tuple(kind, r.step, r.time, f);
}

nb::dict counters_dict(const Counters& c) {
    nb::dict d;
    for (size_t i = 0; i < N_COUNTERS; ++i)
        if (c.present[i]) d[COUNTER_NAMES[i]] = c.value[i];
    return d;
}

// The SACK bitmap as the Python's integer (bit j = packet cum_index + 1 + j)
nb::object sack_int(const Pkt& p) {
    nb::object value = nb::int_(0);
    const auto* sack = p.sack();
    if (!sack) return value;
    for (size_t w = sack->size(); w-- > 0;)
        value = (value << nb::int_(64)) | nb::int_((*sack)[w]);
    return value;
}

nb::object payload_of(const Pkt& p) {
    const auto* chunk = p.chunk();
    if (!chunk) return nb::none();
    size_t end = std::min(chunk->size(), size_t(p.offset) + p.length);
    size_t off = std::min(size_t(p.offset), end);
    return nb::bytes(reinterpret_cast<const char*>(chunk->data()) + off, end - off);
}

// An endpoint made from Python: its recv_len is a Python callable, held
// here where the garbage collector can see it (a callable that refers back
// to the endpoint's owner would otherwise make a cycle it cannot break).
struct PyEndpoint : Endpoint {
    nb::object recv_len_fn;

    PyEndpoint(const EndpointConfig& c, nb::object fn, std::shared_ptr<RateControl> rp,
               std::shared_ptr<NotificationPoint> np)
        : Endpoint(c, RecvLen{}, std::move(rp), std::move(np)), recv_len_fn(std::move(fn)) {
        receiver.recv_len = [this](int64_t step) -> std::optional<int64_t> {
            if (!recv_len_fn.is_valid()) return std::nullopt;
            nb::object r = recv_len_fn(step);
            if (r.is_none()) return std::nullopt;
            return nb::cast<int64_t>(r);
        };
    }
};

int endpoint_traverse(PyObject* self, visitproc visit, void* arg) {
    Py_VISIT(Py_TYPE(self));
    if (!nb::inst_ready(self)) return 0;
    Py_VISIT(nb::inst_ptr<PyEndpoint>(self)->recv_len_fn.ptr());
    return 0;
}

int endpoint_clear(PyObject* self) {
    nb::inst_ptr<PyEndpoint>(self)->recv_len_fn.reset();
    return 0;
}

PyType_Slot endpoint_slots[] = {
    {Py_tp_traverse, reinterpret_cast<void*>(endpoint_traverse)},
    {Py_tp_clear, reinterpret_cast<void*>(endpoint_clear)},
    {0, nullptr},
};

// --- bindings -----------------------------------------------------------------

void bind_dcqcn(nb::module_& m) {
    nb::class_<DcqcnParams>(m, "DcqcnParams")
        .def(
            "__init__",
            [](DcqcnParams* t, double line_rate_bps, double min_rate_bps, double g, double rate_on_first_cnp,
               double alpha_period_s, double decrease_period_s, double increase_period_s,
               std::optional<int64_t> byte_counter_bytes, int64_t fast_recovery_steps, double r_ai_bps,
               double r_hai_bps, double cnp_interval_s, bool clamp_target_rate) {
                new (t) DcqcnParams{line_rate_bps, min_rate_bps, g, rate_on_first_cnp, alpha_period_s,
                                    decrease_period_s, increase_period_s, byte_counter_bytes,
                                    fast_recovery_steps, r_ai_bps, r_hai_bps, cnp_interval_s,
                                    clamp_target_rate};
            },
            "line_rate_bps"_a, "min_rate_bps"_a, "g"_a, "rate_on_first_cnp"_a, "alpha_period_s"_a,
            "decrease_period_s"_a, "increase_period_s"_a, "byte_counter_bytes"_a.none(),
            "fast_recovery_steps"_a, "r_ai_bps"_a, "r_hai_bps"_a, "cnp_interval_s"_a,
            "clamp_target_rate"_a = false)
        .def_ro("line_rate_bps", &DcqcnParams::line_rate_bps)
        .def_ro("min_rate_bps", &DcqcnParams::min_rate_bps)
        .def_ro("g", &DcqcnParams::g)
        .def_ro("byte_counter_bytes", &DcqcnParams::byte_counter_bytes)
        .def_ro("fast_recovery_steps", &DcqcnParams::fast_recovery_steps)
        .def_ro("cnp_interval_s", &DcqcnParams::cnp_interval_s);

    nb::class_<RateControl>(m, "RateControl")
        .def_prop_ro("rate_bps", [](const RateControl& r) { return r.rate_bps; })
        .def_prop_ro("target_bps", [](const RateControl& r) { return r.target_bps; })
        .def_prop_ro("alpha", [](const RateControl& r) { return r.alpha; })
        .def("on_cnp", &RateControl::on_cnp, "now"_a)
        .def("advance", &RateControl::advance, "now"_a)
        .def("on_bytes_sent", &RateControl::on_bytes_sent, "n"_a, "now"_a)
        .def("next_event_time", &RateControl::next_event_time)
        .def("state", [](const RateControl& r) {
            nb::dict d;
            d["rc"] = r.rate_bps;
            d["rt"] = r.target_bps;
            d["alpha"] = r.alpha;
            return d;
        });

    nb::class_<ReactionPoint, RateControl>(m, "ReactionPoint")
        .def(nb::init<const DcqcnParams&, double>(), "params"_a, "now"_a)
        .def_ro("params", &ReactionPoint::params)
        .def_ro("cnps", &ReactionPoint::cnps)
        .def_ro("decreases", &ReactionPoint::decreases)
        .def_ro("increases", &ReactionPoint::increases)
        .def_ro("late_calls", &ReactionPoint::late_calls);

    // FixedRate(None): no pacing, held as rate 0 (the sender tests `if rate`)
    nb::class_<FixedRate, RateControl>(m, "FixedRate")
        .def("__init__", [](FixedRate* t, std::optional<double> rate) { new (t) FixedRate(rate.value_or(0.0)); },
             "rate_bps"_a.none());

    nb::class_<NotificationPoint>(m, "NotificationPoint")
        .def(nb::init<std::optional<double>>(), "cnp_interval_s"_a.none())
        .def("on_data", &NotificationPoint::on_data, "flow_key"_a, "ce"_a, "now"_a)
        .def_ro("cnp_interval_s", &NotificationPoint::cnp_interval_s)
        // the Python's dicts: a key appears with its first packet, mark, CNP
        .def_prop_ro("packets", [](const NotificationPoint& p) {
            nb::dict d;
            for (const auto& f : p.flows) d[nb::int_(f.key)] = f.packets;
            return d;
        })
        .def_prop_ro("ce_packets", [](const NotificationPoint& p) {
            nb::dict d;
            for (const auto& f : p.flows)
                if (f.ce_packets) d[nb::int_(f.key)] = f.ce_packets;
            return d;
        })
        .def_prop_ro("cnps", [](const NotificationPoint& p) {
            nb::dict d;
            for (const auto& f : p.flows)
                if (f.cnps) d[nb::int_(f.key)] = f.cnps;
            return d;
        });
}

void bind_endpoint(nb::module_& m) {
    nb::class_<UdpParams>(m, "UdpParams")
        .def(
            "__init__",
            [](UdpParams* t, int64_t payload_bytes, double rto_ms, int64_t window_packets, int64_t ack_every,
               double ack_delay_ms, int64_t burst_packets, double rto_max_ms) {
                new (t) UdpParams{payload_bytes, rto_ms, window_packets, ack_every, ack_delay_ms, burst_packets,
                                  rto_max_ms};
            },
            "payload_bytes"_a = 1400, "rto_ms"_a = 50.0, "window_packets"_a = 1024, "ack_every"_a = 8,
            "ack_delay_ms"_a = 10.0, "burst_packets"_a = 8, "rto_max_ms"_a = 1000.0)
        .def_ro("payload_bytes", &UdpParams::payload_bytes)
        .def_ro("window_packets", &UdpParams::window_packets);

    // The endpoint's methods on the C++ class itself, so the world's
    // bindings take a Python-made endpoint as an Endpoint&; the type made
    // from Python adds only its constructor and what the GC needs.
    nb::class_<Endpoint>(m, "EndpointCore")
        // the ring's side
        .def("start_send",
             [](Endpoint& e, int64_t step, nb::bytes data, double now) {
                 const auto* p = static_cast<const uint8_t*>(data.data());
                 auto chunk = std::make_shared<const std::vector<uint8_t>>(p, p + data.size());
                 e.start_send(step, chunk, int64_t(data.size()), now);
             },
             "step"_a, "payload"_a, "now"_a)
        .def("start_send",
             [](Endpoint& e, int64_t step, int64_t length, double now) { e.start_send(step, nullptr, length, now); },
             "step"_a, "length"_a, "now"_a)
        .def("send_done", &Endpoint::send_done, "step"_a)
        .def("sent_all", &Endpoint::sent_all, "step"_a)
        .def("finish_send", &Endpoint::finish_send, "step"_a)
        .def("step_complete", &Endpoint::step_complete, "step"_a)
        .def("recv_done", &Endpoint::recv_done, "step"_a)
        .def("reap", &Endpoint::reap)
        .def("quiet_at", &Endpoint::quiet_at, "since"_a, "idle_s"_a)
        // bytes when the receiver keeps data, else the step's length (the
        // Python's Discarded carries only that)
        .def("take",
             [](Endpoint& e, int64_t step) -> nb::object {
                 int64_t total = 0;
                 std::vector<uint8_t> buf = e.take(step, &total);
                 if (!e.cfg.keep) return nb::int_(total);
                 return nb::bytes(reinterpret_cast<const char*>(buf.data()), buf.size());
             },
             "step"_a)
        .def_prop_ro("last_data", &Endpoint::last_data)
        // packets
        .def("on_data", &Endpoint::on_data, "pkt"_a, "now"_a)
        .def("on_ctrl", &Endpoint::on_ctrl, "pkt"_a, "now"_a)
        // time
        .def("service", &Endpoint::service, "now"_a)
        .def("next_wakeup", &Endpoint::next_wakeup, "now"_a)
        .def("waiting_on",
             [](const Endpoint& e, int64_t step) {
                 WaitingOn w = e.waiting_on(step);
                 nb::dict d;
                 d["waiting_for"] = w.for_data ? "data" : "send";
                 d["peer"] = w.peer;
                 d["peer_ip"] = w.peer_ip;
                 d["step"] = w.step;
                 d["what"] = w.what;
                 return d;
             },
             "step"_a)
        // what it produced, drained (without a hook set in C++, packets wait here)
        .def("drain_out",
             [](Endpoint& e) {
                 std::vector<Pkt> out;
                 out.swap(e.io.outbox);
                 return out;
             })
        .def("drain_log",
             [](Endpoint& e) {
                 nb::list out;
                 for (const LogRec& r : e.io.log) out.append(log_tuple(r));
                 e.io.log.clear();
                 return out;
             })
        .def_prop_ro("counters", [](const Endpoint& e) { return counters_dict(e.io.counters); })
        .def("lateness",
             [](const Endpoint& e) {
                 nb::dict d;
                 d["pacing"] = lateness_record(e.sender.late_pacing);
                 d["dcqcn_timer"] = lateness_record(e.sender.late_timer);
                 return d;
             })
        .def_prop_ro("rp", [](const Endpoint& e) { return e.sender.rp; })
        .def_prop_ro("np", [](const Endpoint& e) { return e.receiver.np; });

    nb::class_<PyEndpoint, Endpoint>(m, "Endpoint", nb::type_slots(endpoint_slots))
        .def(
            "__init__",
            [](PyEndpoint* t, uint16_t job, uint16_t rank, std::pair<int64_t, nb::object> pred,
               std::pair<int64_t, nb::object> succ, uint16_t data_port, const UdpParams& params,
               nb::object recv_len, std::shared_ptr<RateControl> rp, std::shared_ptr<NotificationPoint> np_,
               int64_t max_ahead, bool keep, nb::object ip) {
                EndpointConfig c;
                c.job = job;
                c.rank = rank;
                c.pred_rank = pred.first;
                c.pred_ip = ip_of(pred.second);
                c.succ_rank = succ.first;
                c.succ_ip = ip_of(succ.second);
                c.ip = ip.is_none() ? 0 : ip_of(ip);
                c.data_port = data_port;
                c.params = params;
                c.max_ahead = max_ahead;
                c.keep = keep;
                new (t) PyEndpoint(c, std::move(recv_len), std::move(rp), std::move(np_));
            },
            nb::kw_only(), "job"_a, "rank"_a, "pred"_a, "succ"_a, "data_port"_a, "params"_a, "recv_len"_a,
            "rp"_a.none() = nb::none(), "np_"_a.none() = nb::none(), "max_ahead"_a = 64, "keep"_a = true,
            "ip"_a.none() = nb::none());

    // what the descriptor's shared vectors hold, for the tests
    m.def("pkt_sack", &sack_int, "pkt"_a);
    m.def("pkt_payload", &payload_of, "pkt"_a);
    m.def("ip_int", [](nb::object ip) { return ip_of(ip); }, "ip"_a);
}

}  // namespace

void bind_transport(nb::module_& m) {
    nb::register_exception_translator([](const std::exception_ptr& p, void*) {
        try {
            std::rethrow_exception(p);
        } catch (const MissingStep& e) {
            PyErr_SetString(PyExc_KeyError, e.what());
        }
    });
    bind_dcqcn(m);
    bind_endpoint(m);
}
