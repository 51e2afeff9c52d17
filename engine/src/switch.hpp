// One switch's data path on descriptors: topologies/switch/twin/core.py's
// SwitchCore rule for rule (ingress delay line -> pipeline ingress -> the
// egress port's queue, drop-tail -> egress with the depth read at the
// frame's delivery time -> queue -> egress delay line -> out), its per-port
// counters and settings.
//
// Where the Python's subclass says what a frame leaving the switch becomes
// (transmit) and wakes what holds a frame (held), a world either subclasses
// and overrides the two virtuals or sets on_transmit / on_held; with
// neither, collect(true) keeps both in lists (tests).  `tx` counts here,
// where the simulation's Python subclass counts it (experiments/sim/switch.py).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "delayline.hpp"
#include "packet.hpp"
#include "pipeline.hpp"
#include "queue.hpp"

namespace sym {

// what holds a frame: a port's queue, or its delay line (core.py's kinds)
enum class Held : uint8_t { Queue = 0, Ingress = 1, Egress = 2 };
enum class Dir : uint8_t { Egress = 0, Ingress = 1 };   // core.DIRECTIONS

struct PortStats { uint64_t rx = 0, tx = 0, queue_drops = 0, tx_errors = 0; };

struct Port {
    int number = 0;
    std::string name;
    EgressQueue queue;
    PortStats stats;
    std::unique_ptr<DelayLine> line[2];          // by Dir
    std::optional<double> delivered, served;
};

// bmv2.is_ctrl_frame on a descriptor: at most CTRL_FRAME_BYTES and not ECN-capable
constexpr uint32_t CTRL_FRAME_BYTES = 128;
inline bool is_ctrl(const Pkt& p) { return 15 < p.len && p.len <= CTRL_FRAME_BYTES && (p.tos & 3) == 0; }

class SwitchCore {
public:
    // core.py's SHORT_QUEUE is the process loop's; DELIVERY_SLACK_S the data path's
    static constexpr double DELIVERY_SLACK_S = 1e-6;

    SwitchCore(std::string name, const std::vector<std::pair<int, std::string>>& ports, int64_t queue_depth,
               const std::vector<uint32_t>& seed_key);
    SwitchCore(const SwitchCore&) = delete;
    SwitchCore& operator=(const SwitchCore&) = delete;
    virtual ~SwitchCore() = default;

    // --- settings (one port each; Python expands "every port") -----------------
    void set_queue_depth(int port, int64_t depth) { port_at(port).queue.set_depth(depth); }
    void set_queue_rate(int port, std::optional<double> pps) { port_at(port).queue.set_rate(pps); }
    void set_queue_rate_bps(int port, std::optional<double> bps) { port_at(port).queue.set_rate_bps(bps); }
    void set_ctrl_lane(int port, bool on) { port_at(port).queue.set_ctrl_lane(on); }
    // core.set_netem for one port: an existing line takes the new parameters,
    // else an active one is made with `key` (its seed string's init key)
    void set_netem(int port, Dir dir, const NetemSpec& spec, const std::vector<int32_t>& table,
                   const std::vector<uint32_t>& key);
    void reset_state();

    // --- data path ----------------------------------------------------------------
    void arrive(int port, Pkt pkt, double now);
    void forward(int port, Pkt pkt, double now);
    void leave(int port, Pkt pkt, double now);
    void drain(double now);
    void drain_queue(int port, double now);
    void drain_line(Dir dir, int port, double now);
    std::optional<double> due(Held kind, int port) const;
    std::optional<double> next_due() const;

    // --- hooks ----------------------------------------------------------------------
    std::function<void(int port, Pkt&& pkt, double now)> on_transmit;
    std::function<void(Held kind, int port)> on_held;
    void collect(bool on) { collecting_ = on; }
    std::vector<std::tuple<int, Pkt, double>> transmitted;   // collect(true), no hook set
    std::vector<std::pair<Held, int>> held_log;

    // --- state for dumps and worlds ---------------------------------------------------
    const std::string name;
    Pipeline pipeline;
    uint64_t no_port_drops = 0;
    std::vector<int> port_numbers() const;
    bool has_port(int port) const { return port >= 0 && port < static_cast<int>(index_.size()) && index_[port] >= 0; }
    Port& port_at(int port);
    const Port& port_at(int port) const;
    const std::vector<int>& line_ports(Dir dir) const { return line_order_[static_cast<int>(dir)]; }

protected:
    // a frame leaves the switch on `port` (tx already counted)
    virtual void transmit(int port, Pkt&& pkt, double now);
    // a queue or delay line of `port` took a frame
    virtual void held(Held kind, int port);

private:
    int64_t queue_depth_;
    std::vector<std::unique_ptr<Port>> ports_;       // in the order given
    std::vector<int> index_;                         // port number -> index into ports_, -1 none
    std::vector<int> line_order_[2];                 // ports with a line, in the order made
    std::vector<Pkt> scratch_;                       // frames popped, reused between drains
    bool collecting_ = false;

    double delivery(Port& in, const Pkt& pkt, double now);
    void send(Port& p, Pkt&& pkt, double now);
    std::vector<Pkt> take_scratch() { std::vector<Pkt> v; v.swap(scratch_); return v; }
    void give_scratch(std::vector<Pkt>& v) { v.clear(); if (v.capacity() > scratch_.capacity()) scratch_.swap(v); }
};

}  // namespace sym
