"""The compiled switch core (engine/src/switch.hpp) against the twin's
(topologies/switch/twin/core.py SwitchCore, with a subclass that collects
what it transmits) on the same seeded random packet sequences, woken by the
same driver (the simulation's Engine and Waker, as experiments/sim/switch.py
wakes its queues and delay lines): the same packets leave on the same ports
at the same times with the same TTL and ECN bits, and at the end the
registers, counters, drops, tables and port stats (queue fidelity and
delay-line figures included) are equal.

The switch: three jobs (UDP, TCP, one disabled) whose steps wrap, ECN
probabilities strictly between 0 and 1 and a gate, a 10 Mbit/s port with a
control lane that fills and drops, a packets/s port, an unlimited one,
delay lines with jitter, loss and reordering (egress) and with a normal
distribution and correlation (ingress), rate and netem changes mid-run,
and packets the pipeline drops (TTL, no route, a port the switch lacks)."""

from __future__ import annotations

import ipaddress
import random

import pytest

import symphony_engine as E
from experiments.sim.compiled_switch import CompiledSwitch, ip
from experiments.sim.engine import Engine, Waker
from topologies.spec.netem import NetemParams
from topologies.switch import program
from topologies.switch.twin import packets
from topologies.switch.twin.client import LocalTwinClient
from topologies.switch.twin.core import SwitchCore

PORTS = {1: "s1-eth1", 2: "s1-eth2", 3: "s1-eth3", 4: "s1-eth4"}
HOSTS = {1: "10.0.0.1", 2: "10.0.0.2", 3: "10.0.0.3", 4: "10.0.0.4"}
# (src port, dst port, dport, flow id, job slot, n_local, threshold, enabled, tcp)
FLOWS = [(1, 2, 5000, 0, 0, 2, 1, 1, 0), (3, 2, 5000, 1, 0, 2, 1, 1, 0),
         (4, 1, 6000, 2, 1, 2, 2, 1, 1), (2, 1, 6000, 3, 1, 2, 2, 1, 1),
         (1, 4, 7000, 4, 2, 1, 0, 0, 0)]
FIRST_STEP = {0: (1 << 14) - 40, 1: 50, 2: 0}     # steps wrap within the run


class PySwitch(SwitchCore):
    """The twin's core, with the simulation's tx count, collecting what it
    sends and what it holds."""

    def __init__(self, seed: int):
        super().__init__("s1", PORTS, 16, seed)
        self.sent: list = []
        self.held_log: list = []

    def transmit(self, port, frame, now):
        self.stats[port]["tx"] += 1
        self.sent.append((port, frame, now))

    def held(self, kind, port):
        self.held_log.append((kind, port))


class PySide:
    def __init__(self, seed):
        self.sw = PySwitch(seed)

    def arrive(self, port, f, now):
        self.sw.arrive(port, packets.build(f["src"], f["dst"], proto=f["proto"], sport=f["sport"],
                                           dport=f["dport"], ecn=f["tos"] & 3, dscp=f["tos"] >> 2, ttl=f["ttl"],
                                           frame_len=f["len"]), now)

    def take_held(self):
        out, self.sw.held_log = self.sw.held_log, []
        return out

    def sent(self):
        return [(port, now, frame[15], frame[22], str(ipaddress.IPv4Address(frame[26:30])),
                 str(ipaddress.IPv4Address(frame[30:34])), int.from_bytes(frame[34:36], "big"), len(frame))
                for port, frame, now in self.sw.sent]


class CompiledSide:
    def __init__(self, seed):
        self.sw = CompiledSwitch("s1", PORTS, 16, seed)
        self.sw.core.collect(True)

    def arrive(self, port, f, now):
        p = E.Pkt()
        p.src_ip, p.dst_ip, p.sport, p.dport = ip(f["src"]), ip(f["dst"]), f["sport"], f["dport"]
        p.proto, p.tos, p.ttl, p.len = 6 if f["proto"] == "tcp" else 17, f["tos"], f["ttl"], f["len"]
        self.sw.core.arrive(port, p, now)

    def take_held(self):
        return self.sw.core.take_held()

    def sent(self):
        return [(port, now, p.tos, p.ttl, str(ipaddress.IPv4Address(p.src_ip)),
                 str(ipaddress.IPv4Address(p.dst_ip)), p.sport, p.len)
                for port, p, now in self.sw.core.take_transmitted()]


