"""Metrics of one run, computed from parsed records only (no I/O, no clock).

Times inside are ns integers as the agents log them; what leaves
``run_metrics`` is seconds relative to the run's start (its first agent
event), so that runs line up on one axis.

Definitions (all per job, ranks = the ranks that logged events for it):

* CCT of an iteration: first ``step_start`` to last ``step_end`` over all ranks.
* Step skew of a global step: max - min over ranks of its ``step_start``
  times, and the same of its ``step_end`` times.
* Current step of a rank at time t: the ``step`` of its newest ``step_start``
  at or before t; a rank that has not started yet counts as one before the
  job's first step.  Misalignment(t) = newest - oldest current step across
  ranks, a step function from the job's first ``step_start`` to its last
  ``step_end``.
* Goodput of a rank in an iteration: the bytes of its ``step_end`` events x 8
  over its own active time (its first ``step_start`` to its last
  ``step_end``), and as a fraction of the link rate when that is known.
"""

from __future__ import annotations

import bisect
import math
from collections import defaultdict
from collections.abc import Iterable
from itertools import pairwise
from typing import Any

from contract.p4names import VERDICT_MARKS
from contract.tags import steps_per_iteration

Event = dict[str, Any]
Curve = list[tuple[int, int]]  # (t_ns, value from t on)

NS = 1e9


def by_job(events: Iterable[Event]) -> dict[int, list[Event]]:
    jobs: dict[int, list[Event]] = defaultdict(list)
    for e in events:
        jobs[e["job"]].append(e)
    return dict(jobs)


def ranks_of(events: Iterable[Event]) -> list[int]:
    return sorted({e["rank"] for e in events})


def job_order(jobs: Iterable[Any]) -> list[str]:
    """Job ids (as the summaries' keys, strings) in numeric order, others after."""
    return sorted(set(jobs), key=lambda j: (0, int(j), "") if str(j).isdigit() else (1, 0, str(j)))


def _of_kind(events: Iterable[Event], kind: str) -> list[Event]:
    return [e for e in events if e["kind"] == kind]


# ---------------------------------------------------------------- CCT

def iteration_windows(events: list[Event]) -> dict[int, dict[str, Any]]:
    """Per iteration: start/end ns (first step_start, last step_end over all
    ranks), CCT ns, whether every rank finished every step, and ``exact``
    (all iter_end events exact; None when there are none, or none was
    checked: a run without data, hosts.rank.SizedRing, says None)."""
    ranks = ranks_of(events)
    n_steps = steps_per_iteration(len(ranks))
    out: dict[int, dict[str, Any]] = {}
    starts: dict[int, list[int]] = defaultdict(list)
    ends: dict[int, list[int]] = defaultdict(list)
    done: dict[int, set[tuple[int, int]]] = defaultdict(set)
    exact: dict[int, list[bool]] = defaultdict(list)
    for e in events:
        kind, it = e["kind"], e["iter"]
        if kind == "step_start":
            starts[it].append(e["t"])
        elif kind == "step_end":
            ends[it].append(e["t"])
            done[it].add((e["rank"], e["k"]))
        elif kind == "iter_end" and e["exact"] is not None:
            exact[it].append(bool(e["exact"]))
    for it in sorted(starts):
        complete = bool(ends[it]) and len(done[it]) >= len(ranks) * n_steps
        start = min(starts[it])
        end = max(ends[it]) if ends[it] else None
        out[it] = {
            "start_ns": start,
            "end_ns": end,
            "cct_ns": (end - start) if (complete and end is not None) else None,
            "complete": complete,
            "exact": all(exact[it]) if exact[it] else None,
        }
    return out


def cct_per_iteration(events: list[Event]) -> dict[int, int | None]:
    """CCT in ns per iteration (None for an iteration some rank did not finish)."""
    return {it: w["cct_ns"] for it, w in iteration_windows(events).items()}


# ---------------------------------------------------------------- skew

def step_skew(events: list[Event]) -> list[dict[str, Any]]:
    """Per global step: max - min across ranks of step_start and of step_end
    (ns); None where some rank lacks that event."""
    ranks = ranks_of(events)
    start: dict[int, dict[int, int]] = defaultdict(dict)
    end: dict[int, dict[int, int]] = defaultdict(dict)
    info: dict[int, tuple[int, int, str]] = {}
    for e in events:
        if e["kind"] == "step_start":
            start[e["step"]][e["rank"]] = e["t"]
            info[e["step"]] = (e["iter"], e["k"], e["phase"])
        elif e["kind"] == "step_end":
            end[e["step"]][e["rank"]] = e["t"]
    out = []
    for step in sorted(info):
        it, k, phase = info[step]
        s, f = start[step], end.get(step, {})
        out.append({
            "step": step, "iter": it, "k": k, "phase": phase,
            "start_skew_ns": (max(s.values()) - min(s.values())) if len(s) == len(ranks) else None,
            "end_skew_ns": (max(f.values()) - min(f.values())) if len(f) == len(ranks) else None,
        })
    return out


