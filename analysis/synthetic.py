"""Synthetic run directories with known timings, for tests and for trying
the report without a network.

``ring_times`` is a toy ring model in the spirit of Astra-Sim's Ring.cc: a
rank finishes step s once it has started s and its predecessor has started
s (the data comes from there), plus the time the predecessor's link takes;
the next step starts when this one ends.  A slow link (jitter window) or a
late start (straggler) therefore spreads down the ring.  ``write_run`` writes
the records through ``contract.events.EventLog``, so they obey the real schema.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import tomli_w

from contract.events import EventLog
from contract.tags import steps_per_iteration

T0_NS = 1_700_000_000 * 10**9  # an arbitrary CLOCK_REALTIME start

Times = dict[tuple[int, int, int], tuple[int, int]]  # (rank, iter, k) -> (start_ns, end_ns)


def ring_times(n: int, iterations: int, step_s: float, *, t0_ns: int = T0_NS,
               slow: list[tuple[int, float, float, float]] = (),
               straggle: dict[tuple[int, int], float] | None = None,
               gap_s: float = 0.0) -> Times:
    """Step times of an n-rank ring.

    slow: (sender rank, from_s, to_s, factor): a step whose data the sender
    starts sending inside [from_s, to_s) takes ``factor`` times as long.
    straggle: (rank, iter) -> seconds that rank starts that iteration late.
    gap_s: pause of every rank between iterations."""
    straggle = straggle or {}
    n_steps = steps_per_iteration(n)
    times: Times = {}
    ready = {r: t0_ns for r in range(n)}  # when each rank may start its next step
    for it in range(iterations):
        for r in range(n):
            ready[r] += int((straggle.get((r, it), 0.0) + (gap_s if it else 0.0)) * 1e9)
        for k in range(n_steps):
            start = dict(ready)
            for r in range(n):
                pred = (r - 1) % n
                send_at = max(start[r], start[pred])
                factor = 1.0
                for rank, a, b, f in slow:
                    if rank == pred and a <= (send_at - t0_ns) / 1e9 < b:
                        factor = f
                end = send_at + int(step_s * factor * 1e9)
                times[(r, it, k)] = (start[r], end)
                ready[r] = end
    return times


def config_text(host_rate_mbit: float | None = 20.0, n: int = 4, job: int = 1,
                jobs: dict[int, int] | None = None) -> str:
    """A resolved config in the runner's shape: the topology and each job's
    hosts in ring order.  One job: rank r on host h<r+1>; ``jobs`` (job id ->
    ranks): the jobs take consecutive hosts in id order."""
    jobs = jobs or {job: n}
    topology: dict[str, Any] = {"kind": "star", "hosts": sum(jobs.values())}
    if host_rate_mbit is not None:
        topology["host_rate_mbit"] = host_rate_mbit
    tables, first = [], 1
    for j, ranks in sorted(jobs.items()):
        tables.append({"job": j, "ranks": ranks, "hosts": [f"h{first + r}" for r in range(ranks)]})
        first += ranks
    return tomli_w.dumps({"topology": topology, "jobs": tables})


def _write_agents(log_dir: Path, times: Times, job: int, chunk_bytes: int,
                  rates: dict[int, list[tuple[int, float, float, float]]],
                  cnps: dict[int, list[int]]) -> None:
    """rank<r>.jsonl of one job's ranks into log_dir."""
    log_dir.mkdir(parents=True, exist_ok=True)
    ranks = sorted({r for r, _, _ in times})
    n = len(ranks)
    n_steps = steps_per_iteration(n)
    iters = sorted({i for _, i, _ in times})
    for r in ranks:
        rows: list[tuple[int, str, int, int, dict[str, Any]]] = []
        for it in iters:
            keys = [(r, it, k) for k in range(n_steps) if (r, it, k) in times]
            if not keys:
                continue
            rows.append((times[keys[0]][0], "iter_start", it, it * n_steps, {}))
            for key in keys:
                k = key[2]
                start, end = times[key]
                step = it * n_steps + k
                phase = "rs" if k < n - 1 else "ag"
                rows.append((start, "step_start", it, step, {
                    "k": k, "phase": phase, "send_chunk": (r - k) % n, "recv_chunk": (r - k - 1) % n}))
                rows.append((end, "step_end", it, step, {"k": k, "phase": phase, "bytes": chunk_bytes}))
            if len(keys) == n_steps:
                rows.append((times[keys[-1]][1], "iter_end", it, it * n_steps + n_steps - 1, {"exact": True}))
        for t, rc, rt, alpha in rates.get(r, []):
            rows.append((t, "rate", 0, 0, {"rc": rc, "rt": rt, "alpha": alpha}))
        for t in cnps.get(r, []):
            rows.append((t, "cnp", 0, 0, {"dir": "rx", "peer": (r + 1) % n}))
        for sender, ts in cnps.items():
            if (sender + 1) % n == r:
                rows.extend((t - 1000, "cnp", 0, 0, {"dir": "tx", "peer": sender}) for t in ts)
        rows.sort(key=lambda row: row[0])
        with EventLog(log_dir / f"rank{r}.jsonl", job=job, rank=r) as log:
            for t, kind, it, step, fields in rows:
                log.emit(kind, iter=it, step=step, t=t, **fields)


