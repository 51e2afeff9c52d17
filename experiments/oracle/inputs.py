"""What the flow-level model takes: a network of directed links, ring jobs with
one path per ring edge, and the scenario's changes over time.  Small frozen
dataclasses and one check of their consistency; nothing here knows the
experiment config (an adapter builds these from it).
"""

from __future__ import annotations

import math
from dataclasses import dataclass


class ModelError(ValueError):
    """An input the model cannot run: names what is wrong."""


@dataclass(frozen=True)
class Link:
    """One direction of a physical link.  A full-duplex link is two of these,
    each with the link's rate.  `leaves_switch` names the switch whose egress
    this is (Symphony prioritises there); None for a link leaving a host."""
    id: str
    rate_bps: float
    delay_s: float = 0.0
    leaves_switch: str | None = None


@dataclass(frozen=True)
class RingJob:
    """A ring AllReduce: `hosts[r]` runs rank r (ring order); `paths[r]` is the
    directed links from rank r to rank r+1 (mod N); `trackers[r]` the
    switches that track that edge's flow, keep its job's frontier and may
    mark it (symphony.track), None: every switch of its path; `verdict`:
    every later switch of the path marks it too, as the last tracking
    switch before it judged (track verdict: the leaf's verdict carried in
    the packet)."""
    job: int
    hosts: tuple[str, ...]
    paths: tuple[tuple[str, ...], ...]
    message_bytes: int
    iterations: int
    trackers: tuple[frozenset[str], ...] | None = None
    verdict: bool = False

    @property
    def n_ranks(self) -> int:
        return len(self.hosts)


@dataclass(frozen=True)
class CapacityChange:
    """From t_s on, directed link `link` carries rate_bps (a squeeze is one
    change per direction at its start and one back at its end)."""
    t_s: float
    link: str
    rate_bps: float


@dataclass(frozen=True)
class CrossDemand:
    """Traffic that does not back off: from start_s to end_s it takes
    min(rate_bps, capacity) of every link on its path, before any ring flow."""
    start_s: float
    end_s: float
    path: tuple[str, ...]
    rate_bps: float


@dataclass(frozen=True)
class Straggle:
    """Rank `rank` of job `job` starts iteration `iteration` delay_s late
    (after it has received the previous iteration's last chunk; iteration 0
    counts from t = 0)."""
    job: int
    rank: int
    iteration: int
    delay_s: float


@dataclass(frozen=True)
class ModelInput:
    links: tuple[Link, ...]
    jobs: tuple[RingJob, ...]
    capacity_changes: tuple[CapacityChange, ...] = ()
    cross: tuple[CrossDemand, ...] = ()
    straggles: tuple[Straggle, ...] = ()


def _finite(what: str, x: float, lo: float = 0.0) -> None:
    if not (isinstance(x, int | float) and math.isfinite(x) and x >= lo):
        raise ModelError(f"{what} must be a finite number >= {lo}, got {x!r}")


def _check_path(what: str, path: tuple[str, ...], known: set[str]) -> None:
    if not path:
        raise ModelError(f"{what}: empty path")
    for link in path:
        if link not in known:
            raise ModelError(f"{what}: unknown link {link!r}")
    if len(set(path)) != len(path):
        raise ModelError(f"{what}: path crosses a link twice: {list(path)}")


def _check_links(links: tuple[Link, ...]) -> set[str]:
    ids = [link.id for link in links]
    if len(set(ids)) != len(ids):
        raise ModelError("link ids are not unique")
    for link in links:
        _finite(f"link {link.id}: rate_bps", link.rate_bps)
        _finite(f"link {link.id}: delay_s", link.delay_s)
    return set(ids)


def _check_job(j: RingJob, known: set[str]) -> None:
    n = j.n_ranks
    if n < 2:
        raise ModelError(f"job {j.job}: a ring needs at least 2 ranks")
    if len(j.paths) != n:
        raise ModelError(f"job {j.job}: {len(j.paths)} paths for {n} ring edges")
    for r, path in enumerate(j.paths):
        _check_path(f"job {j.job} edge {r}->{(r + 1) % n}", path, known)
    if j.trackers is not None and len(j.trackers) != n:
        raise ModelError(f"job {j.job}: {len(j.trackers)} tracker sets for {n} ring edges")
    if not isinstance(j.message_bytes, int) or j.message_bytes < 0:
        raise ModelError(f"job {j.job}: message_bytes must be an integer >= 0")
    if not isinstance(j.iterations, int) or j.iterations < 1:
        raise ModelError(f"job {j.job}: iterations must be an integer >= 1")


def check(mi: ModelInput) -> None:
    """Raise ModelError naming the first inconsistency of an input."""
    known = _check_links(mi.links)
    if not mi.jobs:
        raise ModelError("no jobs")
    if len({j.job for j in mi.jobs}) != len(mi.jobs):
        raise ModelError("job ids are not unique")
    for j in mi.jobs:
        _check_job(j, known)
    for c in mi.capacity_changes:
        if c.link not in known:
            raise ModelError(f"capacity change at {c.t_s} s: unknown link {c.link!r}")
        _finite(f"capacity change of {c.link}: t_s", c.t_s)
        _finite(f"capacity change of {c.link}: rate_bps", c.rate_bps)
    for x in mi.cross:
        _check_path(f"cross traffic from {x.start_s} s", x.path, known)
        _finite("cross traffic start_s", x.start_s)
        _finite("cross traffic rate_bps", x.rate_bps)
        if not (x.end_s >= x.start_s):      # end may be inf: to the end of the run
            raise ModelError(f"cross traffic ends ({x.end_s}) before it starts ({x.start_s})")
    by_id = {j.job: j for j in mi.jobs}
    for s in mi.straggles:
        j = by_id.get(s.job)
        if j is None or not 0 <= s.rank < j.n_ranks or not 0 <= s.iteration < j.iterations:
            raise ModelError(f"straggle {s}: no such job, rank or iteration")
        _finite(f"straggle of job {s.job} rank {s.rank}: delay_s", s.delay_s)
