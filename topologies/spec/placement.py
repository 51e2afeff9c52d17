"""Placement of jobs on hosts, ring order, and the job files' contents (pure).

The ring order is chosen so that ring flows cross shared links: a job's ranks
alternate between the switches their hosts hang off (leaf 1, leaf 2, leaf 1,
...), so every ring edge goes through the fabric where the jobs' flows meet.
On a star every flow crosses the one switch anyway.

A job table of the config (``[[jobs]]``) holds:
- ``ranks`` (int >= 2, required) or ``hosts`` (explicit list of host names, in
  ring order; ``ranks`` then defaults to its length);
- ``job`` (id, default: position + 1), ``data_port`` (default 5000 + 10 *
  position; the control port is data_port + 1);
- ``placement``: "interleave" (default, alternate between switches) or
  "packed" (fill one switch before the next);
- everything else (message_bytes, iterations, transport, seed, udp, dcqcn,
  deadlines, straggle) is passed to the job file unchanged.

When there are fewer free hosts than ranks, jobs share hosts (never two ranks
of one job on a host): agents of different jobs bind the same address with
different data ports.
"""

from __future__ import annotations

from topologies.spec.topo import TopoError, TopoSpec

DEFAULT_DATA_PORT = 5000
DATA_PORT_STRIDE = 10
PLACEMENTS = ("interleave", "packed")
PLACEMENT_KEYS = {"ranks", "hosts", "job", "data_port", "placement"}


def interleave(groups: list[list[str]]) -> list[str]:
    """Round-robin over groups: [a1, b1, a2, b2, a3, ...]."""
    out = []
    for i in range(max((len(g) for g in groups), default=0)):
        out.extend(g[i] for g in groups if i < len(g))
    return out


def place_jobs(topo: TopoSpec, jobs: list[dict]) -> list[dict]:
    """Job dicts in the job-file layout of docs/hosts.md, ips filled in."""
    if not isinstance(jobs, list) or not jobs:
        raise TopoError("jobs: expected a non-empty list of [[jobs]] tables")
    groups = topo.hosts_by_switch()
    switch_order = [s.name for s in topo.switches if s.name in groups]
    used: dict[str, int] = {h.name: 0 for h in topo.hosts}   # agents per host so far
    specs = []
    ports_taken = set()
    ids_taken = set()
    for pos, job in enumerate(jobs):
        where = f"jobs[{pos}]"
        if not isinstance(job, dict):
            raise TopoError(f"{where}: expected a table")
        hosts = _job_hosts(topo, job, where, groups, switch_order, used)
        for h in hosts:
            used[h] += 1
        job_id = job.get("job", pos + 1)
        if not isinstance(job_id, int) or isinstance(job_id, bool) or not 0 <= job_id <= 65535:
            raise TopoError(f"{where}.job: expected an integer in 0..65535, got {job_id!r}")
        if job_id in ids_taken:
            raise TopoError(f"{where}.job: id {job_id} used twice")
        ids_taken.add(job_id)
        port = job.get("data_port", DEFAULT_DATA_PORT + DATA_PORT_STRIDE * pos)
        if not isinstance(port, int) or isinstance(port, bool) or not 1 <= port <= 0xBFFE:
            raise TopoError(f"{where}.data_port: expected an integer in 1..49150 "
                            f"(below the step-tag ports), got {port!r}")
        if port in ports_taken or port + 1 in ports_taken:
            raise TopoError(f"{where}.data_port: {port} overlaps another job's data/control port")
        ports_taken |= {port, port + 1}
        spec = {k: v for k, v in job.items() if k not in PLACEMENT_KEYS}
        spec["job"] = job_id
        spec["data_port"] = port
        spec["ranks"] = [{"rank": r, "ip": topo.host(h).ip, "host": h} for r, h in enumerate(hosts)]
        specs.append(spec)
    return specs


def _job_hosts(topo, job, where, groups, switch_order, used) -> list[str]:
    names = {h.name for h in topo.hosts}
    if "hosts" in job:
        hosts = job["hosts"]
        if not isinstance(hosts, list) or not all(isinstance(h, str) for h in hosts):
            raise TopoError(f"{where}.hosts: expected a list of host names")
        bad = [h for h in hosts if h not in names]
        if bad:
            raise TopoError(f"{where}.hosts: no host {bad[0]!r} in the topology")
        if len(set(hosts)) != len(hosts):
            raise TopoError(f"{where}.hosts: a host appears twice")
        if "ranks" in job and job["ranks"] != len(hosts):
            raise TopoError(f"{where}.ranks: {job['ranks']!r} differs from the {len(hosts)} hosts listed")
        if len(hosts) < 2:
            raise TopoError(f"{where}.hosts: a ring needs at least 2 hosts")
        return list(hosts)
    n = job.get("ranks")
    if not isinstance(n, int) or isinstance(n, bool) or n < 2:
        raise TopoError(f"{where}.ranks: expected an integer >= 2, got {n!r}")
    if n > len(names):
        raise TopoError(f"{where}.ranks: {n} ranks but the topology has {len(names)} hosts")
    how = job.get("placement", "interleave")
    if how not in PLACEMENTS:
        raise TopoError(f"{where}.placement: expected one of {', '.join(PLACEMENTS)}, got {how!r}")
    # least-loaded hosts first (free ones before shared); within one load,
    # round-robin over the switches (interleave) or switch by switch (packed)
    chosen: list[str] = []
    for load in sorted(set(used.values())):
        groups_at = [[h for h in groups[sw] if used[h] == load] for sw in switch_order]
        order = interleave(groups_at) if how == "interleave" else [h for g in groups_at for h in g]
        chosen.extend(order[:n - len(chosen)])
        if len(chosen) == n:
            break
    picked = [[h for h in groups[sw] if h in chosen] for sw in switch_order]
    picked = [g for g in picked if g]
    return interleave(picked) if how == "interleave" else [h for g in picked for h in g]


def ring_flows(spec: dict) -> list[tuple[str, str, int]]:
    """The job's ring flows: (src host, dst host, data port), rank r -> r+1."""
    ranks = spec["ranks"]
    n = len(ranks)
    return [(ranks[r]["host"], ranks[(r + 1) % n]["host"], spec["data_port"]) for r in range(n)]
