"""Point-to-point flows on the simulated network, for experiments on the
transport and DCQCN alone (no ring): N senders into one receiver through
one switch (an incast), each flow a message of its own, sent by the
agents' own transport (SimTransport: the Endpoint, its pacer and DCQCN) and
carried by the twin's switch.  The DCQCN comparison with HPCC's ns-3
(experiments/bench/dcqcn_reference.py) and the in-flight tests use it.

On either engine (experiments.sim.compiled.ENGINES): the Python one
records each flow's deliveries and in-flight bound and takes CNPs from
outside (`cnp_at`), since it calls into the transport at every packet; the
compiled one records what its transport reports (the completion and the
DCQCN rate's changes) and gives the same times and rates.

Flow i goes from host h<i+1> to the last host as job i+1's rank 0 to its
rank 1 (a 2-rank ring of which only one direction carries data); the
receiver's delivered bytes and the sender's DCQCN rate are recorded over
time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from types import SimpleNamespace

from experiments.plan import RunPlan
from experiments.sim.compiled import CompiledNetwork, CompiledTransport, make_engine, network_class
from experiments.sim.host import SimTransport
from experiments.sim.network import SimNetwork
from hosts import wire
from hosts.dcqcn import DcqcnParams, FixedRate, NotificationPoint, ReactionPoint
from hosts.udp.params import UdpParams
from topologies.spec.placement import JobRequest, place_jobs
from topologies.spec.topo import TopoParams, build
from topologies.switch.params import EcnParams, SymphonyParams

DATA_PORT = 5000


@dataclass
class Flow:
    """One flow's record: when it started and ended (its last byte at the
    receiver), the receiver's cumulative bytes over time (Python engine
    only), the sender's DCQCN rate (rc, rt) at every change."""
    index: int
    size: int
    start_s: float
    end_s: float | None = None
    delivered: list[tuple[float, int]] = field(default_factory=list)
    rates: list[tuple[float, float, float]] = field(default_factory=list)
    sender: SimTransport | CompiledTransport | None = field(default=None, repr=False)
    # kept here: a compiled world holds its transports weakly
    receiver: SimTransport | CompiledTransport | None = field(default=None, repr=False)
    max_in_flight: int = 0        # packets past the first unacknowledged, at most, seen at each ACK (Python engine)

    @property
    def fct_s(self) -> float | None:
        return None if self.end_s is None else self.end_s - self.start_s


@dataclass(frozen=True)
class Incast:
    """The network and its hosts' settings: senders, link rate (Mbit/s) and
    one-way delay per link (ms), the switch's queue depth (packets) and ECN,
    the transport's parameters and DCQCN's (None: no DCQCN, paced at line
    rate)."""
    senders: int
    rate_mbit: float
    delay_ms: float
    queue_pkts: int
    ecn: EcnParams
    udp: UdpParams
    dcqcn: DcqcnParams | None
    seed: int = 1


def _plan(net: Incast) -> RunPlan:
    topo = build(TopoParams("star", net.senders + 1, host_rate_mbit=net.rate_mbit, host_delay_ms=net.delay_ms,
                            queue_depth_pkts=net.queue_pkts))
    receiver = topo.hosts[-1].name
    placed = place_jobs(topo, [JobRequest(i + 1, 2, DATA_PORT + 10 * i, "udp", (topo.hosts[i].name, receiver))
                               for i in range(net.senders)])
    return RunPlan("baseline", 1, topo, tuple(placed), net.ecn, SymphonyParams(enabled=False), jobs=(),
                   schedule=(), seed=net.seed, frame_bytes=net.udp.frame_bytes)


def run(net: Incast, sizes: list[int], starts: list[float], until: float,
        cnp_at: dict[int, float] | None = None, engine: str = "python") -> list[Flow]:
    """Send flow i of sizes[i] bytes from starts[i] (s); run until every flow
    has arrived or `until`; cnp_at: flow -> a time its sender gets a CNP, as
    from its receiver (on top of any the network causes; Python engine only)."""
    if cnp_at and engine != "python":
        raise ValueError("flows: a CNP from outside (cnp_at) needs the python engine")
    clock = make_engine(engine)
    plan = _plan(net)
    sim = network_class(engine)(clock, plan)
    flows = [Flow(i, sizes[i], starts[i]) for i in range(net.senders)]
    left = [net.senders]
    add = _flow if engine == "python" else _compiled_flow
    for i, job in enumerate(plan.placed):
        add(clock, sim, net, job, flows[i], left)
    for i, t in (cnp_at or {}).items():
        clock.at(t, _cnp, clock, flows[i])
    clock.run(until)
    for f in flows:
        if isinstance(f.sender, CompiledTransport):
            f.sender.flush()         # its rate changes since the last wait
    return flows


