// Python face of the world: the engine's clock with Python's Engine API
// (experiments/sim/engine.py: at(t, fn, *args), at_deadline, now, events, clock(),
// stop(), run(until), pending()), so what runs once a step or once a run
// (the ranks' loops, the jitter injector, the progress watch) schedules
// itself on the compiled clock as it does on the Python one.
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <memory>
#include <vector>

#include "pyloop.hpp"
#include "transport.hpp"
#include "world.hpp"

namespace nb = nanobind;
using namespace sym;

namespace {

int engine_traverse(PyObject* self, visitproc visit, void* arg) {
    Py_VISIT(Py_TYPE(self));
    if (!nb::inst_ready(nb::handle(self))) return 0;
    return nb::inst_ptr<PyEngine>(nb::handle(self))->calls.traverse(visit, arg);
}

int engine_clear(PyObject* self) {
    nb::inst_ptr<PyEngine>(nb::handle(self))->calls.clear();
    return 0;
}

PyType_Slot engine_slots[] = {
    {Py_tp_traverse, (void*)engine_traverse},
    {Py_tp_clear, (void*)engine_clear},
    {0, nullptr}};

// The network of one run: its hosts, switches, transports and cross
// traffic, owned here so their addresses stay put while events name them.
struct World {
    explicit World(PyEngine& py) : py(py) {}
    World(const World&) = delete;
    World& operator=(const World&) = delete;
    PyEngine& py;
    std::vector<std::unique_ptr<Host>> hosts;
    std::vector<std::unique_ptr<WorldSwitch>> switches;
    std::vector<std::unique_ptr<Transport>> transports;
    std::vector<std::unique_ptr<CrossFlow>> cross;

    Host& add_host(std::string name, uint32_t ip, std::optional<double> rate_bps) {
        hosts.push_back(std::make_unique<Host>(py.engine, std::move(name), ip, rate_bps));
        return *hosts.back();
    }
    WorldSwitch& add_switch(std::string name, const std::vector<std::pair<int, std::string>>& ports,
                            int64_t depth, const std::vector<uint32_t>& seed_key) {
        switches.push_back(std::make_unique<WorldSwitch>(py.engine, std::move(name), ports, depth, seed_key));
        return *switches.back();
    }
    // a host's one link: both directions
    void link_host(Host& h, WorldSwitch& s, int port) {
        h.out.peer = s.node();
        h.out.peer_port = static_cast<uint32_t>(port);
        s.wire(port).peer = &h;
        s.wire(port).peer_port = 0;
    }
    void link_switches(WorldSwitch& a, int pa, WorldSwitch& b, int pb) {
        a.wire(pa).peer = b.node();
        a.wire(pa).peer_port = static_cast<uint32_t>(pb);
        b.wire(pb).peer = a.node();
        b.wire(pb).peer_port = static_cast<uint32_t>(pa);
    }
    Transport& add_transport(Host& h, Endpoint& ep, nb::object ready) {
        transports.push_back(std::make_unique<Transport>(py, h, ep, std::move(ready)));
        return *transports.back();
    }
    CrossFlow& start_cross(Host& h, const Pkt& frame, double end, double interval) {
        cross.push_back(std::make_unique<CrossFlow>(h, frame, py.engine.now, end, interval));
        CrossFlow& c = *cross.back();
        c.fire(py.engine, 0, 0);
        return c;
    }
    // frames that left a NIC or a switch port: every hop of every packet
    uint64_t frames_sent() const {
        uint64_t n = 0;
        for (const auto& h : hosts) n += h->stats.tx;
        for (const auto& s : switches)
            for (int p : s->port_numbers()) n += s->port_at(p).stats.tx;
        return n;
    }
};

nb::dict host_stats(const Host& h) {
    nb::dict d;
    d["tx"] = h.stats.tx;
    d["rx"] = h.stats.rx;
    d["nic_drops"] = h.stats.nic_drops;
    d["no_listener"] = h.stats.no_listener;
    d["not_udp"] = h.stats.not_udp;
    return d;
}

}  // namespace