def install(sw) -> None:
    c = LocalTwinClient(sw)
    for port, host in HOSTS.items():
        c.table_add("forward", "ipv4_forward", [f"{host}/32"], [f"00:00:0a:00:00:0{port}", str(port)])
    c.table_add("forward", "ipv4_forward", ["10.0.1.0/24"], ["00:00:0a:00:01:01", "3"])
    c.table_add("forward", "ipv4_forward", ["10.0.9.0/24"], ["00:00:0a:00:09:01", "9"])   # no such port
    for s, d, dport, fid, slot, n_local, threshold, enabled, tcp in FLOWS:
        program.add_flow(c, HOSTS[s], HOSTS[d], dport, fid, slot, n_local, threshold, enabled, tcp)
    for slot, first in FIRST_STEP.items():
        fids = [f[3] for f in FLOWS if f[4] == slot]
        program.install_job(c, slot, fids, first, tcp=next(f[8] for f in FLOWS if f[4] == slot))
    program.install_queue_ecn(c, 2, 10, 0.5)
    program.install_sym_ecn(c, 1, 0.7, 3)
    c.set_queue_depth(8, 2)
    c.set_ctrl_lane(True, 2)
    c.set_queue_rate_bps(10e6, 2)
    c.set_queue_rate_bps(50e6, 1)
    c.set_queue_rate(5000, 3)
    c.set_netem(NetemParams(delay_ms=0.3, jitter_ms=0.2, loss_pct=5, reorder_pct=10), 2, "egress")
    c.set_netem(NetemParams(delay_ms=0.2, jitter_ms=0.1, distribution="normal", correlation_pct=30), 1, "ingress")
    c.set_netem(NetemParams(delay_ms=0.05), 4, "egress")


def traffic(seed: int, n: int) -> list[tuple[float, int, dict]]:
    """(time, ingress port, packet fields): ring data with steps moving (a
    few jumps), ACKs back (small, not ECT: the control lane), cross traffic,
    TTL-expired, unrouted and no-port packets, bursts faster than a link."""
    rnd = random.Random(seed)
    step = {f[3]: FIRST_STEP[f[4]] for f in FLOWS}
    t, out = 0.0, []
    for _ in range(n):
        t += rnd.expovariate(1 / 120e-6)
        r = rnd.random()
        s, d, dport, fid, slot, _, _, _, tcp = rnd.choice(FLOWS)
        f = {"src": HOSTS[s], "dst": HOSTS[d], "dport": dport, "ttl": 64, "proto": "tcp" if tcp else "udp"}
        if r < 0.6:
            if rnd.random() < 0.3:
                step[fid] += rnd.choice([1, 1, 1, 2]) if rnd.random() > 0.02 else 100
            tag = step[fid] & (0x3F if tcp else 0x3FFF)
            ecn = rnd.choice([1, 2, 2, 0])
            f.update(sport=0xC000 if tcp else 0xC000 | tag, tos=(tag << 2 if tcp else 0) | ecn,
                     len=rnd.randint(300, 1400))
            port = s
        elif r < 0.85:        # an ACK back to the sender
            f.update(src=HOSTS[d], dst=HOSTS[s], dport=dport + 1, sport=0xC000 | 7, tos=0, len=rnd.randint(60, 90),
                     proto="udp")
            port = d
        else:
            port = rnd.choice(list(HOSTS))
            f.update(proto="udp", sport=rnd.choice([1234, 0xC005]), tos=rnd.choice([0, 2]), len=rnd.randint(100, 900),
                     dst=rnd.choice(["10.0.1.5", "10.0.9.9", "10.7.7.7", HOSTS[rnd.randint(1, 4)]]),
                     ttl=rnd.choice([64, 64, 64, 1]))
        out.append((t, port, f))
        if rnd.random() < 0.004:
            # a burst from host 2 faster than its 10 Mbit/s port delivers: the
            # depth a frame reads moves to its delivery time, at most a
            # catch-up's length ahead (core.SwitchCore._delivery)
            out += [(t, 2, dict(f, src=HOSTS[2], dst=HOSTS[4], sport=1234, dport=9, tos=2, len=1400, ttl=64,
                                proto="udp")) for _ in range(12)]
    return out


def controls(end: float) -> list[tuple[float, str, tuple]]:
    """Control calls mid-run: a rate change (the queue's clock restarts),
    a netem change and a line turned off (held frames keep their times)."""
    return [(end * 0.3, "set_queue_rate_bps", (20e6, 1)),
            (end * 0.4, "set_queue_rate", (2000, 3)),
            (end * 0.5, "set_netem", (NetemParams(delay_ms=0.4, jitter_ms=0.3, loss_pct=2, reorder_pct=30), 2)),
            (end * 0.7, "set_netem", (NetemParams(), 1, "ingress"))]


