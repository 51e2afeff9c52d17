"""The compiled clock keeps the Python engine's order (experiments/sim/
engine.py): time order, then the order events were scheduled in, whether
scheduled as events or as deadlines (the compiled engine's second heap); a
callback's exception reaches the caller; a pending signal ends a run."""

from __future__ import annotations

import os
import signal

import pytest
from hypothesis import given
from hypothesis import strategies as st

import symphony_engine as E
from experiments.sim.engine import Engine

# equal times, neighbours one ulp apart, the smallest doubles and -0.0: the
# compiled heap orders by a time's bits, which must order as the times do
times = st.lists(st.sampled_from([0.0, -0.0, 5e-324, 1e-300, 0.5, 1.0, 1.0 + 1e-12, 1.0000000000000002, 2.0, 3.5])
                 | st.floats(min_value=-1.0, max_value=4.0), min_size=1, max_size=30)


def _trace(engine, ts: list[float]) -> list:
    out = []

    def hit(i, t):
        out.append((i, engine.now))
        if i % 3 == 0:          # events scheduling events, some in the past (run now)
            (engine.at_deadline if i % 2 else engine.at)(t - 1.0, hit, i + 100, t - 1.0)
    for i, t in enumerate(ts):       # every fourth a deadline: the compiled engine's second heap
        (engine.at_deadline if i % 4 == 1 else engine.at)(t, hit, i, t)
    engine.run(until=3.0)
    return out + [("left", engine.pending(), engine.events)]


@given(times)
def test_same_order_as_the_python_engine(ts):
    assert _trace(E.Engine(), ts) == _trace(Engine(), ts)


def test_stop_ends_the_run_after_the_event():
    e, out = E.Engine(), []
    e.at(1.0, lambda: (out.append(1), e.stop()))
    e.at(1.0, out.append, 2)
    e.run()
    assert out == [1] and e.pending() == 1
    e.run()
    assert out == [1, 2]


def test_a_callbacks_exception_reaches_the_caller():
    e = E.Engine()
    e.at(0.5, lambda: {}["missing"])
    with pytest.raises(KeyError):
        e.run()


@pytest.fixture
def ctrl_c_raises():
    """SIGINT as a terminal's Ctrl-C reaches Python: a suite run from a
    background job (`cmd &` in a script) starts with SIGINT ignored (POSIX),
    and the signal would then never reach the engine's poll."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


def test_a_pending_signal_ends_a_long_run(ctrl_c_raises):
    e = E.Engine()

    def spin(n):
        if n == 10:
            os.kill(os.getpid(), signal.SIGINT)
        e.at(e.now + 1.0, spin, n + 1)
    e.at(0.0, spin, 0)
    with pytest.raises(KeyboardInterrupt):
        e.run()
    assert e.events < 100_000           # it stopped within a poll of the signal
