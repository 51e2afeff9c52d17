"""The simulated network of a run plan: a SimHost per host, a SimSwitch per
switch, a wire per direction of every link, the control plane's own plan
installed through the twin's own control handler, and the two changes a
jitter schedule makes (set_link_rate, set_link_netem) with the meaning they
have in the emulation (topologies.network.link_control).  ``SimCross`` sends
a cross-traffic entry's datagrams as the blaster paces them.

A link's delay is its wires' propagation delay.  The twin holds it in a
delay line at each switch end (topologies.spec.netem.delay_points), which
does the same to a frame: a fixed delay draws nothing, keeps the order and
loses nothing (while fewer frames are in flight than netem's limit); the
wire costs no event of its own.  Where a netem entry adds jitter, loss or
reordering, the twin's own delay lines take the link over, as in the
emulation, until it ends.
"""

from __future__ import annotations

import math

from contract.tags import ECN_ECT0
from experiments.jitter.blaster import CROSS_SOURCE_PORT, DISCARD_PORT, IP_UDP_HEADERS, packets_due
from experiments.plan import RunPlan
from experiments.sim.engine import Engine
from experiments.sim.frames import Framer, ip_bytes
from experiments.sim.host import SimHost, SimTransport
from experiments.sim.switch import SimSwitch
from topologies.spec.netem import NetemParams, delay_points
from topologies.switch import controlplane as cp
from topologies.switch.twin.client import LocalTwinClient

TARGET = "sim"
RATE_UNIT = "bps"             # the twin's queues serialise by frame length (controlplane.rate_unit)


def port_name(node: str, port: int) -> str:
    return f"{node}-eth{port}"


def _bps(rate_mbit: float | None) -> float | None:
    return rate_mbit * 1e6 if rate_mbit else None


class SimNetwork:
    """The network of one plan (module docstring), built at once.  Its
    nodes come from ``make_switch`` and ``make_host``, which the compiled
    engine's network (experiments/sim/compiled.py) overrides; the rest (the
    control plane, what a jitter schedule changes, the records) is one
    piece of code for both."""

    transport = SimTransport            # a rank's transport on this network's hosts

    def __init__(self, engine: Engine, plan: RunPlan):
        topo = plan.topo
        self.engine = engine
        self.topo = topo
        self.target = TARGET
        self.switches = {s.name: self.make_switch(s.name, {p: port_name(s.name, p) for p in topo.ports(s.name)},
                                                  topo.queue_depth, plan.seed) for s in topo.switches}
        arp = cp.arp_entries(topo)
        self.hosts = {}
        for h in topo.hosts:
            (_, _, link), = topo.ports(h.name).values()
            self.hosts[h.name] = self.make_host(h, dict(arp[h.name]), _bps(link.rate_mbit))
        for link in topo.links:
            self._connect(link.node1, link.port1, link.node2, link.port2)
            self._connect(link.node2, link.port2, link.node1, link.port1)
        self.plans = cp.plan(topo, plan.placed, plan.symphony, plan.frame_bytes or cp.ASSUMED_PACKET_BYTES)
        self.clients = {name: LocalTwinClient(sw) for name, sw in self.switches.items()}
        for name, client in self.clients.items():
            cp.install(client, self.plans[name], plan.ecn, plan.symphony, RATE_UNIT)
        for link in topo.links:
            if link.delay_ms:
                self.set_link_netem(link.name)

    def make_switch(self, name: str, ports: dict[int, str], queue_depth: int, seed: int):
        return SimSwitch(self.engine, name, ports, queue_depth, seed)

    def make_host(self, h, arp: dict[str, str], rate_bps: float | None):
        return SimHost(self.engine, h.name, Framer(h.mac, h.ip, arp), rate_bps)

    def cross(self) -> SimCross:
        """The cross traffic's sender on this network (the Injector's `cross`)."""
        return SimCross(self)

    def _set_wire_delay(self, link: str, delay_s: float) -> None:
        spec = self.topo.link(link)
        self._node(spec.node1).set_delay(spec.port1, delay_s)
        self._node(spec.node2).set_delay(spec.port2, delay_s)

    def _node(self, name: str):
        return self.switches.get(name) or self.hosts[name]

    def _connect(self, a: str, port_a: int, b: str, port_b: int) -> None:
        peer = self._node(b)
        node = self._node(a)
        if isinstance(node, SimHost):
            node.connect(peer.receive, port_b)
        else:
            node.connect(port_a, peer.receive, port_b)

    # --- what a jitter schedule changes (the emulation's meaning) -----------------
    def set_link_rate(self, link: str, rate_mbit: float) -> None:
        """Squeeze or restore a link: the switch egress queue(s) of the link
        drain at the new rate; the host side (its NIC) is re-shaped."""
        if not isinstance(rate_mbit, (int, float)) or isinstance(rate_mbit, bool) or rate_mbit <= 0:
            raise ValueError(f"set_link_rate: rate must be a positive number of Mb/s, got {rate_mbit!r}")
        spec = self.topo.link(link)
        for node, port in ((spec.node1, spec.port1), (spec.node2, spec.port2)):
            if node in self.switches:
                cp.set_port_rate(self.clients[node], port, rate_mbit, RATE_UNIT)
                self.switches[node].rate_changed(port)
            else:
                self.hosts[node].set_rate_bps(rate_mbit * 1e6)

    def set_link_netem(self, link: str, delay_ms: float | None = None, jitter_ms: float = 0.0,
                       loss_pct: float = 0.0, distribution: str = "uniform", correlation_pct: float = 0.0,
                       reorder_pct: float = 0.0) -> None:
        """Delay (plus jitter), loss and reordering on a link, both directions,
        in the switches' delay lines; delay None: the link's own delay."""
        delay = self.topo.link(link).delay_ms if delay_ms is None else delay_ms
        p = NetemParams(delay, jitter_ms, loss_pct, distribution, correlation_pct, reorder_pct)
        fixed = p.delay_only
        self._set_wire_delay(link, delay / 1e3 if fixed else 0.0)
        lines = NetemParams() if fixed else p       # a fixed delay is the wire's (module docstring)
        for switch, port, direction in delay_points(self.topo, link):
            if fixed and not self.switches[switch].has_line(direction, port):
                continue
            self.clients[switch].set_netem(lines, port, direction)

    # --- records ------------------------------------------------------------------
    def dump_switches(self, out_dir) -> dict:
        return cp.write_dumps(self.clients, self.plans, self.target, out_dir)

    def port_stats(self) -> dict:
        """meta.json's switch_ports, as the emulated runner reads them from the twins."""
        return {name: sw.port_stats() for name, sw in sorted(self.switches.items())}

    def host_stats(self) -> dict:
        return {name: dict(h.stats) for name, h in self.hosts.items()}

    def frames_sent(self) -> int:
        """Frames that left a NIC or a switch port: the packets the run simulated, hop by hop."""
        return (sum(h.stats["tx"] for h in self.hosts.values())
                + sum(s["tx"] for sw in self.switches.values() for s in sw.stats.values()))