def _write_rest(run_dir: Path, all_times: list[Times], config: str, variant: str, repeat: int, status: str,
                reason: str, switches: dict[str, dict[str, Any]] | None,
                jitter: list[dict[str, Any]] | None) -> None:
    first = min(s for times in all_times for s, _ in times.values())
    last = max(e for times in all_times for _, e in times.values())
    meta = {"target": "synthetic", "seed": 1, "variant": variant, "repeat": repeat,
            "status": status, "reason": reason, "wall_s": (last - first) / 1e9, "t0_ns": first}
    (run_dir / "meta.json").write_text(json.dumps(meta, indent=1))
    (run_dir / "config.toml").write_text(config)
    if switches is not None:
        (run_dir / "switches").mkdir(exist_ok=True)
        for name, dump in switches.items():
            (run_dir / "switches" / f"{name}.json").write_text(json.dumps(dump))
    if jitter is not None:
        with (run_dir / "jitter.jsonl").open("w") as f:
            for line in jitter:
                f.write(json.dumps(line) + "\n")


def write_run(run_dir: Path, times: Times, *, job: int = 1, variant: str = "baseline",
              repeat: int = 0, status: str = "ok", reason: str = "", chunk_bytes: int = 250_000,
              host_rate_mbit: float | None = 20.0,
              switches: dict[str, dict[str, Any]] | None = None,
              jitter: list[dict[str, Any]] | None = None,
              rates: dict[int, list[tuple[int, float, float, float]]] | None = None,
              cnps: dict[int, list[int]] | None = None) -> Path:
    """Write a one-job run directory (agents/rank<r>.jsonl) from step times.

    rates: sender rank -> [(t_ns, rc, rt, alpha)]; cnps: sender rank -> CNP
    receive times (the receiver's tx event is written too)."""
    run_dir = Path(run_dir)
    _write_agents(run_dir / "agents", times, job, chunk_bytes, rates or {}, cnps or {})
    n = len({r for r, _, _ in times})
    _write_rest(run_dir, [times], config_text(host_rate_mbit, n, job), variant, repeat, status, reason,
                switches, jitter)
    return run_dir


