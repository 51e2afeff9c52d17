"""The simulation on the compiled packet engine (engine/, symphony_engine):
the same network as experiments/sim/network.py's, with every per-packet
part in C++ (hosts' NICs, wires, the switches' data path, the agents'
transport and DCQCN), and everything that runs once a step or once a run
Python as before (the ranks' loops, hosts.rank.Rank; the jitter
Injector; the control plane through the twin's own client and checks;
records and dumps).  SimRun picks it with engine="compiled".

What crosses between the two: a rank's send and its waits (once a step),
the transport's events for the records (retransmit, cnp, rate: read in a
batch each time the rank's loop resumes, and stamped with the time they
happened), the control plane's calls, and the schedule's changes.
"""

from __future__ import annotations

import dataclasses
import inspect
import weakref

import symphony_engine as E
from contract.tags import ECN_ECT0
from experiments.jitter.blaster import DISCARD_PORT, IP_UDP_HEADERS
from experiments.sim.compiled_switch import CompiledSwitch, init_key, ip
from experiments.sim.engine import Engine
from experiments.sim.network import CROSS_SOURCE_PORT, SimNetwork
from hosts import dcqcn
from hosts.transport import TransportTimeout
from hosts.udp.params import FaultParams
from hosts.udp.receiver import Discarded

ENGINES = ("compiled", "python")
DEFAULT_ENGINE = "compiled"


def make_engine(kind: str):
    """The clock of a run on engine `kind` (ENGINES)."""
    if kind not in ENGINES:
        raise ValueError(f"simulation engine must be one of {', '.join(ENGINES)}, got {kind!r}")
    return E.Engine() if kind == "compiled" else Engine()


def network_class(kind: str) -> type[SimNetwork]:
    return CompiledNetwork if kind == "compiled" else SimNetwork


class WorldSwitchControl(CompiledSwitch):
    """A switch of the compiled world as the network's code drives it: the
    control plane's methods (CompiledSwitch) and the wire's settings."""

    def set_delay(self, port: int, delay_s: float) -> None:
        self.core.set_delay(port, delay_s)

    def rate_changed(self, port: int) -> None:
        self.core.rate_changed(port)

    def has_line(self, direction: str, port: int) -> bool:
        return port in self.netem[direction]


class CompiledHost:
    """A host of the compiled world, with what the network's code and the
    transports ask of a host."""

    def __init__(self, world: E.World, h, rate_bps: float | None):
        self.world = world
        self.name = h.name
        self.ip = h.ip
        self.core = world.add_host(h.name, ip(h.ip), rate_bps)

    def set_rate_bps(self, bps: float) -> None:
        self.core.set_rate_bps(bps)

    def set_delay(self, port: int, delay_s: float) -> None:
        self.core.delay_s = delay_s

    @property
    def stats(self) -> dict:
        return self.core.stats


class CompiledNetwork(SimNetwork):
    """SimNetwork with the compiled world's nodes (module docstring)."""

    def __init__(self, engine: E.Engine, plan):
        self.world = E.World(engine)
        super().__init__(engine, plan)

    @property
    def transport(self):
        return CompiledTransport

    def make_switch(self, name: str, ports: dict[int, str], queue_depth: int, seed: int) -> WorldSwitchControl:
        core = self.world.add_switch(name, list(ports.items()), queue_depth, init_key(seed))
        return WorldSwitchControl(name, ports, queue_depth, seed, core=core)

    def make_host(self, h, arp: dict[str, str], rate_bps: float | None) -> CompiledHost:
        return CompiledHost(self.world, h, rate_bps)

    def _connect(self, a: str, port_a: int, b: str, port_b: int) -> None:
        # a link is made once, both directions (SimNetwork calls each direction)
        if a in self.hosts:
            self.world.link_host(self.hosts[a].core, self.switches[b].core, port_b)
        elif b in self.switches and (b, port_b) > (a, port_a):
            self.world.link_switches(self.switches[a].core, port_a, self.switches[b].core, port_b)

    def cross(self) -> CompiledCross:
        return CompiledCross(self)

    def frames_sent(self) -> int:
        return self.world.frames_sent()


