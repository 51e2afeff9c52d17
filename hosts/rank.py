"""One rank's iterations of a ring AllReduce job, as a pure loop: its
straggle delays, step events, deadlines, the check of every result, and the
linger at the end.  No clock reads but the one passed in, no sleeping, no
socket: the loop is a generator that yields what it waits for (``Sleep``,
``Await``, ``Linger``) and whoever drives it does the waiting.  The agent
process (hosts.agent) drives it with time.sleep and the transport's blocking
wait; the simulation target (experiments/sim) drives the same loop on a
virtual clock.  docs/hosts.md states the rules.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any

import numpy as np

from contract import exits
from contract.tags import ring_step, steps_per_iteration
from hosts import dcqcn, ring
from hosts.job import JobSpec, derived_deadlines, drawn_ahead, first_step_slack
from hosts.transport import Transport, TransportTimeout


@dataclass(frozen=True, slots=True)
class Sleep:
    """Wait this long (a straggler's compute delay)."""
    seconds: float


@dataclass(frozen=True, slots=True)
class Await:
    """Drive the transport until `step` is received in full and every packet
    of it sent once (Transport.wait); the loop is sent the step's bytes, or
    thrown TransportTimeout at `deadline` (the clock's seconds)."""
    step: int
    deadline: float


@dataclass(frozen=True, slots=True)
class Linger:
    """After the last step: keep acknowledging until the predecessor has been
    quiet for idle_s, or the deadline (Transport.linger)."""
    idle_s: float
    deadline: float


Request = Sleep | Await | Linger
Loop = Generator[Request, Any, int]


def linger_idle_s(udp) -> float:
    """How long the predecessor must stay quiet before a rank that has
    finished stops.  Its retransmission of a step whose last ACK was lost may
    wait up to rto_max (backed off under congestion), so wait longer than
    that; leaving earlier stranded a sender until its step deadline."""
    return max(0.3, 6 * udp.rto_ms / 1000.0, 1.5 * udp.rto_max_ms / 1000.0)


def stats_fields(tr) -> dict:
    """The stats event's fields: the transport's counters and, where it
    keeps them (UDP), how late it ran its pacer and DCQCN timers."""
    lateness = getattr(tr, "lateness", None)
    return {"counters": dict(sorted(tr.counters.items())), **({"lateness": lateness()} if lateness else {})}


def rate_control(spec: JobSpec, now: float):
    """(reaction point, notification point) for this job.  DCQCN off: pace at
    the line rate (or not at all when the job names none) and never ask for
    CNPs.  Otherwise the DCQCN pair of hosts.dcqcn with the job's preset,
    line rate, step time, timer floor and overrides (no line rate: nothing
    to start from, as off)."""
    pair = dcqcn.controllers(spec.dcqcn_preset, spec.line_rate_bps, now, spec.regime_step_s,
                             spec.timer_floor_s, **spec.dcqcn_overrides)
    if pair is not None:
        return pair
    return dcqcn.FixedRate(spec.line_rate_bps), dcqcn.NotificationPoint(None)


@functools.cache
def _zeros(nbytes: int) -> memoryview:
    return memoryview(bytes(nbytes))


class SizedRing:
    """A rank's ring without its data: the same steps and chunk sizes as
    ring.RingRank, every chunk zeros, nothing to check.  For runs whose
    messages are too large to hold and sum in memory (the simulation at a
    deployment's scale): the protocol carries every byte, the result is
    not checked (iter_end's ``exact`` is None)."""

    def __init__(self, rank: int, n_ranks: int, n_elems: int):
        self.rank, self.n = rank, n_ranks
        self.bounds = ring.chunk_bounds(n_elems, n_ranks)

    def plan(self, k: int) -> ring.StepPlan:
        return ring.plan(self.rank, self.n, k)

    def _size(self, chunk: int) -> int:
        start, end = self.bounds[chunk]
        return (end - start) * ring.ITEM

    def send_bytes(self, k: int) -> memoryview:
        return _zeros(self._size(self.plan(k).send_chunk))

    def apply(self, k: int, received) -> None:
        want = self._size(self.plan(k).recv_chunk)
        if len(received) != want:
            raise ValueError(f"step {k}: got {len(received)} bytes, chunk holds {want}")


class Rank:
    """One rank of a job (spec) and its transport.  `log` has emit(kind,
    iter, step, **fields); `transport_cls` takes the Transport protocol's
    keyword arguments; `clock` is the monotonic clock the deadlines and
    DCQCN count in; data=False runs without data (SizedRing)."""

    def __init__(self, spec: JobSpec, rank: int, log, transport_cls: type[Transport],
                 clock: Callable[[], float], data: bool = True):
        self.spec = spec
        self.rank = rank
        self.n = spec.n_ranks
        self.spi = steps_per_iteration(self.n)
        self.total_steps = spec.iterations * self.spi
        self.log = log
        self.clock = clock
        self.with_data = data
        self.step_s, self.run_s = derived_deadlines(spec)
        self.at = (0, 0)             # (iteration, step) in progress, for error events
        self.failed: str | None = None   # why the loop failed (its error event's reason)
        self.ahead: dict[int, tuple[np.ndarray, np.ndarray]] = {}   # drawn before the first step
        rp, np_ = rate_control(spec, clock())
        self.tr: Transport = transport_cls(job=spec.job, rank=rank, ips=spec.ips, data_port=spec.data_port,
                                           params=spec.udp, recv_len=self.recv_len, log=self.emit, rp=rp,
                                           np_=np_, faults=spec.faults)

    def recv_len(self, step: int) -> int | None:
        if not 0 <= step < self.total_steps:
            return None
        return ring.recv_bytes(self.rank, self.n, self.spec.n_elems, step % self.spi)

    def emit(self, kind: str, step: int, **fields) -> None:
        self.log.emit(kind, iter=step // self.spi, step=step, **fields)

    def reference(self, iteration: int) -> np.ndarray:
        spec = self.spec
        inputs = [ring.make_input(spec.seed, iteration, r, spec.n_elems) for r in range(self.n)]
        return ring.ring_order_sum(inputs)

    def data(self, iteration: int) -> tuple[np.ndarray, np.ndarray]:
        """This rank's input of an iteration and the reference result."""
        spec = self.spec
        return ring.make_input(spec.seed, iteration, self.rank, spec.n_elems), self.reference(iteration)

    def prepare(self) -> None:
        """Inputs and references before `ready` (hosts.job.drawn_ahead):
        every iteration's when they fit in PRECOMPUTE_BYTES, else the
        first's.  Drawn at each iteration's start, 16 agents on 2 cores
        spent ~20 ms of CPU each between iterations, which the ring waited
        for."""
        spec = self.spec
        if self.with_data:
            self.ahead = {it: self.data(it) for it in range(drawn_ahead(spec.iterations, spec.message_bytes))}

    def _ring(self, it: int):
        """The iteration's ring and its reference result (None without data)."""
        if not self.with_data:
            return SizedRing(self.rank, self.n, self.spec.n_elems), None
        # the inputs and the reference before iter_start: the check costs
        # no time inside the measured collective
        mine, ref = self.ahead.pop(it) if it in self.ahead else self.data(it)
        return ring.RingRank(self.rank, self.n, mine), ref

    def steps(self, start: float | None = None, start_info: dict | None = None) -> Loop:
        """The iterations (module docstring); returns the exit code.  start:
        the clock's time the run started (None: now), which the run deadline
        and iteration 0's straggle delay count from; start_info: iteration
        0's iter_start `start` field."""
        spec, clock = self.spec, self.clock
        start = clock() if start is None else start
        run_deadline = start + self.run_s
        wrong = 0
        for it in range(spec.iterations):
            delay = spec.straggle_delay(self.rank, it)
            if delay:
                yield Sleep(min(delay, max(0.0, run_deadline - clock())))
            rr, ref = self._ring(it)
            first = ring_step(it, 0, self.n)
            extra = {"start": start_info} if it == 0 and start_info else {}
            self.log.emit("iter_start", iter=it, step=first, **extra)
            for k in range(self.spi):
                step = ring_step(it, k, self.n)
                self.at = (it, step)
                p = rr.plan(k)
                self.log.emit("step_start", iter=it, step=step, k=k, phase=p.phase,
                              send_chunk=p.send_chunk, recv_chunk=p.recv_chunk)
                self.tr.send(step, rr.send_bytes(k))
                started = clock()
                step_deadline = started + self.step_s + (first_step_slack(spec) if step == 0 else 0.0)
                deadline = min(step_deadline, run_deadline)
                try:
                    got = yield Await(step, deadline)
                except TransportTimeout as e:
                    which = "run" if run_deadline <= step_deadline else "step"
                    limit = self.run_s if which == "run" else step_deadline - started
                    return self.fail(it, step, which, limit, e.info)
                rr.apply(k, got)
                self.log.emit("step_end", iter=it, step=step, k=k, phase=p.phase, bytes=len(got))
            exact = None if ref is None else bool(np.array_equal(rr.buf.view(np.uint32), ref.view(np.uint32)))
            wrong += exact is False
            self.log.emit("iter_end", iter=it, step=ring_step(it, self.spi - 1, self.n), exact=exact)
        yield Linger(linger_idle_s(spec.udp), run_deadline)
        self.log.emit("stats", iter=spec.iterations - 1, step=self.total_steps - 1, **stats_fields(self.tr))
        return exits.WRONG if wrong else exits.OK

    def fail(self, it: int, step: int, which: str, limit: float, info: dict) -> int:
        reason = f"{which} deadline of {limit:.1f} s passed waiting for {info['what']}"
        fields = {k: v for k, v in info.items() if k not in ("what", "step")}
        self.log.emit("error", iter=it, step=step, reason=reason, deadline=which, **fields)
        self.log.emit("stats", iter=it, step=step, **stats_fields(self.tr))
        self.failed = reason
        return exits.FAILED