def write_jobs_run(run_dir: Path, jobs: dict[int, Times], *, variant: str = "baseline", repeat: int = 0,
                   status: str = "ok", reason: str = "", chunk_bytes: int = 250_000,
                   host_rate_mbit: float | None = 20.0,
                   switches: dict[str, dict[str, Any]] | None = None,
                   jitter: list[dict[str, Any]] | None = None,
                   rates: dict[int, dict[int, list[tuple[int, float, float, float]]]] | None = None,
                   cnps: dict[int, dict[int, list[int]]] | None = None) -> Path:
    """Write a run directory of several jobs as the runner lays it out:
    agents/job<id>/rank<r>.jsonl.  jobs: job id -> its step times; rates and
    cnps: job id -> as in ``write_run``."""
    run_dir = Path(run_dir)
    for job, times in sorted(jobs.items()):
        _write_agents(run_dir / "agents" / f"job{job}", times, job, chunk_bytes,
                      (rates or {}).get(job, {}), (cnps or {}).get(job, {}))
    config = config_text(host_rate_mbit, jobs={j: len({r for r, _, _ in t}) for j, t in jobs.items()})
    _write_rest(run_dir, list(jobs.values()), config, variant, repeat, status, reason, switches, jitter)
    return run_dir


def _oracle_variant(jobs: dict[int, Times], t0_ns: int, chunk_bytes: int, bound_s: float | None) -> dict[str, Any]:
    steps, out = [], {}
    for job, times in sorted(jobs.items()):
        n = len({r for r, _, _ in times})
        n_steps = steps_per_iteration(n)
        first: dict[int, int] = {}
        last: dict[int, int] = {}
        for (rank, it, k), (start, end) in sorted(times.items()):
            steps.append([job, rank, it, k, it * n_steps + k, "rs" if k < n - 1 else "ag",
                          (start - t0_ns) / 1e9, (end - t0_ns) / 1e9, chunk_bytes])
            first[it] = min(first.get(it, start), start)
            last[it] = max(last.get(it, end), end)
        cct = [(last[it] - first[it]) / 1e9 for it in sorted(first)]
        out[str(job)] = {"cct_s": cct, "mean_cct_s": sum(cct) / len(cct), "bound_s": bound_s}
    end = max(e for times in jobs.values() for _, e in times.values())
    return {"end_s": (end - t0_ns) / 1e9, "jobs": out, "steps": steps}


def oracle_document(repeats: dict[int, dict[str, dict[int, Times]]], *, stamp: str = "synthetic",
                    t0_ns: int = T0_NS, chunk_bytes: int = 250_000, bound_s: float | None = None,
                    threshold: int = 1) -> dict[str, Any]:
    """An oracle file's content (schema symphony-oracle/1, analysis.oracle)
    made from step times, as experiments/oracle/export.py writes the model's:
    repeats: repeat -> variant -> job -> step times; times count from t0_ns
    (the runs' t0, meta.json t0_ns)."""
    reps = {str(rep): {"notes": [], "variants": {v: _oracle_variant(jobs, t0_ns, chunk_bytes, bound_s)
                                                 for v, jobs in variants.items()}}
            for rep, variants in sorted(repeats.items())}
    jobs: dict[str, dict[str, Any]] = {}
    for job in sorted({j for r in reps.values() for v in r["variants"].values() for j in v["jobs"]}):
        means = {v: [r["variants"][v]["jobs"][job]["mean_cct_s"] for r in reps.values() if v in r["variants"]]
                 for v in ("baseline", "symphony")}
        base, sym = (sum(xs) / len(xs) if xs else None for xs in means.values())
        change = (sym - base) / base * 100 if base and sym is not None else None
        jobs[job] = {"baseline_cct_s": base, "symphony_cct_s": sym, "cct_change_pct": change, "bound_s": bound_s}
    return {"schema": "symphony-oracle/1", "experiment": "synthetic", "stamp": stamp, "sweep_point": None,
            "threshold": threshold, "time_origin": "seconds after the runs' t0",
            "step_fields": ["job", "rank", "iter", "k", "step", "phase", "start_s", "end_s", "bytes"],
            "jobs": jobs, "repeats": reps}


def write_oracle(exp_dir: Path, stamp: str, repeats: dict[int, dict[str, dict[int, Times]]], **kw: Any) -> Path:
    """``<exp_dir>/<stamp>-oracle.json`` from step times (``oracle_document``),
    where the report finds it beside run directories ``<stamp>-<variant>-rep<k>``."""
    path = Path(exp_dir) / f"{stamp}-oracle.json"
    path.write_text(json.dumps(oracle_document(repeats, stamp=stamp, **kw)))
    return path


