"""The flow-level model of ring AllReduce jobs on a network: event-driven, rates
constant between events.  Pure: no sockets, no clock, no files.

Each ring edge r -> r+1 of a job is one flow.  The ranks run as the agents do
(hosts/agent.py):

* rank r starts step s+1 when the chunk of step s from rank r-1 has fully
  arrived (last byte sent + the path's propagation delay) and, as the agent
  only waits for a step it has started, not before it started step s; step 0
  of iteration i+1 starts when the last step of iteration i has arrived, plus
  the rank's straggle delay for iteration i+1 (iteration 0: from t = 0);
* at step k rank r sends chunk (r - k) mod N (hosts.ring's schedule and chunk
  sizes); an edge sends its steps in order, a step's bytes only after the
  previous step's are all sent;
* a rank asleep in its straggle delay takes no packets: the agent sleeps and
  reads no socket, so its predecessor's window fills and the flow into it
  stops until it wakes (as NCCL's sender waits for the buffers a rank posts
  only once it calls the collective).  The window's packets sent before the
  flow stops (16 x 1400 bytes in the victim configs) are left out.

At every instant something changes (a transfer finishes, a chunk arrives and
the next step starts, a capacity changes, a straggler wakes, cross traffic
starts or stops) the flows that have bytes to send share the links anew
(experiments.oracle.sharing): max-min fairly in the baseline; in Symphony each
switch's egress link gives strict priority to the flows its switch would not
mark.  The fluid approximation applies a flow's rate on all its links at once;
propagation delay only postpones the arrival.

Symphony's marking condition, as the P4 program computes it: a switch keeps per
job a frontier, the lowest step among the job's flows that cross it; a flow's
step there is the newest step it has begun sending (before its first step, the
step before it, -1); the flow is outpacing at that switch when step - frontier
> threshold.  Links leaving a host have no switch and so no priority.  Only
the switches that track a flow (RingJob.trackers) keep a frontier for it and
mark it; under the leaves' verdict (RingJob.verdict) a later switch of its
path marks it too, as the last tracking switch before it judged.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from dataclasses import dataclass, field

from contract.tags import ring_step, steps_per_iteration
from hosts import ring

from .inputs import ModelError, ModelInput, RingJob, check
from .results import VARIANTS, ModelResult, StepRecord, Transfer, job_result
from .sharing import max_min, priority_max_min

# two instants closer than this are one: float sums of rate x time never
# land exactly on a finish time
EPS_T = 1e-10


@dataclass
class _Edge:
    """The flow of one ring edge."""
    job: int                        # index into the input's jobs
    src: int
    links: tuple[int, ...]
    delay_s: float
    marked_at: tuple[int, ...] = ()  # its links whose switch may mark it (RingJob.trackers), in path order
    judged_by: tuple[str, ...] = ()  # per marked link, the switch whose frontier decides (RingJob.verdict)
    pending: deque[int] = field(default_factory=deque)    # steps started by src, not yet being sent
    sending: int | None = None      # global step being sent
    left_bits: float = 0.0
    send_start: float = 0.0
    rate: float = 0.0
    step: int = -1                  # newest step begun: what a switch reads from its packets


@dataclass
class _Rank:
    current: int | None = None      # step started whose chunk has not arrived yet
    start: dict[int, float] = field(default_factory=dict)
    arrived: dict[int, float] = field(default_factory=dict)


class _Model:
    def __init__(self, mi: ModelInput, variant: str, threshold: int):
        self.mi = mi
        self.symphony = variant == "symphony"
        self.threshold = threshold
        self.link_index = {link.id: i for i, link in enumerate(mi.links)}
        self.cap = [link.rate_bps for link in mi.links]
        self.cross = [0.0] * len(mi.links)
        self.switch_of = [link.leaves_switch for link in mi.links]
        self.t = 0.0
        self.heap: list[tuple[float, int, str, tuple]] = []
        self.seq = 0
        self.edges = [[self._edge(j, job, r) for r in range(job.n_ranks)] for j, job in enumerate(mi.jobs)]
        self.ranks = [[_Rank() for _ in range(job.n_ranks)] for job in mi.jobs]
        self.chunk_bits = [self._chunk_bits(job) for job in mi.jobs]
        self.straggle: dict[tuple[int, int, int], float] = {}
        job_index = {job.job: j for j, job in enumerate(mi.jobs)}
        for s in mi.straggles:
            key = (job_index[s.job], s.rank, s.iteration)
            self.straggle[key] = self.straggle.get(key, 0.0) + s.delay_s      # the agent sums them too
        self.asleep: set[tuple[int, int]] = set()     # (job index, rank) in a straggle delay
        self.crossing = self._crossing()
        self.steps: list[StepRecord] = []
        self.transfers: list[Transfer] = []
        self.ranks_left = sum(job.n_ranks for job in mi.jobs)
        self.events = 0
        self.inexact = 0
        self.shares: dict[tuple, list[float]] = {}     # (paths, low links) -> rates

    # --- set-up -------------------------------------------------------------

    def _edge(self, j: int, job: RingJob, r: int) -> _Edge:
        path = job.paths[r]
        delay = sum(self.mi.links[self.link_index[link]].delay_s for link in path)
        links = tuple(self.link_index[link] for link in path)
        sws = job.trackers[r] if job.trackers is not None else None
        marked_at, judged_by, judge = [], [], None
        for link in links:
            sw = self.switch_of[link]
            if sw is not None and (sws is None or sw in sws):
                judge = sw
            elif sw is None or not job.verdict or judge is None:
                continue
            marked_at.append(link)
            judged_by.append(judge)
        return _Edge(j, r, links, delay, tuple(marked_at), tuple(judged_by))

    @staticmethod
    def _chunk_bits(job: RingJob) -> list[int]:
        bounds = ring.chunk_bounds(job.message_bytes // ring.ITEM, job.n_ranks)
        return [(end - start) * ring.ITEM * 8 for start, end in bounds]

    def _crossing(self) -> dict[tuple[str, int], list[_Edge]]:
        """(switch, job) -> the job's flows that cross the switch and that
        it tracks: whose frontier that switch keeps."""
        out: dict[tuple[str, int], list[_Edge]] = {}
        for edges in self.edges:
            for e in edges:
                for sw in set(e.judged_by):
                    out.setdefault((sw, e.job), []).append(e)
        return out

    def push(self, t: float, kind: str, *args) -> None:
        self.seq += 1
        heapq.heappush(self.heap, (t, self.seq, kind, args))

    def _schedule_inputs(self) -> None:
        for c in self.mi.capacity_changes:
            self.push(c.t_s, "cap", self.link_index[c.link], c.rate_bps)
        for x in self.mi.cross:
            links = tuple(self.link_index[link] for link in x.path)
            self.push(x.start_s, "cross", links, x.rate_bps)
            if math.isfinite(x.end_s):
                self.push(x.end_s, "cross", links, -x.rate_bps)
        # every sleeper of iteration 0 first: a rank started before its
        # successor must not send to it while it sleeps
        self.asleep = {(j, r) for (j, r, it), delay in self.straggle.items() if it == 0 and delay > 0}
        for j, job in enumerate(self.mi.jobs):
            for r in range(job.n_ranks):
                self._begin_iteration(j, r, 0, 0.0)

    # --- the ranks, as the agent runs them ------------------------------------

    def spi(self, j: int) -> int:
        return steps_per_iteration(self.mi.jobs[j].n_ranks)

    def _begin_iteration(self, j: int, r: int, step: int, t: float) -> None:
        delay = self.straggle.get((j, r, step // self.spi(j)), 0.0)
        if delay > 0:
            self.asleep.add((j, r))
            self.push(t + delay, "wake", j, r, step)
        else:
            self._start_step(j, r, step, t)

    def _start_step(self, j: int, r: int, step: int, t: float) -> None:
        rank = self.ranks[j][r]
        rank.current = step
        rank.start[step] = t
        edge = self.edges[j][r]
        edge.pending.append(step)
        self._send_next(edge, t)
        if step in rank.arrived:        # the chunk came before the rank was ready for it
            self._end_step(j, r, step, t)

    def _arrive(self, j: int, r: int, step: int, t: float) -> None:
        rank = self.ranks[j][r]
        rank.arrived[step] = t
        if rank.current == step:
            self._end_step(j, r, step, t)

    def _end_step(self, j: int, r: int, step: int, t: float) -> None:
        job = self.mi.jobs[j]
        rank = self.ranks[j][r]
        rank.current = None
        spi = self.spi(j)
        it, k = divmod(step, spi)
        self.steps.append(StepRecord(
            job.job, r, it, k, ring_step(it, k, job.n_ranks), "rs" if k < job.n_ranks - 1 else "ag",
            rank.start[step], t, self.chunk_bits[j][(r - k - 1) % job.n_ranks] // 8))
        nxt = step + 1
        if nxt == spi * job.iterations:
            self.ranks_left -= 1
        elif nxt % spi == 0:
            self._begin_iteration(j, r, nxt, t)
        else:
            self._start_step(j, r, nxt, t)

    # --- the flows ----------------------------------------------------------------

    def _send_next(self, e: _Edge, t: float) -> None:
        """Begin the edge's next started step if it is idle and its receiver
        awake (0-byte chunks finish at once)."""
        while e.sending is None and e.pending and (e.job, (e.src + 1) % len(self.edges[e.job])) not in self.asleep:
            step = e.pending.popleft()
            n = self.mi.jobs[e.job].n_ranks
            e.sending, e.send_start, e.step = step, t, step
            e.left_bits = float(self.chunk_bits[e.job][(e.src - step % self.spi(e.job)) % n])
            if e.left_bits <= 0:
                self._finish(e, t)

    def _finish(self, e: _Edge, t: float) -> None:
        job = self.mi.jobs[e.job]
        dst = (e.src + 1) % job.n_ranks
        step = e.sending
        assert step is not None
        bits = self.chunk_bits[e.job][(e.src - step % self.spi(e.job)) % job.n_ranks]
        self.transfers.append(Transfer(job.job, e.src, dst, step, bits // 8, e.send_start, t, t + e.delay_s))
        self.push(t + e.delay_s, "arrive", e.job, dst, step)
        e.sending, e.left_bits, e.rate = None, 0.0, 0.0
        self._send_next(e, t)

    # --- sharing ----------------------------------------------------------------

    def _active(self) -> list[_Edge]:
        return [e for edges in self.edges for e in edges if e.sending is not None]

    def _low_links(self, active: list[_Edge]) -> tuple[tuple[int, ...], ...]:
        """Per active flow, the links where its switch would mark it."""
        frontier = {key: min(e.step for e in edges) for key, edges in self.crossing.items()}
        return tuple(tuple(link for link, judge in zip(e.marked_at, e.judged_by, strict=True)
                           if e.step - frontier[(judge, e.job)] > self.threshold)
                     for e in active)

    def _share(self, active: list[_Edge]) -> None:
        paths = tuple(e.links for e in active)
        low = self._low_links(active) if self.symphony else None
        # the shares depend only on the paths, their classes and the
        # capacities (the cache is emptied when those change): a ring goes
        # through the same few situations again and again
        key = (paths, low)
        if key not in self.shares:
            caps = [max(0.0, c - x) for c, x in zip(self.cap, self.cross, strict=True)]
            if low is not None:
                rates, exact = priority_max_min(caps, paths, low)
                self.inexact += not exact
            else:
                rates = max_min(caps, paths)
            self.shares[key] = rates
        for e, rate in zip(active, self.shares[key], strict=True):
            e.rate = rate

    # --- the event loop -------------------------------------------------------

    def _handle(self, kind: str, args: tuple) -> None:
        if kind == "cap":
            link, rate = args
            self.cap[link] = rate
            self.shares.clear()
        elif kind == "cross":
            links, rate = args
            for link in links:
                self.cross[link] += rate
            self.shares.clear()
        elif kind == "wake":
            j, r, step = args
            self.asleep.discard((j, r))
            self._send_next(self.edges[j][(r - 1) % len(self.edges[j])], self.t)   # the flow into it resumes
            self._start_step(j, r, step, self.t)
        elif kind == "arrive":
            self._arrive(*args, self.t)

    def _advance(self, active: list[_Edge]) -> None:
        """To the next instant: a flow's last byte or a scheduled event."""
        t_next = self.heap[0][0] if self.heap else math.inf
        for e in active:
            if e.rate > 0:
                t_next = min(t_next, self.t + e.left_bits / e.rate)
        if math.isinf(t_next):
            stuck = [(self.mi.jobs[e.job].job, e.src, e.sending) for e in active]
            raise ModelError(f"stalled at {self.t:.6f} s: no capacity for (job, rank, step) {stuck}")
        dt = t_next - self.t
        self.t = t_next
        for e in active:
            e.left_bits -= e.rate * dt
        for e in active:
            if e.left_bits <= e.rate * EPS_T:
                self._finish(e, self.t)

    def _drain(self) -> None:
        """Apply every scheduled event of this instant (they may add more)."""
        while self.heap and self.heap[0][0] <= self.t + EPS_T:
            _, _, kind, args = heapq.heappop(self.heap)
            self._handle(kind, args)

    def run(self) -> None:
        self._schedule_inputs()
        self._drain()
        while self.ranks_left:
            active = self._active()
            self._share(active)
            self.events += 1
            self._advance(active)
            self._drain()


def simulate(mi: ModelInput, variant: str = "baseline", threshold: int = 1) -> ModelResult:
    """Run every job of `mi` to its last step under one variant: "baseline"
    (max-min fair sharing) or "symphony" (outpacing flows yield at switch
    egresses; `threshold` as in the config's [symphony])."""
    if variant not in VARIANTS:
        raise ModelError(f"variant must be one of {VARIANTS}, got {variant!r}")
    if not isinstance(threshold, int) or threshold < 0:
        raise ModelError(f"threshold must be an integer >= 0, got {threshold!r}")
    check(mi)
    model = _Model(mi, variant, threshold)
    model.run()
    links = {link.id: link for link in mi.links}
    steps = sorted(model.steps, key=lambda s: (s.job, s.rank, s.step))
    jobs = {job.job: job_result(job, links, [s for s in steps if s.job == job.job]) for job in mi.jobs}
    transfers = sorted(model.transfers, key=lambda x: (x.job, x.src, x.step))
    end = max(s.end_s for s in steps)
    return ModelResult(variant, threshold, jobs, tuple(steps), tuple(transfers), end, model.events, model.inexact)
