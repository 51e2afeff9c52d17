"""The compiled egress queue and delay line (engine/src/queue.hpp,
delayline.hpp) against the twin's (topologies/switch/twin/queues.py,
delayline.py), driven by the same seeded random operations: every answer
on the way (room, depths, deadlines, which frames leave when, what a delay
line loses, reorders and holds) and the figures at the end are equal.  The
wake-ups here come late at random, so the catch-up bound, the schedule lost
and the lateness record are exercised, which a simulation's exact wake-ups
never do."""

from __future__ import annotations

import random

import pytest

import symphony_engine as E
from experiments.sim.compiled_switch import _figures_view, init_key, netem_spec, netem_table
from topologies.spec.netem import NetemParams
from topologies.switch.twin.delayline import DelayLine
from topologies.switch.twin.queues import EgressQueue


def frame(ident: int, length: int) -> bytes:
    return ident.to_bytes(4, "big") + bytes(length - 4)


def pkt(ident: int, length: int) -> E.Pkt:
    p = E.Pkt()
    p.step, p.len = ident, length
    return p


def ids_py(frames) -> list[tuple[int, int]]:
    return [(int.from_bytes(f[:4], "big"), len(f)) for f in frames]


def ids_cc(pkts) -> list[tuple[int, int]]:
    return [(p.step, p.len) for p in pkts]


def set_mode(q, mode: str, rate: float) -> None:
    if mode == "bps":
        q.set_rate_bps(rate)
    elif mode == "pps":
        q.set_rate(rate)
    else:
        q.set_rate(None)


@pytest.mark.parametrize("mode", ["bps", "pps", "unlimited"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_queue_answers_as_the_twins(mode, seed):
    rnd = random.Random(seed)
    py, cc = EgressQueue(12), E.EgressQueue(12)
    rate = base = {"bps": 40e6, "pps": 6000.0, "unlimited": None}[mode]
    for q in (py, cc):
        set_mode(q, mode, rate)
        q.set_ctrl_lane(seed != 2)
    now, pushed, popped = 0.0, 0, 0
    for ident in range(3000):
        now += rnd.expovariate(1 / 150e-6)
        op = rnd.random()
        if op < 0.6:
            ctrl = rnd.random() < 0.25
            length = rnd.randint(60, 120) if ctrl else rnd.randint(200, 1500)
            assert py.room(ctrl) == cc.room(ctrl)
            if py.room(ctrl):
                py.push(frame(ident, length), now, ctrl)
                cc.push(pkt(ident, length), now, ctrl)
                pushed += 1
        elif op < 0.97:
            now += rnd.choice([0.0, 0.0, 50e-6, 1e-3, 5e-3])    # a wake-up on time, late or very late
            out = ids_py(py.pop_due(now))
            assert out == ids_cc(cc.pop_due(now))
            popped += len(out)
        elif mode != "unlimited":
            rate = rnd.choice([0.5, 1.0, 2.0]) * base
            for q in (py, cc):
                set_mode(q, mode, rate)
        t = now + rnd.choice([0.0, 100e-6, 1e-3])
        assert (py.waiting(now), py.waiting_at(now, t), len(py), py.empty, py.deadline()) == \
            (cc.waiting(now), cc.waiting_at(now, t), len(cc), cc.empty, cc.deadline())
    assert py.figures() == EgressQueue.figures(_figures_view(cc))
    assert pushed > 1000 and popped > 500
    if mode != "unlimited":
        assert py.late.n > 100 and py.lost_s > 0      # the late wake-ups were there to compare


LINES = [
    NetemParams(delay_ms=1.0, jitter_ms=0.8, loss_pct=10, reorder_pct=20),
    NetemParams(delay_ms=2.0, jitter_ms=1.5, distribution="normal", correlation_pct=40),
    NetemParams(delay_ms=2.0, jitter_ms=3.0, distribution="pareto", loss_pct=1),
    NetemParams(delay_ms=2.0, jitter_ms=1.0, distribution="paretonormal", correlation_pct=100, limit=20),
    NetemParams(delay_ms=0.5),
]


@pytest.mark.parametrize("params", LINES, ids=lambda p: f"{p.distribution}-{p.correlation_pct}-{p.loss_pct}")
def test_delay_line_as_the_twins(params):
    seed = f"7:s1:3:egress:{params.distribution}"
    py = DelayLine(seed, params)
    cc = E.DelayLine(init_key(seed), netem_spec(params), netem_table(params))
    rnd = random.Random(params.delay_ms)
    now = 0.0
    for ident in range(4000):
        now += rnd.expovariate(1 / 100e-6)
        if rnd.random() < 0.7:
            assert py.push(frame(ident, 100), now) == cc.push(pkt(ident, 100), now)
        else:
            assert ids_py(py.pop_due(now)) == ids_cc(cc.pop_due(now))
        assert (len(py), py.deadline()) == (len(cc), cc.deadline())
        if ident == 2000:       # a change keeps the held frames and draws a new correlation state
            changed = NetemParams(delay_ms=1.5, jitter_ms=0.5, loss_pct=5, reorder_pct=5)
            py.set(changed)
            cc.set(netem_spec(changed), netem_table(changed))
    assert py.stats == cc.stats
    assert py.stats["out"] > 1000 and py.stats["lost"] > 0 and py.stats["reordered"] > 0
