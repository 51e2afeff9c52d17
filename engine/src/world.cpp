#include "world.hpp"

namespace sym {

WorldSwitch::WorldSwitch(Engine& engine, std::string name, const std::vector<std::pair<int, std::string>>& ports,
                         int64_t queue_depth, const std::vector<uint32_t>& seed_key)
    : SwitchCore(std::move(name), ports, queue_depth, seed_key), engine_(engine) {
    as_node_.sw = this;
    for (const auto& [number, _] : ports) {
        if (static_cast<size_t>(number) >= slots_.size()) slots_.resize(number + 1);
        auto s = std::make_unique<Slot>();
        s->wire = std::make_unique<Wire>();
        for (int k = 0; k < 3; k++) {
            s->wakers[k].sw = this;
            s->wakers[k].kind = static_cast<Held>(k);
            s->wakers[k].port = number;
        }
        slots_[number] = std::move(s);
    }
}

// the frame's last bit is out now (the queue let it go serialised); the
// peer has it a propagation delay later (SimSwitch.transmit)
void WorldSwitch::transmit(int port, Pkt&& pkt, double now) {
    Slot& s = slot(port);
    double t = now + port_at(port).queue.in_flight_s(pkt) + s.delay_s;
    s.wire->carry(engine_, t, std::move(pkt));
}

void WorldSwitch::held(Held kind, int port) {
    if (auto due_at = due(kind, port)) slot(port).wakers[static_cast<int>(kind)].wake_at(engine_, *due_at);
}

void WorldSwitch::PortWaker::wake(Engine&, double now) {
    if (kind == Held::Queue)
        sw->drain_queue(port, now);
    else
        sw->drain_line(kind == Held::Ingress ? Dir::Ingress : Dir::Egress, port, now);
    sw->held(kind, port);
}

// blaster.packets_due: one at the start, then one every interval
static int64_t packets_due(double elapsed_s, double interval_s) {
    return static_cast<int64_t>(elapsed_s / interval_s) + 1;
}

void CrossFlow::fire(Engine& engine, uint32_t, uint32_t) {
    if (stopped_) return;
    if (engine.now >= end_) {
        stopped_ = true;
        return;
    }
    for (int64_t n = packets_due(engine.now - start_, interval_) - sent_; n > 0; n--) {
        Pkt copy = frame_;
        host_.send(std::move(copy));
        sent_++;
    }
    // the next datagram's time; a hair later if float rounding owes it
    // nothing yet at that instant
    double next = start_ + static_cast<double>(sent_) * interval_;
    engine.at(std::max(next, std::nextafter(engine.now, INF)), this);
}

}  // namespace sym