class CompiledCross:
    """SimCross on the compiled world: the blaster's datagrams from its
    host's NIC, each at its own time."""

    def __init__(self, net: CompiledNetwork):
        self.net = net
        self.active: dict[int, E.CrossFlow] = {}

    def start(self, ev: dict) -> None:
        p = ev["params"]
        host = self.net.hosts[ev["src"]]
        frame = E.Pkt()
        frame.src_ip, frame.dst_ip = ip(host.ip), ip(p["dst_ip"])
        frame.sport, frame.dport = CROSS_SOURCE_PORT, DISCARD_PORT
        frame.tos = ECN_ECT0 if p.get("ect") else 0
        frame.len = E.HEADERS + max(0, p["packet_bytes"] - IP_UDP_HEADERS)
        end = self.net.engine.now + (ev["end_s"] - ev["start_s"])
        interval = p["packet_bytes"] * 8 / (p["rate_mbit"] * 1e6)
        self.active[ev["id"]] = self.net.world.start_cross(host.core, frame, end, interval)

    def stop(self, ev_id: int) -> None:
        flow = self.active.pop(ev_id, None)
        if flow is not None:
            flow.stop()

    def running(self) -> list[int]:
        return [i for i, f in self.active.items() if not f.stopped]


def weak(fn):
    """fn (a bound method) through a weak reference to its object: the
    compiled world holds what it is given, but the garbage collector sees
    nothing of the world's, so a strong reference back to a rank or its
    transport would make a cycle no collection breaks (a world kept for
    every run of a batch)."""
    if not inspect.ismethod(fn):
        return fn
    ref = weakref.WeakMethod(fn)
    return lambda *args: ref()(*args)


def rate_control(rp, now: float):
    """The compiled twin of a rank's reaction point (hosts.rank.rate_control's)."""
    if isinstance(rp, dcqcn.FixedRate):
        return E.FixedRate(rp.rate_bps)
    return E.ReactionPoint(E.DcqcnParams(**dataclasses.asdict(rp.params)), now)


class CompiledTransport:
    """experiments/sim/host.py's SimTransport on the compiled world: the
    Transport protocol and the rank's blocking calls as callbacks, over a
    compiled Endpoint on the host's ports (engine/src/transport.hpp)."""

    name = "udp"

    def __init__(self, *, job: int, rank: int, ips: list[str], data_port: int, params, recv_len, log,
                 rp=None, np_=None, faults: FaultParams | None = None, host: CompiledHost, engine: E.Engine,
                 keep: bool = True, stamp=None):
        if faults is not None and faults.active:
            raise ValueError("the simulation does not inject receive faults ([faults] is for the agent's tests)")
        n = len(ips)
        pred, succ = (rank - 1) % n, (rank + 1) % n
        self.engine, self.log, self.stamp, self.keep = engine, log, stamp, keep
        self.ep = E.Endpoint(job=job, rank=rank, pred=(pred, ips[pred]), succ=(succ, ips[succ]),
                             data_port=data_port, params=E.UdpParams(**dataclasses.asdict(params)),
                             recv_len=weak(recv_len), rp=rate_control(rp or dcqcn.FixedRate(None), engine.now),
                             np_=E.NotificationPoint(np_.cnp_interval_s if np_ is not None else None),
                             max_ahead=n + 1, keep=keep, ip=ips[rank])
        self.c = host.world.add_transport(host.core, self.ep, weak(self._ready))
        self.where = f"{host.name}: UDP port {data_port} or {data_port + 1}"
        self.resume = None

    # ---- the Transport protocol -------------------------------------------------
    @property
    def counters(self) -> dict:
        return self.ep.counters

    def lateness(self) -> dict:
        return self.ep.lateness()

    def open(self) -> None:
        if not self.c.open():
            raise OSError(98, f"{self.where} is taken")

    def close(self) -> None:
        self.flush()
        self.c.close()

    def send(self, step: int, payload) -> None:
        if self.keep:
            self.c.send(step, bytes(payload))
        else:
            self.c.send(step, len(payload))

    # ---- the rank's blocking calls, as callbacks ------------------------------------
    def await_step(self, step: int, deadline: float, resume) -> None:
        self.resume = resume
        self.c.await_step(step, deadline)

    def linger(self, idle_s: float, deadline: float, resume) -> None:
        self.resume = resume
        self.c.linger(idle_s, deadline)

    def _ready(self, code: int) -> None:
        """The compiled transport's word on the wait (transport.hpp's codes)."""
        self.flush()
        resume, self.resume = self.resume, None
        if code == E.Transport.STEP_DONE:
            resume(self.c.taken() if self.keep else Discarded(self.c.taken_total), None)
        elif code == E.Transport.TIMED_OUT:
            resume(None, TransportTimeout(self.ep.waiting_on(self.c.waited_step)))
        else:
            resume(None, None)

    def flush(self) -> None:
        """The transport's events since the last flush, into the rank's
        records at the times they happened."""
        stamp = self.stamp
        try:
            for kind, step, t, fields in self.ep.drain_log():
                stamp.at = t
                self.log(kind, step, **fields)
        finally:
            stamp.at = None