void bind_world(nb::module_& m) {
    nb::class_<PyEngine>(m, "Engine", nb::type_slots(engine_slots))
        .def(nb::init<>())
        .def_prop_ro("now", [](const PyEngine& e) { return e.engine.now; })
        .def_prop_ro("events", [](const PyEngine& e) { return e.engine.events; })
        .def("clock", [](const PyEngine& e) { return e.engine.now; })
        .def("at", &PyEngine::at, nb::arg("t"), nb::arg("fn"), nb::arg("args"))
        .def("at_deadline", &PyEngine::at_deadline, nb::arg("t"), nb::arg("fn"), nb::arg("args"))
        .def("stop", [](PyEngine& e) { e.engine.stop(); })
        .def("run", &PyEngine::run, nb::arg("until") = INF)
        .def("pending", [](const PyEngine& e) { return e.engine.pending(); });

    constexpr auto ref = nb::rv_policy::reference_internal;
    nb::class_<Host>(m, "Host")
        .def_ro("name", &Host::name)
        .def_ro("ip", &Host::ip)
        .def_rw("delay_s", &Host::delay_s)
        .def("set_rate_bps", &Host::set_rate_bps, nb::arg("bps"))
        .def("send", [](Host& h, const Pkt& p) { Pkt c = p; h.send(std::move(c)); }, nb::arg("pkt"))
        .def_prop_ro("stats", &host_stats)
        .def_prop_ro("nic", [](Host& h) -> EgressQueue& { return h.nic; }, ref);
    nb::class_<WorldSwitch, SwitchCore>(m, "WorldSwitch")
        .def("set_delay", &WorldSwitch::set_delay, nb::arg("port"), nb::arg("delay_s"))
        .def("rate_changed", &WorldSwitch::rate_changed, nb::arg("port"));
    nb::class_<Transport>(m, "Transport")
        .def_ro_static("STEP_DONE", &Transport::STEP_DONE)
        .def_ro_static("TIMED_OUT", &Transport::TIMED_OUT)
        .def_ro_static("QUIET", &Transport::QUIET)
        .def("open", &Transport::open)
        .def("close", &Transport::close)
        .def("send",
             [](Transport& t, int64_t step, nb::bytes data) {
                 const auto* p = static_cast<const uint8_t*>(data.data());
                 t.send(step, std::make_shared<const std::vector<uint8_t>>(p, p + data.size()),
                        static_cast<int64_t>(data.size()));
             },
             nb::arg("step"), nb::arg("payload"))
        .def("send", [](Transport& t, int64_t step, int64_t length) { t.send(step, nullptr, length); },
             nb::arg("step"), nb::arg("length"))
        .def("await_step", &Transport::await_step, nb::arg("step"), nb::arg("deadline"))
        .def("linger", &Transport::linger, nb::arg("idle_s"), nb::arg("deadline"))
        .def("await_received", &Transport::await_received, nb::arg("step"), nb::arg("deadline"))
        .def("service", &Transport::service, nb::arg("now"))
        .def("taken", [](Transport& t) {
            nb::bytearray b(t.taken.data(), t.taken.size());
            std::vector<uint8_t>().swap(t.taken);
            return b;
        })
        .def_ro("taken_total", &Transport::taken_total)
        .def_ro("waited_step", &Transport::waited_step)
        .def_prop_ro("endpoint", [](Transport& t) -> Endpoint& { return t.ep; }, ref);
    nb::class_<CrossFlow>(m, "CrossFlow")
        .def("stop", &CrossFlow::stop)
        .def_prop_ro("stopped", &CrossFlow::stopped);
    nb::class_<World>(m, "World")
        // the engine must outlive the world: the network that makes both holds both
        .def(nb::init<PyEngine&>(), nb::arg("engine"))
        .def("add_host", &World::add_host, nb::arg("name"), nb::arg("ip"), nb::arg("rate_bps").none(), ref)
        .def("add_switch", &World::add_switch, nb::arg("name"), nb::arg("ports"), nb::arg("queue_depth"),
             nb::arg("seed_key"), ref)
        .def("link_host", &World::link_host, nb::arg("host"), nb::arg("switch"), nb::arg("port"))
        .def("link_switches", &World::link_switches)
        // the endpoint and `ready` live as long as the world
        .def("add_transport", &World::add_transport, nb::arg("host"), nb::arg("endpoint"), nb::arg("ready"), ref,
             nb::keep_alive<1, 3>())
        .def("start_cross", &World::start_cross, nb::arg("host"), nb::arg("frame"), nb::arg("end"),
             nb::arg("interval"), ref)
        .def("frames_sent", &World::frames_sent);
}
