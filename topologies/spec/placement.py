"""Placement of jobs on hosts, in ring order (pure).

A job's ranks alternate between the switches their hosts hang off
("interleave": leaf 1, leaf 2, leaf 1, ...), so every ring edge crosses the
fabric where the jobs' flows meet, or fill one switch first ("packed"); an
explicit host list is the ring order as given.  When there are fewer free
hosts than ranks, jobs share hosts (never two ranks of one job on a host):
agents of different jobs bind the same address with different data ports.

The experiment config checks each request's values; place_jobs raises
TopoError only where the requests cannot be placed together.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from topologies.spec.topo import TopoError, TopoSpec

PLACEMENTS = ("interleave", "packed")


@dataclass(frozen=True)
class JobRequest:
    """A [[jobs]] table's placement part; hosts: explicit ring order (its
    length must be ranks); the control port is data_port + 1."""

    job: int
    ranks: int
    data_port: int
    transport: str = "udp"
    hosts: tuple[str, ...] | None = None
    placement: str = "interleave"


@dataclass(frozen=True)
class PlacedJob:
    job: int
    data_port: int
    transport: str
    hosts: tuple[str, ...]          # ring order: rank r runs on hosts[r]

    def ring_flows(self) -> list[tuple[str, str, int]]:
        """(src host, dst host, data port) of the ring, rank r -> r + 1."""
        n = len(self.hosts)
        return [(self.hosts[r], self.hosts[(r + 1) % n], self.data_port) for r in range(n)]


def interleave(groups: list[list[str]]) -> list[str]:
    """Round-robin over groups: [a1, b1, a2, b2, a3, ...]."""
    out = []
    for i in range(max((len(g) for g in groups), default=0)):
        out.extend(g[i] for g in groups if i < len(g))
    return out


def place_jobs(topo: TopoSpec, requests: Sequence[JobRequest]) -> list[PlacedJob]:
    """The jobs on the topology's hosts, in request order.  TopoError (naming
    ``jobs[i].key``) for a host the topology lacks, a ring that cannot be
    formed, or two jobs with one id or overlapping data/control ports."""
    groups = topo.hosts_by_switch()
    switch_order = [s.name for s in topo.switches if s.name in groups]
    used: dict[str, int] = {h.name: 0 for h in topo.hosts}   # agents per host so far
    placed: list[PlacedJob] = []
    for pos, req in enumerate(requests):
        where = f"jobs[{pos}]"
        if req.job in (p.job for p in placed):
            raise TopoError(f"{where}.job: id {req.job} used twice")
        if {req.data_port, req.data_port + 1} & {q for p in placed for q in (p.data_port, p.data_port + 1)}:
            raise TopoError(f"{where}.data_port: {req.data_port} overlaps another job's data/control port")
        hosts = _job_hosts(topo, req, where, groups, switch_order, used)
        for h in hosts:
            used[h] += 1
        placed.append(PlacedJob(req.job, req.data_port, req.transport, tuple(hosts)))
    return placed


def _job_hosts(topo: TopoSpec, req: JobRequest, where: str, groups: dict[str, list[str]],
               switch_order: list[str], used: dict[str, int]) -> list[str]:
    if req.ranks < 2:
        raise TopoError(f"{where}.ranks: a ring needs at least 2 ranks, got {req.ranks}")
    if req.hosts is not None:
        bad = [h for h in req.hosts if h not in used]
        if bad:
            raise TopoError(f"{where}.hosts: no host {bad[0]!r} in the topology")
        if len(set(req.hosts)) != len(req.hosts):
            raise TopoError(f"{where}.hosts: a host appears twice")
        if req.ranks != len(req.hosts):
            raise TopoError(f"{where}.ranks: {req.ranks} differs from the {len(req.hosts)} hosts listed")
        return list(req.hosts)
    n = req.ranks
    if n > len(used):
        raise TopoError(f"{where}.ranks: {n} ranks but the topology has {len(used)} hosts")
    if req.placement not in PLACEMENTS:
        raise TopoError(f"{where}.placement: expected one of {', '.join(PLACEMENTS)}, got {req.placement!r}")
    packed = req.placement == "packed"
    # least-loaded hosts first (free ones before shared); within one load,
    # round-robin over the switches (interleave) or switch by switch (packed)
    chosen: list[str] = []
    for load in sorted(set(used.values())):
        groups_at = [[h for h in groups[sw] if used[h] == load] for sw in switch_order]
        order = [h for g in groups_at for h in g] if packed else interleave(groups_at)
        chosen.extend(order[:n - len(chosen)])
        if len(chosen) == n:
            break
    picked = [g for g in ([h for h in groups[sw] if h in chosen] for sw in switch_order) if g]
    return [h for g in picked for h in g] if packed else interleave(picked)