# ---------------------------------------------------------------- misalignment

def misalignment_curve(events: list[Event]) -> Curve:
    """Breakpoints (t_ns, misalignment from t on) of newest - oldest current
    step across ranks; the last point closes the curve at the job's last
    step_end.  Events with the same t are applied together, so ranks that
    move at the same instant do not make a spike."""
    ranks = ranks_of(events)
    starts = sorted(_of_kind(events, "step_start"), key=lambda e: e["t"])
    if not starts:
        return []
    before_first = min(e["step"] for e in starts) - 1
    current = {r: before_first for r in ranks}
    curve: Curve = []
    i = 0
    while i < len(starts):
        t = starts[i]["t"]
        while i < len(starts) and starts[i]["t"] == t:
            current[starts[i]["rank"]] = starts[i]["step"]
            i += 1
        value = max(current.values()) - min(current.values())
        if not curve or curve[-1][1] != value:
            curve.append((t, value))
    ends = [e["t"] for e in events if e["kind"] == "step_end"]
    t_end = max(ends) if ends else starts[-1]["t"]
    if t_end > curve[-1][0]:
        curve.append((t_end, curve[-1][1]))
    return curve


def curve_stats(curve: Curve, t_from: int | None = None, t_to: int | None = None) -> dict[str, float | None]:
    """Time-weighted mean, max, and fraction of time with misalignment > 0,
    over [t_from, t_to] (default: the whole curve)."""
    if len(curve) < 2:
        return {"mean": None, "max": None, "frac_misaligned": None}
    lo = curve[0][0] if t_from is None else max(t_from, curve[0][0])
    hi = curve[-1][0] if t_to is None else min(t_to, curve[-1][0])
    if hi <= lo:
        return {"mean": None, "max": None, "frac_misaligned": None}
    area = 0.0
    misaligned = 0
    peak = None
    for (t, v), (t_next, _) in pairwise(curve):
        a, b = max(t, lo), min(t_next, hi)
        if b <= a:
            continue
        area += v * (b - a)
        misaligned += (b - a) if v > 0 else 0
        peak = v if peak is None else max(peak, v)
    span = hi - lo
    return {"mean": area / span, "max": peak, "frac_misaligned": misaligned / span}


# ---------------------------------------------------------------- goodput

def goodput(events: list[Event], link_rate_bps: float | None = None) -> dict[int, dict[int, dict[str, Any]]]:
    """iteration -> rank -> {bytes, active_ns, bps, fraction (of link rate)}."""
    first: dict[tuple[int, int], int] = {}
    last: dict[tuple[int, int], int] = {}
    nbytes: dict[tuple[int, int], int] = defaultdict(int)
    for e in events:
        key = (e["iter"], e["rank"])
        if e["kind"] == "step_start":
            first[key] = min(first.get(key, e["t"]), e["t"])
        elif e["kind"] == "step_end":
            last[key] = max(last.get(key, e["t"]), e["t"])
            nbytes[key] += int(e["bytes"])
    out: dict[int, dict[int, dict[str, Any]]] = defaultdict(dict)
    for key in sorted(first):
        it, rank = key
        active = last.get(key, first[key]) - first[key]
        bps = nbytes[key] * 8 * NS / active if active > 0 else None
        frac = bps / link_rate_bps if (bps is not None and link_rate_bps) else None
        out[it][rank] = {"bytes": nbytes[key], "active_ns": active, "bps": bps, "fraction": frac}
    return dict(out)


# ---------------------------------------------------------------- CNPs, marks, rates

def cnp_counts(events: list[Event]) -> dict[str, Any]:
    per_rank: dict[int, dict[str, int]] = defaultdict(lambda: {"tx": 0, "rx": 0})
    for e in _of_kind(events, "cnp"):
        d = e["dir"] if e["dir"] in ("tx", "rx") else "rx"
        per_rank[e["rank"]][d] += 1
    return {
        "tx": sum(v["tx"] for v in per_rank.values()),
        "rx": sum(v["rx"] for v in per_rank.values()),
        "per_rank": {str(r): v for r, v in sorted(per_rank.items())},
    }


def _count(v: Any) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) else 0


