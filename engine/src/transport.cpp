#include "transport.hpp"

namespace sym {

bool Transport::open() {
    const uint16_t data = ep.cfg.data_port, ctrl = static_cast<uint16_t>(data + 1);
    if (host_.listeners.count(data) || host_.listeners.count(ctrl)) return false;   // OSError 98 in Python
    host_.listeners[data] = &data_;
    host_.listeners[ctrl] = &ctrl_;
    closed_ = false;
    return true;
}

// as the agent's exit closes its sockets: nothing more is taken or sent
void Transport::close() {
    if (closed_) return;
    host_.listeners.erase(ep.cfg.data_port);
    host_.listeners.erase(static_cast<uint16_t>(ep.cfg.data_port + 1));
    closed_ = true;
    wait_ = Wait::None;
}

// SimTransport._service: what the socket loop does between selects
void Transport::service(double now) {
    if (closed_) return;
    ep.service(now);
    double t = ep.next_wakeup(now);
    if (wait_ == Wait::Step) {
        if (ep.step_complete(step_)) {
            wait_ = Wait::None;
            taken = ep.take(step_, &taken_total);     // taken now, as the Python's ep.take(...) is
            tell_later(STEP_DONE);
        }
    } else if (wait_ == Wait::Received) {
        if (ep.recv_done(step_)) {
            wait_ = Wait::None;
            tell_later(STEP_DONE);
        }
    } else if (wait_ == Wait::Linger) {
        double quiet = ep.quiet_at(since_, idle_s_);
        if (now >= quiet) {
            wait_ = Wait::None;
            tell_later(QUIET);
        } else {
            t = std::min(t, quiet);
        }
    }
    if (t < INF) wake_at(py_.engine, t);
}

void Transport::wait_for(Wait kind, double deadline) {
    wait_ = kind;
    py_.engine.at_deadline(deadline, &deadline_, ++token_);
    service(now());
}

void Transport::await_step(int64_t step, double deadline) {
    ep.reap();
    step_ = step;
    wait_for(Wait::Step, deadline);
}

void Transport::await_received(int64_t step, double deadline) {
    step_ = step;
    wait_for(Wait::Received, deadline);
}

void Transport::linger(double idle_s, double deadline) {
    since_ = now();
    idle_s_ = idle_s;
    wait_for(Wait::Linger, deadline);
}

// SimTransport._deadline: what is due at the deadline still counts
void Transport::deadline(uint32_t token) {
    if (wait_ == Wait::None || token != token_) return;
    service(now());
    if (wait_ == Wait::None || token != token_) return;
    Wait was = wait_;
    wait_ = Wait::None;
    waited_step = step_;
    tell(was == Wait::Linger ? QUIET : TIMED_OUT);
}

}  // namespace sym