def sawtooth_rates(t_from_ns: int, cnp_times: list[int], line_bps: float,
                   recover_s: float = 0.04, points: int = 8) -> list[tuple[int, float, float, float]]:
    """A DCQCN-looking trace: each CNP cuts Rc by alpha/2, then Rc climbs
    halfway back to line rate at each of ``points`` increase events spread
    over ``recover_s`` (cut short by the next CNP)."""
    out = [(t_from_ns, line_bps, line_bps, 0.0)]
    rc, alpha = line_bps, 0.0
    cnps = sorted(cnp_times)
    for i, t in enumerate(cnps):
        alpha = alpha * 0.5 + 0.5
        rt = rc
        rc = max(line_bps * 0.05, rc * (1 - alpha / 2))
        out.append((t, rc, rt, alpha))
        next_cnp = cnps[i + 1] if i + 1 < len(cnps) else None
        for j in range(1, points + 1):
            tj = t + int(recover_s * 1e9 * j / points)
            if next_cnp is not None and tj >= next_cnp:
                break
            rc = (rc + line_bps) / 2
            out.append((tj, rc, line_bps, alpha))
    return out


def demo_experiment(root: Path, repeats: int = 3, n: int = 4, iterations: int = 3) -> list[Path]:
    """Baseline and Symphony runs of a toy scenario: rank 1's link is squeezed
    for a while; in the 'symphony' runs the squeeze hurts less (as if the
    leading flows had yielded); an oracle file beside them.  The numbers are
    made up: this exercises the analysis, it measures nothing."""
    root = Path(root)
    dirs = []
    oracle: dict[int, dict[str, dict[int, Times]]] = {}
    for rep in range(repeats):
        # the oracle: the same ring without the emulation's overheads (steps of 18 ms), the squeeze
        # hurting less where the leading flows yield
        oracle[rep] = {variant: {1: ring_times(n, iterations, 0.018, slow=[(1, 0.05, 0.25, factor)],
                                               straggle={(2, 1): 0.03}, gap_s=0.005)}
                       for variant, factor in (("baseline", 2.5), ("symphony", 1.4))}
        for variant, factor in (("baseline", 3.0), ("symphony", 1.8)):
            times = ring_times(n, iterations, 0.02 + 0.002 * rep, slow=[(1, 0.05, 0.25, factor)],
                               straggle={(2, 1): 0.03}, gap_s=0.005)
            t0 = min(s for s, _ in times.values())
            cnp_t = [t0 + int(x * 1e9) for x in (0.06, 0.09, 0.12, 0.15, 0.2)]
            line = 20e6
            switches = {"s1": {"counters": {"sym_marks": [0, 3 * rep + (40 if variant == "symphony" else 0), 0, 0],
                                            "queue_marks": [5, 30 - (10 if variant == "symphony" else 0), 2, 1],
                                            "pkts": [900, 950, 910, 905]},
                               "registers": {"frontier": [7]}}}
            # as experiments/jitter/schedule.py writes them: seconds after t0, t0 in meta.json
            jitter = [{"kind": "compute", "job": 1, "rank": 2, "link": None, "start_s": None, "end_s": None,
                       "params": {"iter": 1, "delay_s": 0.03}},
                      {"kind": "rate", "link": "h2-s1", "start_s": 0.05, "end_s": 0.25,
                       "params": {"fraction": round(1 / factor, 3), "rate_mbit": round(line / 1e6 / factor, 3)}}]
            d = write_run(root / f"20260101T000000-{variant}-rep{rep}", times, variant=variant, repeat=rep,
                          switches=switches, jitter=jitter, chunk_bytes=45_000,
                          rates={0: sawtooth_rates(t0, cnp_t, line), 1: sawtooth_rates(t0, cnp_t[:2], line)},
                          cnps={0: cnp_t, 1: cnp_t[:2]})
            dirs.append(d)
    write_oracle(root, "20260101T000000", oracle, chunk_bytes=45_000, bound_s=2 * (n - 1) * 0.018)
    return dirs
