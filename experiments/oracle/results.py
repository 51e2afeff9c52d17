"""What the flow-level model returns, and the figures derived from it the way
the analysis derives them from measured records (analysis/metrics.py):

* CCT of an iteration: from the first step start of that iteration over all
  ranks to the last step end over all ranks;
* the bandwidth bound of one AllReduce: 2(N-1)/N x S x 8 / B, with B the
  job's slowest access link (the first link of a rank's outgoing path and the
  last of its incoming one) at its nominal rate, before any squeeze.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from hosts import ring

from .inputs import Link, RingJob

VARIANTS = ("baseline", "symphony")


@dataclass(frozen=True)
class StepRecord:
    """One step of one rank, like an agent's step_start/step_end pair: start
    when the rank began sending it, end when the predecessor's chunk of that
    step had fully arrived (and the step had started)."""
    job: int
    rank: int
    iteration: int
    k: int
    step: int           # global: iteration x 2(N-1) + k
    phase: str          # "rs" | "ag"
    start_s: float
    end_s: float
    bytes: int          # received at this step


@dataclass(frozen=True)
class Transfer:
    """One step's chunk on one ring edge: sent from send_start_s (the sender's
    step start, or later when its previous step was still being sent) to
    send_end_s; arrived after the path's propagation delay."""
    job: int
    src: int
    dst: int
    step: int
    bytes: int
    send_start_s: float
    send_end_s: float
    arrival_s: float


@dataclass(frozen=True)
class JobResult:
    job: int
    n_ranks: int
    cct_s: tuple[float, ...]        # per iteration
    bound_s: float                  # bandwidth bound of one iteration
    bound_rate_bps: float           # B of the bound

    @property
    def mean_cct_s(self) -> float:
        return sum(self.cct_s) / len(self.cct_s)


@dataclass(frozen=True)
class ModelResult:
    variant: str
    threshold: int
    jobs: dict[int, JobResult]
    steps: tuple[StepRecord, ...]
    transfers: tuple[Transfer, ...]
    end_s: float                    # last step end of all jobs
    events: int                     # instants at which rates were recomputed
    inexact_shares: int             # sharing computations where the priority rule kept the blocking fill


def cct_per_iteration(steps: Iterable[StepRecord], iterations: int) -> tuple[float, ...]:
    first = [float("inf")] * iterations
    last = [float("-inf")] * iterations
    for s in steps:
        first[s.iteration] = min(first[s.iteration], s.start_s)
        last[s.iteration] = max(last[s.iteration], s.end_s)
    return tuple(b - a for a, b in zip(first, last, strict=True))


def bound_rate_bps(job: RingJob, links: dict[str, Link]) -> float:
    n = job.n_ranks
    access = [job.paths[r][0] for r in range(n)] + [job.paths[r][-1] for r in range(n)]
    return min(links[link].rate_bps for link in access)


def job_result(job: RingJob, links: dict[str, Link], steps: list[StepRecord]) -> JobResult:
    rate = bound_rate_bps(job, links)
    bound = ring.bandwidth_bound_s(job.message_bytes, job.n_ranks, rate) if rate > 0 else float("inf")
    return JobResult(job.job, job.n_ranks, cct_per_iteration(steps, job.iterations), bound, rate)