def reordering(events: list[Event]) -> dict[str, Any]:
    """The receivers' valid data packets and those of them that came behind
    one of a newer step from the same sender (the ``stats`` counters
    rx_data and rx_older_step, docs/hosts.md): under ECMP the reordering
    the fabric makes at step boundaries.  Zeros where no ``stats`` came
    (a failed agent) or the transport keeps no such counter (TCP)."""
    data = older = 0
    for e in _of_kind(events, "stats"):
        c = e.get("counters")
        if isinstance(c, dict):      # records from elsewhere may hold anything
            data += _count(c.get("rx_data"))
            older += _count(c.get("rx_older_step"))
    return {"rx_data": data, "rx_older_step": older,
            "older_step_share": older / data if data else None}


def quantile(xs: list[float], q: float) -> float:
    """Nearest-rank quantile of a sorted, non-empty list."""
    return xs[min(len(xs) - 1, max(0, math.ceil(q * len(xs)) - 1))]


def cnp_delays(events: list[Event]) -> list[int]:
    """How long each CNP took from the receiver that sent it (dir "tx") to
    the sender it was for (dir "rx", peer = that receiver), ns: the time to
    that sender's next CNP from that receiver (a CNP carries nothing to tell
    it apart; one lost on the way counts until the next arrives).  Both ends
    read one clock (a machine's, or the simulation's)."""
    sent: dict[tuple, list[int]] = defaultdict(list)
    got: dict[tuple, list[int]] = defaultdict(list)
    for e in _of_kind(events, "cnp"):
        if e.get("dir") == "tx":
            sent[(e["job"], e["rank"], e.get("peer"))].append(e["t"])
        elif e.get("dir") == "rx":
            got[(e["job"], e.get("peer"), e["rank"])].append(e["t"])
    out = []
    for key, times in sent.items():
        arrivals = sorted(got.get(key, ()))
        for t in times:
            i = bisect.bisect_left(arrivals, t)
            if i < len(arrivals):
                out.append(arrivals[i] - t)
    return sorted(out)


MARK_CAUSES = ("sym_marks", "queue_marks")
SWITCH_ARRAYS = MARK_CAUSES + ("pkts",)


def _count_value(v: Any) -> int:
    """A counter cell as an int: ints as they are; {"packets": n, ...} ->
    n; [packets, bytes] -> packets (BMv2's packets_and_bytes order)."""
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, (int, float)):
        return int(v)
    if isinstance(v, dict):
        for key in ("packets", "value", "count"):
            if isinstance(v.get(key), (int, float)):
                return int(v[key])
        return 0
    if isinstance(v, (list, tuple)) and v and isinstance(v[0], (int, float)):
        return int(v[0])
    return 0


def _find_array(dump: dict[str, Any], name: str) -> list[int] | None:
    """``name`` under "counters", then "registers", then the top level."""
    for holder in (dump.get("counters"), dump.get("registers"), dump):
        if isinstance(holder, dict) and name in holder:
            value = holder[name]
            if isinstance(value, list):
                return [_count_value(v) for v in value]
            if isinstance(value, dict):  # index -> value
                return [_count_value(v) for _, v in sorted(value.items(), key=lambda kv: str(kv[0]))]
            return [_count_value(value)]
    return None


