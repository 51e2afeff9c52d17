"""Where a run's jitter windows land among its ranks (pure): a ``compute``
event gets the window in which its rank started late, an access-link event
the job and rank of the host on that link.  records.load_run applies both,
so every window leaves it placed."""

from __future__ import annotations

from typing import Any

NS = 1e9
Event = dict[str, Any]


def place_compute_jitter(windows: list[dict[str, Any]], events: list[Event]) -> list[dict[str, Any]]:
    """Give each ``compute`` jitter event (rank ``rank`` of job ``job`` starts
    iteration ``params.iter`` ``params.delay_s`` late) the window it shows up
    as: from ``delay_s`` before that rank's first step_start of that
    iteration to that step_start.  Events that cannot be placed (no such
    step_start) keep start_ns/end_ns None."""
    first: dict[tuple[Any, int, int], int] = {}
    for e in events:
        if e["kind"] == "step_start":
            for key in ((e["job"], e["rank"], e["iter"]), (None, e["rank"], e["iter"])):
                first[key] = min(first.get(key, e["t"]), e["t"])
    out = []
    for w in windows:
        params = w.get("params") or {}
        if w.get("kind") == "compute" and w.get("start_ns") is None:
            key = (w.get("job"), w.get("rank"), params.get("iter"))
            t = first.get(key)
            delay = params.get("delay_s")
            if t is not None and isinstance(delay, (int, float)):
                w = {**w, "start_ns": t - int(delay * NS), "end_ns": t}
        out.append(w)
    return out


def attach_link_ranks(windows: list[dict[str, Any]], config: dict[str, Any]) -> list[dict[str, Any]]:
    """A jitter event on a host's access link (name ``<host>-<switch>`` or
    ``<switch>-<host>``) with no ``rank`` gets the job and rank of that host,
    from config.toml's ``[[jobs]]`` ``hosts`` lists (ring order), so a plot
    can shade that rank's row.  Fabric links stay without a rank."""
    where: dict[str, tuple[Any, int]] = {}
    jobs = config.get("jobs")
    for i, job in enumerate(jobs if isinstance(jobs, list) else []):
        hosts = job.get("hosts") if isinstance(job, dict) else None
        if isinstance(hosts, list):
            for rank, host in enumerate(hosts):
                where.setdefault(str(host), (job.get("job", i + 1), rank))
    out = []
    for w in windows:
        link = w.get("link")
        if w.get("rank") is None and isinstance(link, str):
            ends = [where[h] for h in link.split("-") if h in where]
            if len(ends) == 1:
                w = {**w, "job": ends[0][0], "rank": ends[0][1]}
        out.append(w)
    return out
