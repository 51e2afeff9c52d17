"""The compiled DCQCN (engine/src/dcqcn.cpp) against hosts/dcqcn_core.py:
the same events (CNPs at given times, bytes sent, time passing, late calls)
through both reaction points give the same trace, exactly: every call's
answer (reportable change or not), Rc, Rt, alpha, next_event_time and the
counters after it.  The C++ computes every expression in the Python's
order in doubles, so no tolerance is needed; a difference in any rule
(a timer's order at a tie, the closed-form catch-up, the byte counter's
stages, the report threshold) shows up as a first differing row.  The
notification point likewise, per flow."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import symphony_engine as E
from hosts.dcqcn import DcqcnParams, FixedRate, NotificationPoint, ReactionPoint, make_params, paper_params


def cpp_params(p: DcqcnParams) -> E.DcqcnParams:
    return E.DcqcnParams(**dataclasses.asdict(p))


def _row(rp, answer):
    return (answer, rp.rate_bps, rp.target_bps, rp.alpha, rp.next_event_time(),
            rp.cnps, rp.decreases, rp.increases, rp.late_calls)


def trace(rp, events) -> list[tuple]:
    """Every event's answer and the state after it."""
    out = [_row(rp, None)]
    for op, t, n in events:
        if op == "cnp":
            answer = rp.on_cnp(t)
        elif op == "bytes":
            answer = rp.on_bytes_sent(n, t)
        else:
            answer = rp.advance(t)
        out.append(_row(rp, answer))
    return out


def both(params: DcqcnParams, events, start: float = 0.0):
    return trace(ReactionPoint(params, start), events), trace(E.ReactionPoint(cpp_params(params), start), events)


EMULATION = make_params("emulation", 10e6, 0.08)
PARAMS = {
    "emulation": EMULATION,
    "paper": paper_params(),
    "paper_byte_counter": dataclasses.replace(paper_params(), byte_counter_bytes=150_000),
    "emulation_clamp_f0": dataclasses.replace(EMULATION, clamp_target_rate=True, fast_recovery_steps=0),
    "emulation_g1_floor": dataclasses.replace(EMULATION, g=1.0, min_rate_bps=4e6, rate_on_first_cnp=0.5),
    "ties": dataclasses.replace(EMULATION, alpha_period_s=0.004, decrease_period_s=0.004,
                                increase_period_s=0.002, byte_counter_bytes=3000),
}


def scripted(p: DcqcnParams) -> list[tuple]:
    """A cut, recovery under traffic, a burst of CNPs, a late call, a long
    quiet stretch (the closed-form catch-up), then recovery to line rate."""
    a, d, i = p.alpha_period_s, p.decrease_period_s, p.increase_period_s
    ev = [("bytes", 0.1 * a, 1462), ("cnp", 0.5 * a, 0)]
    t = 0.5 * a
    for k in range(40):
        t += i / 3
        ev.append(("bytes", t, 1462 * (1 + k % 5)))
        if k % 7 == 3:
            ev.append(("cnp", t, 0))
        if k % 11 == 5:
            ev.append(("advance", t - d, 0))          # a caller whose clock sampled early
    ev += [("cnp", t + d, 0), ("cnp", t + d, 0), ("advance", t + d + a, 0),
           ("advance", t + 50 * max(a, d, i), 0), ("bytes", t + 50 * max(a, d, i), 100_000)]
    t += 50 * max(a, d, i)
    for _ in range(200):
        t += i
        ev.append(("advance", t, 0))
    ev.append(("advance", t + 10_000 * max(a, d, i), 0))   # far enough for line rate again
    return ev


@pytest.mark.parametrize("name", sorted(PARAMS))
def test_reaction_point_scripted(name):
    p = PARAMS[name]
    py, cpp = both(p, scripted(p))
    assert cpp == py
    # the script does cut and recover: a trace that never moved would agree trivially
    rates = {row[1] for row in py}
    assert min(rates) < p.line_rate_bps and py[-1][1] == p.line_rate_bps


def test_timers_at_exact_ties():
    """Alpha and decrease due at the same instant: the Python runs alpha
    first (rdma-hw.cc's +1 ns); the C++ must too, or the cut uses another alpha."""
    p = PARAMS["ties"]
    ev = [("cnp", 0.0, 0), ("cnp", 0.001, 0)] + [("advance", k * 0.002, 0) for k in range(1, 40)]
    ev += [("cnp", 0.08, 0), ("bytes", 0.08, 5000), ("advance", 0.084, 0), ("cnp", 0.084, 0),
           ("advance", 0.088, 0)]
    py, cpp = both(p, ev)
    assert cpp == py
    assert py[-1][6] >= 2          # decreases happened at the tied instants