def switch_marks(switches: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Per switch: totals of sym_marks, queue_marks and pkts (None where the
    dump lacks that array), and the indices with non-zero marks.  Where a
    dump has verdict_marks (Symphony's marks on a verdict carried in, track
    verdict: per port, at a switch that tracks none of the flows), they are
    Symphony marks too: counted in sym_marks, and given apart as
    verdict_marks."""
    per: dict[str, dict[str, Any]] = {}
    totals: dict[str, int | None] = {name: None for name in SWITCH_ARRAYS}  # None: no dump had it
    for sw, dump in sorted(switches.items()):
        row: dict[str, Any] = {}
        for name in SWITCH_ARRAYS:
            arr = _find_array(dump, name)
            row[name] = sum(arr) if arr is not None else None
            if arr is not None:
                totals[name] = (totals[name] or 0) + row[name]
                if name in MARK_CAUSES:
                    row[f"{name}_by_index"] = {str(i): v for i, v in enumerate(arr) if v}
        verdict = _find_array(dump, VERDICT_MARKS)
        if verdict is not None:
            row[VERDICT_MARKS] = sum(verdict)
            row["sym_marks"] = (row["sym_marks"] or 0) + row[VERDICT_MARKS]
            totals["sym_marks"] = (totals["sym_marks"] or 0) + row[VERDICT_MARKS]
            totals[VERDICT_MARKS] = (totals.get(VERDICT_MARKS) or 0) + row[VERDICT_MARKS]
        per[sw] = row
    return {"switches": per, "total": totals}


def flow_label(job: int, rank: int, ranks: list[int]) -> str:
    """The ring flow a sender drives: rank -> its successor in rank order."""
    succ = ranks[(ranks.index(rank) + 1) % len(ranks)] if rank in ranks else rank + 1
    return f"job{job} r{rank}->r{succ}"


def rate_traces(events: list[Event]) -> dict[int, dict[str, list]]:
    """Sender rank -> {"t": [ns], "rc": [bps], "rt": [...], "alpha": [...],
    "cnp_t": [ns of CNPs it received]}."""
    out: dict[int, dict[str, list]] = defaultdict(lambda: {"t": [], "rc": [], "rt": [], "alpha": [], "cnp_t": []})
    for e in events:
        if e["kind"] == "rate":
            tr = out[e["rank"]]
            tr["t"].append(e["t"])
            tr["rc"].append(e["rc"])
            tr["rt"].append(e["rt"])
            tr["alpha"].append(e["alpha"])
        elif e["kind"] == "cnp" and e["dir"] == "rx":
            out[e["rank"]]["cnp_t"].append(e["t"])
    return dict(out)


def rate_windows(events: list[Event], t0: int, window_ns: int, count: int,
                 line_bps: float | None) -> dict[int, dict[str, list[float]]]:
    """Per job, over `count` windows of window_ns from t0: the sum of its
    busy senders' DCQCN Rc (time-weighted, bps; a sender counts while it is
    inside a step: from a step_start to its step_end), the CNPs its senders
    received, and the steps its ranks ended.  A sender's Rc is line_bps
    until its first rate event (DCQCN starts at line rate); without
    line_bps, until then it does not count.  Where the bandwidth Symphony's
    marks take from a job goes shows here: a job's Rc falling while its
    CNPs rise, and whether another job's steps speed up meanwhile."""
    end = t0 + window_ns * count
    out: dict[int, dict[str, list[float]]] = defaultdict(
        lambda: {"rc_sum_bps": [0.0] * count, "cnp_rx": [0.0] * count, "steps_ended": [0.0] * count})

    def slot(t: int) -> int | None:
        return (t - t0) // window_ns if t0 <= t < end else None

    def spread(row: list[float], a: int, b: int, value: float) -> None:
        """value x the time [a, b) overlaps each window, over its length."""
        for w in range(max(0, (a - t0) // window_ns), min(count, (b - t0) // window_ns + 1)):
            lo, hi = max(a, t0 + w * window_ns), min(b, t0 + (w + 1) * window_ns)
            if hi > lo:
                row[w] += value * (hi - lo) / window_ns

    rc: dict[tuple[int, int], float | None] = {}
    busy: set[tuple[int, int]] = set()
    last: dict[tuple[int, int], int] = {}          # the sender's last event

    def settle(key: tuple[int, int], t: int) -> None:
        """Credit a busy sender's Rc since its last event."""
        if key in busy and rc.get(key, line_bps) is not None:
            spread(out[key[0]]["rc_sum_bps"], last[key], t, rc.get(key, line_bps))
        last[key] = t

    for e in events:
        key, t = (e["job"], e["rank"]), e["t"]
        if e["kind"] == "rate":
            settle(key, t)
            rc[key] = e["rc"]
        elif e["kind"] == "step_start":
            settle(key, t)
            busy.add(key)
        elif e["kind"] == "step_end":
            settle(key, t)
            busy.discard(key)
            if (w := slot(t)) is not None:
                out[e["job"]]["steps_ended"][w] += 1
        elif e["kind"] == "cnp" and e["dir"] == "rx" and (w := slot(t)) is not None:
            out[e["job"]]["cnp_rx"][w] += 1
    return dict(sorted(out.items()))


def _decimate(n: int, limit: int) -> list[int]:
    if n <= limit:
        return list(range(n))
    step = n / limit
    idx = sorted({int(i * step) for i in range(limit)} | {n - 1})
    return idx


# ---------------------------------------------------------------- config

def link_rate_bps(config: dict[str, Any]) -> float | None:
    """The host link rate from config.toml's topology, in bit/s, or None.

    Accepted (first found wins): ``[topology]`` keys ``host_rate_mbit``,
    ``link_rate_mbit``, ``edge_rate_mbit``, ``rate_mbit``, ``bw_mbit``; or a
    table ``[topology.host]``/``[topology.links.host]``/``[topology.links.edge]``
    with ``rate_mbit``."""
    topo = config.get("topology")
    if not isinstance(topo, dict):
        return None
    for key in ("host_rate_mbit", "link_rate_mbit", "edge_rate_mbit", "rate_mbit", "bw_mbit"):
        v = topo.get(key)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0:
            return float(v) * 1e6
    links = topo.get("links") if isinstance(topo.get("links"), dict) else {}
    for table in (topo.get("host"), links.get("host"), links.get("edge")):
        if isinstance(table, dict):
            v = table.get("rate_mbit")
            if isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0:
                return float(v) * 1e6
    return None


# ---------------------------------------------------------------- one run

def _s(t_ns: int | None, t0: int) -> float | None:
    return None if t_ns is None else (t_ns - t0) / NS


def _dur(ns: int | float | None) -> float | None:
    return None if ns is None else ns / NS


def job_metrics(events: list[Event], t0: int, rate_bps: float | None, max_points: int = 2000) -> dict[str, Any]:
    job = events[0]["job"]
    ranks = ranks_of(events)
    windows = iteration_windows(events)
    curve = misalignment_curve(events)
    gp = goodput(events, rate_bps)
    iterations = []
    for it, w in windows.items():
        stats = curve_stats(curve, w["start_ns"], w["end_ns"])
        iterations.append({
            "iter": it,
            "start_s": _s(w["start_ns"], t0), "end_s": _s(w["end_ns"], t0),
            "cct_s": _dur(w["cct_ns"]), "complete": w["complete"], "exact": w["exact"],
            "misalignment": stats,
            "goodput": {str(r): {"bytes": g["bytes"], "active_s": _dur(g["active_ns"]),
                                 "bps": g["bps"], "fraction_of_link": g["fraction"]}
                        for r, g in gp.get(it, {}).items()},
        })
    ccts = [i["cct_s"] for i in iterations if i["cct_s"] is not None]
    traces = {}
    for rank, tr in rate_traces(events).items():
        idx = _decimate(len(tr["t"]), max_points)
        traces[flow_label(job, rank, ranks)] = {
            "rank": rank,
            "n_rate_events": len(tr["t"]),
            "decimated": len(idx) < len(tr["t"]),  # evenly spaced events kept, at most max_points
            "t_s": [_s(tr["t"][i], t0) for i in idx],
            "rc_bps": [tr["rc"][i] for i in idx],
            "rt_bps": [tr["rt"][i] for i in idx],
            "alpha": [tr["alpha"][i] for i in idx],
            "cnp_rx_t_s": [_s(t, t0) for t in tr["cnp_t"]],
        }
    return {
        "job": job,
        "ranks": ranks,
        "iterations": iterations,
        "cct_s": ccts,
        "cct_mean_s": sum(ccts) / len(ccts) if ccts else None,
        "steps": [{"step": s["step"], "iter": s["iter"], "k": s["k"], "phase": s["phase"],
                   "start_skew_s": _dur(s["start_skew_ns"]), "end_skew_s": _dur(s["end_skew_ns"])}
                  for s in step_skew(events)],
        "misalignment": curve_stats(curve),
        "misalignment_curve": [[_s(t, t0), v] for t, v in curve],
        "cnp": cnp_counts(events),
        "rates": traces,
        "retransmits": sum(1 for e in events if e["kind"] == "retransmit"),
        "reordering": reordering(events),
        "errors": [e["reason"] for e in events if e["kind"] == "error"],
    }


def run_metrics(events: list[Event], switches: dict[str, dict[str, Any]], config: dict[str, Any],
                jitter: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Everything metrics.json holds about one run, from parsed records."""
    t0 = min((e["t"] for e in events), default=0)
    rate = link_rate_bps(config)
    jobs = {str(j): job_metrics(evs, t0, rate) for j, evs in sorted(by_job(events).items())}
    out: dict[str, Any] = {
        "t0_ns": t0 if events else None,
        "jobs": jobs,
        "marks": switch_marks(switches),
        "cnp": {"tx": sum(j["cnp"]["tx"] for j in jobs.values()),
                "rx": sum(j["cnp"]["rx"] for j in jobs.values())},
        "jitter": [{"kind": w.get("kind"), "link": w.get("link"), "rank": w.get("rank"),
                    "start_s": _s(w.get("start_ns"), t0), "end_s": _s(w.get("end_ns"), t0),
                    "params": w.get("params")} for w in (jitter or [])],
    }
    if rate is not None:
        out["link_rate_bps"] = rate
    return out


def finite(values: Iterable[float | None]) -> list[float]:
    return [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
