// The clock as Python sees it: Python callables as events (a rank's
// resume, the injector's ticks, the progress watch) beside the compiled
// parts' own, and the signal check that lets Ctrl-C end a long run.
#pragma once

#include <nanobind/nanobind.h>

#include <utility>

#include "loop.hpp"

namespace sym {

namespace nb = nanobind;

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

    void at(double t, nb::object fn, nb::args args) { call_at(t, std::move(fn), nb::tuple(args)); }
    void call_at(double t, nb::object fn, nb::tuple args) {
        engine.at(t, &calls, calls.put(std::move(fn), std::move(args)));
    }
    void at_deadline(double t, nb::object fn, nb::args args) {
        engine.at_deadline(t, &calls, calls.put(std::move(fn), nb::tuple(args)));
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

}  // namespace sym
