"""The simulation's clock (experiments/sim/engine.py): time order, ties in
the order scheduled, the past clamped to now, one wake-up per component."""

from experiments.sim.engine import Engine, Waker


def test_events_run_in_time_order_and_ties_in_order_scheduled():
    e = Engine()
    seen = []
    for t, name in ((2.0, "c"), (1.0, "a"), (1.0, "b"), (0.5, "first")):
        e.at(t, seen.append, name)
    e.run()
    assert seen == ["first", "a", "b", "c"] and e.now == 2.0 and e.events == 4


def test_an_event_in_the_past_runs_now_and_until_stops_before_later_ones():
    e = Engine()
    seen = []

    def at_one():
        seen.append(("one", e.now))
        e.at(0.2, lambda: seen.append(("late", e.now)))     # asked for the past
    e.at(1.0, at_one)
    e.at(5.0, lambda: seen.append(("five", e.now)))
    e.run(until=3.0)
    assert seen == [("one", 1.0), ("late", 1.0)] and e.pending() == 1


def test_an_event_can_stop_the_run():
    e = Engine()
    for t in range(10):
        e.at(float(t), lambda: None)
    e.at(3.0, e.stop)
    e.run()
    assert e.now == 3.0 and e.pending() == 6 and e.events == 5


def test_waker_keeps_the_earliest_request_and_calls_once_per_due_time():
    e = Engine()
    calls = []
    w = Waker(e, calls.append)
    w.wake_at(5.0)
    w.wake_at(2.0)          # earlier: stands
    w.wake_at(3.0)          # later than the pending one: changes nothing
    e.run(until=2.5)
    assert calls == [2.0]
    e.run()
    # the superseded request at 5.0 does nothing; the one at 3.0 was never made
    assert calls == [2.0]
    w.wake_at(7.0)
    e.run()
    assert calls == [2.0, 7.0]