class SimCross:
    """Cross traffic (the ``cross`` jitter kind): the datagrams the blaster
    would send, from its source host's NIC, each at its own time
    (experiments.jitter.blaster.packets_due: no tick); the Injector's
    `cross`."""

    def __init__(self, net: SimNetwork):
        self.net = net
        self.active: dict[int, dict] = {}

    def start(self, ev: dict) -> None:
        p = ev["params"]
        host = self.net.hosts[ev["src"]]
        payload = bytes(max(0, p["packet_bytes"] - IP_UDP_HEADERS))
        frame = host.framer.udp(ip_bytes(p["dst_ip"]), CROSS_SOURCE_PORT, DISCARD_PORT,
                                ECN_ECT0 if p.get("ect") else 0, payload)
        now = self.net.engine.now
        flow = {"host": host, "frame": frame, "start": now, "end": now + (ev["end_s"] - ev["start_s"]),
                "interval": p["packet_bytes"] * 8 / (p["rate_mbit"] * 1e6), "sent": 0}
        self.active[ev["id"]] = flow
        self._send(ev["id"], flow)

    def _send(self, ev_id: int, flow: dict) -> None:
        if self.active.get(ev_id) is not flow:
            return                                  # stopped
        engine = self.net.engine
        if engine.now >= flow["end"]:
            self.active.pop(ev_id, None)
            return
        for _ in range(packets_due(engine.now - flow["start"], flow["interval"]) - flow["sent"]):
            flow["host"].send(flow["frame"])
            flow["sent"] += 1
        # the next datagram's time; a hair later if float rounding owes it
        # nothing yet at that instant
        nxt = flow["start"] + flow["sent"] * flow["interval"]
        engine.at(max(nxt, math.nextafter(engine.now, math.inf)), self._send, ev_id, flow)

    def stop(self, ev_id: int) -> None:
        self.active.pop(ev_id, None)

    def running(self) -> list[int]:
        return list(self.active)