def drive(side, arrivals, calls) -> list:
    """The simulation's way of waking a switch (experiments/sim/switch.py):
    each queue and delay line woken when it has something due."""
    engine = Engine()
    wakers: dict = {}

    def arm(kind, port):
        due = side.sw.due(kind, port) if isinstance(side, PySide) else side.sw.core.due(kind, port)
        if due is not None:
            if (kind, port) not in wakers:
                wakers[(kind, port)] = Waker(engine, lambda now, k=kind, p=port: fire(k, p, now))
            wakers[(kind, port)].wake_at(due)

    def settle():
        for kind, port in side.take_held():
            arm(kind, port)

    def core():
        return side.sw if isinstance(side, PySide) else side.sw.core

    def fire(kind, port, now):
        if kind == "queue":
            core().drain_queue(port, now)
        else:
            core().drain_line(kind, port, now)
        settle()
        arm(kind, port)

    def arrive(port, f):
        side.arrive(port, f, engine.now)
        settle()

    def call(method, args):
        getattr(LocalTwinClient(side.sw), method)(*args)
        for port in PORTS:
            arm("queue", port)          # a rate change lets the head go at once (SimSwitch.rate_changed)

    for t, port, f in arrivals:
        engine.at(t, arrive, port, f)
    for t, method, args in calls:
        engine.at(t, call, method, args)
    engine.run()
    return side.sent()


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_compiled_core_does_what_the_twins_does(seed):
    arrivals = traffic(seed, 4000)
    calls = controls(arrivals[-1][0])
    py, cc = PySide(seed), CompiledSide(seed)
    install(py.sw)
    install(cc.sw)
    sent_py, sent_cc = drive(py, arrivals, calls), drive(cc, arrivals, calls)
    assert len(sent_py) == len(sent_cc)
    for i, (a, b) in enumerate(zip(sent_py, sent_cc, strict=True)):
        assert a == b, f"transmit {i}: twin {a}, compiled {b}"
    dump_py, dump_cc = py.sw.dump(), cc.sw.dump()
    for key in ("registers", "counters", "drops", "tables"):
        assert dump_py[key] == dump_cc[key], key
    assert dump_py["stats"] == dump_cc["stats"]

    # the run exercised what it is there to compare
    counters, stats = dump_py["counters"], dump_py["stats"]["ports"]
    assert counters["sym_marks"] and counters["queue_marks"] and counters["step_jumps"]
    assert 0 < sum(1 for s in sent_py if s[2] & 3 == 3) < sum(1 for s in sent_py if s[2] & 3)
    assert stats["2"]["queue_drops"] > 0 and stats["2"]["netem_egress"]["lost"] > 0
    assert stats["2"]["netem_egress"]["reordered"] > 0 and stats["1"]["netem_ingress"]["in"] > 0
    assert stats["3"]["fidelity"]["bytes"] > 0 and dump_py["stats"]["no_port_drops"] > 0
    assert {"ttl", "no_route"} <= set(dump_py["drops"])
    flow_step = dump_py["registers"]["flow_step"]
    # a flow of each job wrapped its tag (a flow a jump left behind stays put: trust.json)
    assert min(flow_step[0:2]) < FIRST_STEP[0] and min(flow_step[2:4]) < FIRST_STEP[1]
    ctrl = [s for s in sent_py if s[0] == 2 and s[7] <= 128 and s[2] & 3 == 0]
    assert ctrl


def test_control_calls_answer_as_the_twins():
    """The control surface's checks and messages are the twin's (LocalTwinClient
    through the control protocol's handler)."""
    py, cc = PySwitch(0), CompiledSwitch("s1", PORTS, 16, 0)
    bad = [("table_add", ("forward", "ipv4_forward", ["10.0.0.1/33"], ["00:00:00:00:00:01", "1"])),
           ("table_add", ("nope", "x", [], [])),
           ("table_add", ("symphony_flows", "track", ["1.1.1.1", "2.2.2.2", "5"], ["1"])),
           ("register_write", ("frontier", 64, 1)),
           ("register_write", ("frontier", 0, 1 << 16)),
           ("register_read", ("nothing", 0)),
           ("counter_read", ("pkts", 1024)),
           ("set_queue_depth", (0, 1)),
           ("set_queue_rate_bps", (-1.0, 1)),
           ("set_queue_rate", (1000, 7)),
           ("set_netem", ({"delay_ms": -1}, 1)),
           ("set_netem", ({"delay_ms": 1}, 1, "sideways"))]
    for method, args in bad:
        errors = []
        for sw in (py, cc):
            try:        # set_netem on the switch: the client would build a NetemParams, refusing first
                getattr(sw if method == "set_netem" else LocalTwinClient(sw), method)(*args)
                errors.append(None)
            except Exception as e:
                errors.append(str(e))
        assert errors[0] is not None and errors[0] == errors[1], method
    for sw in (py, cc):
        c = LocalTwinClient(sw)
        c.register_write("frontier", 3, 77)
        c.reset_state()
    assert py.dump() == cc.dump()
