// The simulated network's data path, as experiments/sim's Python world
// (host.py's SimHost, switch.py's SimSwitch, network.py's SimCross and the
// wires between them), on the compiled clock and descriptors.  Each part
// schedules the same events in the same order as its Python twin, so the
// two engines run a scenario alike (tests/engine hold them together).
#pragma once

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "loop.hpp"
#include "packet.hpp"
#include "queue.hpp"
#include "switch.hpp"

namespace sym {

// Whatever a wire delivers to: a host or a switch.
struct Node {
    virtual ~Node() = default;
    virtual void receive(uint32_t port, Pkt&& pkt) = 0;
};

// One direction of a link.  A frame arrives at the time the Python gives
// its own event (engine.at(t, peer.receive, port, frame)) and in the same
// order among equal times, but only the first frame in flight has an event
// in the heap: frames on a wire arrive in the order they left, so the next
// one's event is pushed as the first arrives, with the place in the order
// it took when it left (Engine::reserve).  A heap of a few events a wire,
// not one a frame in flight, is what keeps a large network's events cheap.
// A frame that would overtake one ahead of it (the link's delay cut while
// frames are in flight) gets an event of its own.
class Wire : public Handler {
public:
    Node* peer = nullptr;
    uint32_t peer_port = 0;

    void carry(Engine& engine, double t, Pkt&& pkt) {
        if (t < engine.now) t = engine.now;          // as Engine::at
        uint64_t seq = engine.reserve();
        if (!fifo_.empty() && t < fifo_.back().t) {
            engine.at_seq(t, seq, this, overtaking_.put(std::move(pkt)), OVERTAKING);
            return;
        }
        fifo_.push_back(Flying{t, seq, std::move(pkt)});
        if (fifo_.size() == 1) engine.at_seq(t, seq, this, 0, FIRST);
    }
    void fire(Engine& engine, uint32_t a, uint32_t b) override {
        if (b == OVERTAKING) {
            peer->receive(peer_port, overtaking_.take(a));
            return;
        }
        Pkt pkt = fifo_.pop_front().pkt;
        if (!fifo_.empty()) engine.at_seq(fifo_.front().t, fifo_.front().seq, this, 0, FIRST);
        peer->receive(peer_port, std::move(pkt));
    }

private:
    static constexpr uint32_t FIRST = 0, OVERTAKING = 1;
    struct Flying {
        double t;
        uint64_t seq;
        Pkt pkt;
    };
    Ring<Flying> fifo_;          // no allocation a few frames, as a deque's blocks take
    Slab<Pkt> overtaking_;
};

// A host's UDP port, taken by a transport (its data or control port).
struct Listener {
    virtual ~Listener() = default;
    virtual void on_packet(const Pkt& pkt, double now) = 0;
};

struct HostStats { uint64_t tx = 0, rx = 0, nic_drops = 0, no_listener = 0, not_udp = 0; };

// host.py's SimHost: a NIC (an egress queue at the link's rate,
// HOST_QUEUE_PKTS deep) towards its one switch port, and its listeners.
class Host : public Node, public Waker {
public:
    static constexpr int64_t HOST_QUEUE_PKTS = 1000;

    Host(Engine& engine, std::string name, uint32_t ip, std::optional<double> rate_bps,
         int64_t depth = HOST_QUEUE_PKTS)
        : engine(engine), name(std::move(name)), ip(ip), nic(depth) {
        nic.set_rate_bps(rate_bps);
    }

    void send(Pkt&& pkt) {
        if (!nic.room()) {
            stats.nic_drops++;
            return;
        }
        nic.push(std::move(pkt), engine.now);
        wake_at(engine, *nic.deadline());
    }
    void wake(Engine& e, double now) override {
        popped_.clear();
        nic.pop_due(now, popped_);
        for (Pkt& p : popped_) {
            stats.tx++;
            out.carry(e, now + nic.in_flight_s(p) + delay_s, std::move(p));
        }
        if (auto d = nic.deadline()) wake_at(e, *d);
    }
    void receive(uint32_t, Pkt&& pkt) override {
        stats.rx++;
        if (pkt.proto != PROTO_UDP) {
            stats.not_udp++;
            return;
        }
        auto it = listeners.find(pkt.dport);
        if (it == listeners.end()) {
            stats.no_listener++;
            return;
        }
        it->second->on_packet(pkt, engine.now);
    }
    void set_rate_bps(double bps) {
        nic.set_rate_bps(bps);
        wake_at(engine, engine.now);
    }

    Engine& engine;
    const std::string name;
    const uint32_t ip;
    EgressQueue nic;
    Wire out;
    double delay_s = 0.0;        // the wire's propagation delay
    HostStats stats;
    std::unordered_map<uint16_t, Listener*> listeners;

private:
    std::vector<Pkt> popped_;
};

// switch.py's SimSwitch: the switch core with a wire at each port and each
// queue and delay line woken exactly when it has something due.
class WorldSwitch : public SwitchCore {
public:
    WorldSwitch(Engine& engine, std::string name, const std::vector<std::pair<int, std::string>>& ports,
                int64_t queue_depth, const std::vector<uint32_t>& seed_key);

    Wire& wire(int port) { return *slot(port).wire; }
    Node* node() { return &as_node_; }
    void set_delay(int port, double s) { slot(port).delay_s = s; }
    void rate_changed(int port) { held(Held::Queue, port); }

protected:
    void transmit(int port, Pkt&& pkt, double now) override;
    void held(Held kind, int port) override;

private:
    struct PortWaker : Waker {
        WorldSwitch* sw = nullptr;
        Held kind = Held::Queue;
        int port = 0;
        void wake(Engine&, double now) override;
    };
    struct Slot {
        std::unique_ptr<Wire> wire;
        double delay_s = 0.0;
        PortWaker wakers[3];     // by Held
    };
    // a switch is a Node by way of this member: SwitchCore's arrive takes
    // the frame a wire delivers
    struct AsNode : Node {
        WorldSwitch* sw = nullptr;
        void receive(uint32_t port, Pkt&& pkt) override { sw->arrive(static_cast<int>(port), std::move(pkt), sw->engine_.now); }
    };
    Engine& engine_;
    AsNode as_node_;
    std::vector<std::unique_ptr<Slot>> slots_;      // by port number (null: no such port)
    Slot& slot(int port) { return *slots_.at(static_cast<size_t>(port)); }
};

// network.py's SimCross: a cross-traffic entry's datagrams from its host's
// NIC, each at its own time (blaster.packets_due).
class CrossFlow : public Handler {
public:
    CrossFlow(Host& host, Pkt frame, double start, double end, double interval)
        : host_(host), frame_(std::move(frame)), start_(start), end_(end), interval_(interval) {}
    void fire(Engine& engine, uint32_t, uint32_t) override;
    void stop() { stopped_ = true; }
    bool stopped() const { return stopped_; }

private:
    Host& host_;
    Pkt frame_;
    double start_, end_, interval_;
    int64_t sent_ = 0;
    bool stopped_ = false;
};

}  // namespace sym