def _controllers(net: Incast, now: float):
    if net.dcqcn is None:
        return FixedRate(net.rate_mbit * 1e6), NotificationPoint(None)
    return ReactionPoint(net.dcqcn, now), NotificationPoint(net.dcqcn.cnp_interval_s)


def _pair(cls, clock, sim, net: Incast, job, flow: Flow, log, **extra):
    """The flow's sender and receiver transports (cls: the engine's), open,
    on its job's two hosts."""
    src, dst = job.hosts
    ips = [sim.topo.host(h).ip for h in job.hosts]
    rp, np_ = _controllers(net, 0.0)
    size = flow.size           # not the flow: a compiled endpoint holds recv_len where no collector sees
    common = {"job": job.job, "ips": ips, "data_port": job.data_port, "params": net.udp, "log": log,
              "engine": clock, "keep": False, **extra}
    sender = cls(rank=0, recv_len=lambda step: None, rp=rp, np_=NotificationPoint(None), host=sim.hosts[src],
                 **common)
    receiver = cls(rank=1, recv_len=lambda step: size if step == 0 else None, np_=np_, host=sim.hosts[dst],
                   **common)
    sender.open()
    receiver.open()
    flow.sender, flow.receiver = sender, receiver
    return sender, receiver


def _flow(engine, sim: SimNetwork, net: Incast, job, flow: Flow, left: list[int]) -> None:
    src, dst = job.hosts

    def log(kind, step, **f):
        if kind == "rate":
            flow.rates.append((engine.now, f["rc"], f["rt"]))
    sender, receiver = _pair(SimTransport, engine, sim, net, job, flow, log)
    on_data = receiver._on_data
    rx = receiver.ep.receiver

    def counted(frame, src_ip, sport, tos, now):
        on_data(frame, src_ip, sport, tos, now)
        got = rx.flows.get(0)
        if got is None or flow.end_s is not None:
            return
        flow.delivered.append((now, min(flow.size, got.n_got * net.udp.payload_bytes)))
        if got.complete:
            flow.end_s = now
            left[0] -= 1
            if not left[0]:
                engine.stop()
    sim.hosts[dst].listeners[job.data_port] = counted
    on_ctrl = sender._on_ctrl

    def acked(frame, src_ip, sport, tos, now):
        f = sender.ep.sender.flows.get(0)
        if f is not None:
            flow.max_in_flight = max(flow.max_in_flight, f.next_new - f.cum)
        on_ctrl(frame, src_ip, sport, tos, now)
    sim.hosts[src].listeners[sender.ctrl_port] = acked

    def start() -> None:
        sender.send(0, memoryview(bytes(flow.size)))
        sender._service(engine.now)
    engine.at(flow.start_s, start)


def _compiled_flow(clock, sim: CompiledNetwork, net: Incast, job, flow: Flow, left: list[int]) -> None:
    """_flow on the compiled world: the receiver's wait for its one step
    ends the flow, and the sender's rate changes arrive with the time each
    happened (its transport's log, flushed when run() ends)."""
    stamp = SimpleNamespace(at=None)

    def log(kind, step, **f):
        if kind == "rate":
            flow.rates.append((stamp.at, f["rc"], f["rt"]))
    sender, receiver = _pair(CompiledTransport, clock, sim, net, job, flow, log, stamp=stamp)

    def arrived(data, error) -> None:
        if error is None:
            flow.end_s = clock.now
        left[0] -= 1
        if not left[0]:
            clock.stop()
    receiver.resume = arrived
    receiver.c.await_received(0, math.inf)

    def start() -> None:
        sender.send(0, memoryview(bytes(flow.size)))
        sender.c.service(clock.now)
    clock.at(flow.start_s, start)


def _cnp(engine, flow: Flow) -> None:
    sender = flow.sender
    sender.ep.sender.on_cnp(wire.Cnp(sender.ep.job, sender.ep.succ_rank, 0), engine.now)
    sender._service(engine.now)


def delivered_rate_bps(flow: Flow, t0: float, t1: float) -> float:
    """The receiver's goodput of a flow between two times."""
    def at(t: float) -> int:
        got = 0
        for when, n in flow.delivered:
            if when > t:
                break
            got = n
        return got
    return (at(t1) - at(t0)) * 8 / (t1 - t0)
