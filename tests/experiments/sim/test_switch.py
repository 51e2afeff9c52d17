"""The simulation's switch against the twin's (experiments/sim/switch.py,
topologies/switch/twin/switch.py): the same frames at the same times, with
the same control-plane plan installed, give the same frames out at the same
times and the same marks, drops, registers and counters; and each frame
reaches the far end of its link once its last bit is there (store and
forward, topologies/switch/twin/queues.py)."""

from __future__ import annotations

import math
import random

from contract.tags import tag_port
from experiments.plan import RunPlan
from experiments.sim.engine import Engine
from experiments.sim.network import SimNetwork
from tests.harness.specs import place, topo
from topologies.switch import controlplane as cp
from topologies.switch.params import EcnParams, SymphonyParams
from topologies.switch.twin import packets
from topologies.switch.twin.client import LocalTwinClient
from topologies.switch.twin.core import SwitchCore
from topologies.switch.twin.switch import TwinSwitch

RATE_MBIT = 8                    # a 1000-byte frame holds a port for 1 ms
ECN = EcnParams(kmin=2, kmax=6, pmax=0.5)
SYMPHONY = SymphonyParams(threshold=1, k_sym=1, p_sym=1.0, enabled=True)
SEED = 7


def star_plan() -> RunPlan:
    """Three hosts on one switch, a 3-rank ring over them, 8-frame queues."""
    t = topo("star", 3, RATE_MBIT, queue_depth_pkts=8)
    return RunPlan("symphony", 1, t, tuple(place(t, 3)), ECN, SYMPHONY, jobs=(), schedule=(), seed=SEED,
                   frame_bytes=1000)


def arrivals(n: int = 600) -> list[tuple[float, int, bytes]]:
    """(time, switch port, frame), seeded: the ring's three flows, h1's
    running ahead of the others by up to 4 steps, and untagged cross
    traffic into h2, in bursts that fill the port towards h2 past Kmin,
    Kmax and its depth."""
    rng = random.Random(3)
    ips = {1: "10.0.0.1", 2: "10.0.0.2", 3: "10.0.0.3"}
    steps = {1: 0, 2: 0, 3: 0}
    out, t = [], 0.0
    for _ in range(n):
        t += rng.expovariate(1 / 0.0006)
        src = rng.choice((1, 1, 2, 3, 3))
        if src == 3 and rng.random() < 0.5:        # cross traffic to h2
            frame = packets.build(ips[3], ips[2], sport=32768, dport=9, ecn=2, frame_len=1000)
        else:
            if rng.random() < (0.4 if src == 1 else 0.15) and steps[src] < min(steps.values()) + 4:
                steps[src] += 1
            frame = packets.build(ips[src], ips[src % 3 + 1], sport=tag_port(steps[src]), dport=5000, ecn=2,
                                  frame_len=1000)
        out.append((t, src, frame))        # host hN hangs off switch port N
    return out


def run_twin(plan: RunPlan, frames) -> tuple[TwinSwitch, list]:
    """The twin's data path, driven exactly when something is due."""
    sw = TwinSwitch.__new__(TwinSwitch)     # the process's switch without its sockets
    SwitchCore.__init__(sw, "s1", {p: f"s1-eth{p}" for p in plan.topo.ports("s1")}, plan.topo.queue_depth, SEED)
    plans = cp.plan(plan.topo, plan.placed, plan.symphony, 1000)
    cp.install(LocalTwinClient(sw), plans["s1"], plan.ecn, plan.symphony, "bps")
    sent = []
    sw.transmit = lambda port, frame, now: sent.append((now, port, frame))
    pending = list(frames)
    while True:
        due = sw.next_due()
        due = math.inf if due is None else due
        nxt = pending[0][0] if pending else math.inf
        if due == nxt == math.inf:
            return sw, sent
        if nxt < due:
            t, port, frame = pending.pop(0)
            sw.arrive(port, frame, t)
        else:
            sw.drain(due)


def run_sim(plan: RunPlan, frames) -> tuple[SimNetwork, list, list]:
    engine = Engine()
    net = SimNetwork(engine, plan)
    sw = net.switches["s1"]
    sent, arrived = [], []
    transmit = sw.transmit

    def spy(port, frame, now):
        sent.append((now, port, frame))
        transmit(port, frame, now)
    sw.transmit = spy
    for name, host in net.hosts.items():
        host.receive = lambda port, frame, name=name: arrived.append((engine.now, name, frame))
        sw.connect(int(name[1:]), host.receive, 0)
    for t, port, frame in frames:
        engine.at(t, sw.receive, port, frame)
    engine.run()
    return net, sent, arrived


def test_the_same_frames_give_the_same_marks_drops_and_counters():
    plan = star_plan()
    frames = arrivals()
    twin, twin_sent = run_twin(plan, frames)
    net, sim_sent, _ = run_sim(plan, frames)
    sim = net.switches["s1"]
    assert sim_sent == twin_sent
    tdump, sdump = twin.pipeline.dump(), sim.pipeline.dump()
    assert sdump == tdump
    for port, stats in sim.stats.items():
        assert stats["tx"] == sum(1 for _, p, _ in twin_sent if p == port)
        assert {k: v for k, v in stats.items() if k != "tx"} == {k: v for k, v in twin.stats[port].items() if k != "tx"}
    counters = tdump["counters"]
    # the sequence exercises what it claims to: Symphony and queue marks, drops
    assert counters["sym_marks"] and counters["queue_marks"]
    assert sum(s["queue_drops"] for s in sim.stats.values()) > 10
    assert sum(1 for _, _, f in sim_sent if f[15] & 3 == 3) > 0


def test_a_frame_arrives_once_its_last_bit_is_there():
    """Store and forward: a frame leaves its port once serialised, the head
    of an idle port too, so no two leave closer than the later one's own
    time on the wire, and a frame that found its port idle leaves its wire
    time after it came in; the far end (no propagation delay here) has it
    then."""
    plan = star_plan()
    frames = arrivals(200)
    _, sent, arrived = run_sim(plan, frames)
    assert len(sent) == len(arrived)
    wire = 1000 * 8 / (RATE_MBIT * 1e6)
    came = [t for t, _, _ in frames]
    assert sent[0][0] == frames[0][0] + wire
    last: dict[int, float] = {}
    idle_heads = 0
    for (t_out, port, frame), (t_in, host, got) in zip(sent, arrived, strict=True):
        assert got == frame and host == f"h{port}" and t_in == t_out
        gap = t_out - last.get(port, -math.inf)
        assert gap >= wire - 1e-12
        if gap > wire + 1e-9:           # the port had gone idle: this one came in a wire time ago
            assert any(abs(t_out - wire - t) < 1e-12 for t in came)
            idle_heads += 1
        last[port] = t_out
    assert idle_heads > 10
