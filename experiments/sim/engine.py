"""The simulation's clock: a discrete-event loop on virtual time (float
seconds from the run's start).  Pure: nothing here reads a real clock.

Events run in time order, and in the order they were scheduled among equal
times, so a run is the same every time.  ``Waker`` keeps one pending wake-up
per component (a host, a switch, a transport): asking for an earlier one
supersedes the later, and a wake-up that was superseded does nothing when
its time comes (cheaper than taking it out of the heap).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable


class Engine:
    __slots__ = ("now", "events", "_q", "_seq", "_stopped")

    def __init__(self):
        self.now = 0.0
        self.events = 0          # events run so far
        self._q: list = []
        self._seq = 0
        self._stopped = False

    def at(self, t: float, fn: Callable, *args) -> None:
        """Run fn(*args) at time t (now, if t has passed)."""
        self._seq += 1
        heapq.heappush(self._q, (t if t > self.now else self.now, self._seq, fn, args))

    def at_deadline(self, t: float, fn: Callable, *args) -> None:
        """As at(), for an event that will almost always find nothing left
        to do (a wait's deadline): the compiled engine keeps these apart
        from the events packets pass through, in the same order; here one
        heap holds both."""
        self.at(t, fn, *args)

    def clock(self) -> float:
        return self.now

    def stop(self) -> None:
        """End run() once the event in progress returns."""
        self._stopped = True

    def run(self, until: float = math.inf) -> None:
        """Run events in order until none is left, the next is after
        `until`, or an event calls stop()."""
        q = self._q
        pop = heapq.heappop
        self._stopped = False
        while q and q[0][0] <= until:
            t, _, fn, args = pop(q)
            self.now = t
            self.events += 1
            fn(*args)
            if self._stopped:
                return

    def pending(self) -> int:
        return len(self._q)


class Waker:
    """One component's next wake-up: ``wake_at(t)`` asks to have fn(now)
    called at t; of several requests the earliest stands, and a request for
    a time after a pending one changes nothing."""

    __slots__ = ("engine", "fn", "due")

    def __init__(self, engine: Engine, fn: Callable[[float], None]):
        self.engine = engine
        self.fn = fn
        self.due = math.inf

    def wake_at(self, t: float) -> None:
        if t < self.due:
            self.due = t
            self.engine.at(t, self._fire, t)

    def _fire(self, t: float) -> None:
        if t != self.due:
            return              # superseded by an earlier request that has run
        self.due = math.inf
        self.fn(self.engine.now)