def test_fixed_rate_is_inert():
    """DCQCN off: the same answers as the Python's FixedRate; None (no
    pacing) is held as rate 0, which the sender's `if rate` treats alike."""
    for rate in (None, 25e6):
        py, cpp = FixedRate(rate), E.FixedRate(rate)
        calls = [(r.on_cnp(1.0), r.advance(2.0), r.on_bytes_sent(1000, 3.0), r.next_event_time())
                 for r in (py, cpp)]
        assert calls[1] == calls[0]
        assert cpp.rate_bps == (py.rate_bps or 0.0)


# --- generated sequences -------------------------------------------------------

@st.composite
def dcqcn_params(draw) -> DcqcnParams:
    line = draw(st.sampled_from([10e6, 100e6, 40e9]))
    periods = st.sampled_from([1e-6, 5e-6, 55e-6, 1e-3, 2.5e-3, 4e-3])
    return DcqcnParams(
        line_rate_bps=line,
        min_rate_bps=line * draw(st.sampled_from([0.001, 0.01, 0.4])),
        g=draw(st.sampled_from([1 / 256, 1 / 16, 0.5, 1.0])),
        rate_on_first_cnp=draw(st.sampled_from([1.0, 0.875, 0.5])),
        alpha_period_s=draw(periods),
        decrease_period_s=draw(periods),
        increase_period_s=draw(periods),
        byte_counter_bytes=draw(st.sampled_from([None, 1462, 10_000, 10_000_000])),
        fast_recovery_steps=draw(st.integers(0, 5)),
        r_ai_bps=line * draw(st.sampled_from([0.0, 0.001, 0.05])),
        r_hai_bps=line * draw(st.sampled_from([0.0, 0.01, 0.2])),
        cnp_interval_s=draw(st.sampled_from([0.0, 50e-6])),
        clamp_target_rate=draw(st.booleans()),
    )


@st.composite
def event_lists(draw, p: DcqcnParams) -> list[tuple]:
    """Times on a grid of the periods' fractions (so timers often tie with
    calls and with each other), now and then an arbitrary gap or a call
    from the past."""
    unit = min(p.alpha_period_s, p.decrease_period_s, p.increase_period_s) / 4
    t = 0.0
    out = []
    for _ in range(draw(st.integers(1, 60))):
        step = draw(st.one_of(st.integers(0, 12).map(lambda k: k * unit),
                              st.floats(0, 200 * unit, allow_nan=False),
                              st.just(-3 * unit)))
        t = max(0.0, t + step) if step >= 0 else t   # the clock itself never runs back
        when = t + step if step < 0 else t
        op = draw(st.sampled_from(["cnp", "cnp", "bytes", "bytes", "advance"]))
        out.append((op, when, draw(st.integers(0, 20_000))))
    return out


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_reaction_point_generated(data):
    p = data.draw(dcqcn_params())
    events = data.draw(event_lists(p))
    py, cpp = both(p, events, start=0.0)
    assert cpp == py


# --- notification point ----------------------------------------------------------

def np_trace(np_, events) -> list:
    out = [np_.on_data(key, ce, t) for key, ce, t in events]
    return [out, dict(np_.packets), dict(np_.ce_packets), dict(np_.cnps)]


@settings(max_examples=200, deadline=None)
@given(st.sampled_from([None, 0.0, 50e-6, 1e-3]),
       st.lists(st.tuples(st.sampled_from([1, 2, 0xA000_0001_1388]), st.booleans(),
                          st.integers(0, 40).map(lambda k: k * 25e-6)), max_size=60))
def test_notification_point_generated(interval, events):
    events = sorted(events, key=lambda e: e[2])
    py = np_trace(NotificationPoint(interval), events)
    cpp = np_trace(E.NotificationPoint(interval), events)
    assert cpp == py


def test_notification_point_paces_per_flow():
    ev = [(1, True, 0.0), (2, True, 10e-6), (1, True, 20e-6), (1, True, 50e-6), (2, False, 60e-6),
          (2, True, 60e-6)]
    py = np_trace(NotificationPoint(50e-6), ev)
    assert py[0] == [True, True, False, True, False, True]      # the rule itself, not just agreement
    assert np_trace(E.NotificationPoint(50e-6), ev) == py
    off = np_trace(E.NotificationPoint(None), ev)
    assert off[0] == [False] * 6 and off[3] == {} and off[2] == {1: 3, 2: 2}
