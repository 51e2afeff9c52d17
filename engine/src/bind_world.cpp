// Python face of the world: the engine's clock with Python's Engine API
// (experiments/sim/engine.py: at(t, fn, *args), now, events, clock(),
// stop(), run(until), pending()), so what runs once a step or once a run
// (the ranks' loops, the jitter injector, the progress watch) schedules
// itself on the compiled clock as it does on the Python one.
#include <nanobind/nanobind.h>

#include "loop.hpp"

namespace nb = nanobind;
using namespace sym;

namespace {

// Python callables waiting on the clock, each in a slot its event names.
class PyCalls : public Handler {
public:
    uint32_t put(nb::object fn, nb::tuple args) { return calls_.put({std::move(fn), std::move(args)}); }
    void fire(Engine&, uint32_t a, uint32_t) override {
        auto [fn, args] = calls_.take(a);
        PyObject* r = PyObject_Call(fn.ptr(), args.ptr(), nullptr);
        if (!r) throw nb::python_error();
        Py_DECREF(r);
    }

    // the garbage collector's view: a callback that holds the engine (a
    // rank's bound method) makes a cycle only the collector can break
    int traverse(visitproc visit, void* arg) {
        int r = 0;
        calls_.each([&](auto& c) {
            if (!r && c.first.is_valid()) r = visit(c.first.ptr(), arg);
            if (!r && c.second.is_valid()) r = visit(c.second.ptr(), arg);
        });
        return r;
    }
    void clear() { calls_.clear(); }

private:
    Slab<std::pair<nb::object, nb::tuple>> calls_;
};

struct PyEngine {
    Engine engine;
    PyCalls calls;

    void at(double t, nb::object fn, nb::args args) {
        engine.at(t, &calls, calls.put(std::move(fn), nb::tuple(args)));
    }
    // Ctrl-C and SIGTERM (the runner's handler) reach a long run: the
    // loop asks for pending signals every Engine::POLL_EVENTS events
    void run(double until) {
        engine.run(until, [] {
            if (PyErr_CheckSignals() != 0) throw nb::python_error();
            return true;
        });
    }
};

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

}  // namespace

void bind_world(nb::module_& m) {
    nb::class_<PyEngine>(m, "Engine", nb::type_slots(engine_slots))
        .def(nb::init<>())
        .def_prop_ro("now", [](const PyEngine& e) { return e.engine.now; })
        .def_prop_ro("events", [](const PyEngine& e) { return e.engine.events; })
        .def("clock", [](const PyEngine& e) { return e.engine.now; })
        .def("at", &PyEngine::at, nb::arg("t"), nb::arg("fn"), nb::arg("args"))
        .def("stop", [](PyEngine& e) { e.engine.stop(); })
        .def("run", &PyEngine::run, nb::arg("until") = INF)
        .def("pending", [](const PyEngine& e) { return e.engine.pending(); });
}
