// host.py's SimTransport on the compiled clock: an Endpoint on a host's two
// UDP ports, its timers woken exactly when due, and what the rank's loop
// waits for (a step complete, the linger's quiet) told to the Python
// facade (experiments/sim/compiled.py) through one callable, ready(code):
// the rank's loop runs once a step, so it stays Python.
#pragma once

#include <nanobind/nanobind.h>

#include <cstdint>
#include <vector>

#include "endpoint.hpp"
#include "pyloop.hpp"
#include "world.hpp"

namespace sym {

class Transport : public Waker {
public:
    // what ready(code) says
    static constexpr int STEP_DONE = 0;     // the step awaited is complete: taken(), taken_total
    static constexpr int TIMED_OUT = 1;     // its deadline passed: waiting_on(step)
    static constexpr int QUIET = 2;         // the linger is over (quiet, or its deadline)

    Transport(PyEngine& py, Host& host, Endpoint& ep, nb::object ready)
        : ep(ep), py_(py), host_(host), ready_(std::move(ready)) {
        data_.t = ctrl_.t = deadline_.t = this;
        data_.ctrl = false;
        ctrl_.ctrl = true;
        ep.io.emit = [this](Pkt&& p) { host_.send(std::move(p)); };
    }
    ~Transport() override { close(); }

    // Transport.open/close: the host's ports are taken, then given back
    bool open();
    void close();
    // Transport.send, and the blocking calls as Python's await_step/linger
    void send(int64_t step, Chunk chunk, int64_t total) { ep.start_send(step, std::move(chunk), total, now()); }
    void await_step(int64_t step, double deadline);
    void linger(double idle_s, double deadline);
    // as await_step, but the step's data is all it waits for (nothing taken):
    // the flows harness's receivers, which send nothing
    void await_received(int64_t step, double deadline);

    void wake(Engine&, double now) override { service(now); }
    // SimTransport._service: what the socket loop does between selects (the
    // flows harness calls it after a send made outside a rank's loop)
    void service(double now);

    Endpoint& ep;
    std::vector<uint8_t> taken;              // the step that completed (keep), else empty
    int64_t taken_total = 0;
    int64_t waited_step = 0;                 // the step a TIMED_OUT was waiting for

private:
    enum class Wait : uint8_t { None, Step, Received, Linger };
    struct Port : Listener {
        Transport* t = nullptr;
        bool ctrl = false;
        void on_packet(const Pkt& pkt, double now) override {
            if (ctrl) t->ep.on_ctrl(pkt, now); else t->ep.on_data(pkt, now);
            t->service(now);
        }
    };
    struct Deadline : Handler {
        Transport* t = nullptr;
        void fire(Engine&, uint32_t token, uint32_t) override { t->deadline(token); }
    };

    PyEngine& py_;
    Host& host_;
    nb::object ready_;
    Port data_, ctrl_;
    Deadline deadline_;
    bool closed_ = true;
    Wait wait_ = Wait::None;
    uint32_t token_ = 0;                     // which wait a deadline event is for
    int64_t step_ = 0;
    double since_ = 0.0, idle_s_ = 0.0;

    double now() const { return py_.engine.now; }
    void deadline(uint32_t token);
    void wait_for(Wait kind, double deadline);
    void tell(int code) { ready_(code); }
    void tell_later(int code) { py_.call_at(now(), ready_, nb::make_tuple(code)); }
};

}  // namespace sym
