"""The regime DCQCN ran in: what the records measured, beside what the
parameters were designed for and the declared deployment's target (issue 15:
the report's `regime` table).

The experiments layer, which may import hosts, writes the targets and each
job's parameters beside the runs, ``<experiment dir>/<stamp>-regime.json``
(schema ``symphony-regime/1``, experiments/summary.py ``regime_document``):

    {"schema", "experiment", "stamp",
     "targets": {ratio: the deployment's value for the scenario's step}
                (hosts.dcqcn.regime_targets),
     "labels": {ratio: what it is}               (hosts.dcqcn.RATIO_LABELS),
     "jobs": {"<id>": {"preset", "line_rate_bps", "step_s" (the step the
              timers derive from), "line_step_s" (the job's step at line
              rate: its largest chunk's bits over the line rate),
              "at_line_step": {ratio: the parameters' own value at
              line_step_s}, "periods": {"alpha", "decrease",
              "increase", "cnp"} (s), "recovery_s", "climb_s", "design":
              {ratio: the parameters' own value at step_s}, "drift": [ratios
              not kept], "kmin_pkts", "kmax_pkts", "frame_bytes",
              "base_rtt_s" (the base RTT of the job's slowest ring edge
              as the network has it: every link's frame time and delay, a
              data frame out, an ACK back), "targets": {ratio: the job's
              own in the deployment, its step there "deployment_step_s"
              as much shorter than the deployment's step as its
              line_step_s is than the scenario's}}
              or null (no DCQCN: preset off, TCP)}}

Measured here from the records (``measure``; each run's metrics.json holds
its figures under ``regime``, ``summarise`` pools a variant's runs):

* step time: per job, the median over its ranks and steps of ``step_end -
  step_start`` (a step that waited for a straggler counts as it lasted);
* RTT: the senders' RTT samples from their ``stats`` counters: the median
  over ranks of ``rtt_min_us`` (the ratio uses it) and the mean over all
  samples (``rtt_sum_us / rtt_samples``).  A sample runs from a packet's
  send to the ACK that covers it, so it holds the receiver's ACK delay (up
  to ``ack_delay_ms``) and the queues on the way;
* recovery from a halving: from the ``rate`` events, as
  hosts.dcqcn_regime's ``measured_ratios`` says: from an event whose ``rc``
  falls below line rate (the one before at least RECOVERED x line) with
  ``rt`` at line rate, to the first later event with ``rc`` >= RECOVERED x
  line, ``rt`` staying at line meanwhile;
* climb: from an event whose ``rt`` falls below line rate (the one before
  at line) to the first later event with ``rc`` >= RECOVERED x line.

The ratios: ``rtt_per_step``, ``recovery_per_step``, ``climb_per_step``
(measured value over the measured step), ``step_per_*_period`` (the measured
step over the parameters' periods), ``kmin_per_bdp``/``kmax_per_bdp`` (the
thresholds in bytes on the wire over line rate x the measured RTT).  Pure
but for ``find_regime`` and ``load_regime``, which read files.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from statistics import mean, median
from typing import Any

from analysis.metrics import by_job, job_order
from analysis.records import batch_file, read_document

SCHEMA = "symphony-regime/1"
FILE_SUFFIX = "-regime.json"
# "Recovered": Rc back to this fraction of line rate (hosts.dcqcn_regime's
# RECOVERED_FRACTION: analysis cannot import hosts; a test keeps them equal).
RECOVERED = 0.95
# rt counts as at line rate within this relative tolerance (rates are floats)
AT_LINE = 1e-6
PERIODS = ("alpha", "decrease", "increase", "cnp")


def find_regime(run_dirs: Iterable[Path]) -> Path | None:
    """The regime file of the runs' batch: ``<stamp>{FILE_SUFFIX}`` beside them (None: none)."""
    return batch_file(run_dirs, FILE_SUFFIX)


def load_regime(path: Path, sink: list[str]) -> dict[str, Any] | None:
    """The regime document, or None (with a line in sink) when it cannot be used."""
    return read_document(path, sink, SCHEMA, "a regime", "jobs")


# ---------------------------------------------------------------- one run

def step_durations_s(events: list[dict[str, Any]]) -> list[float]:
    """step_end - step_start of every (rank, step) that has both, seconds."""
    start: dict[tuple[int, int], int] = {}
    out = []
    for e in events:
        if e["kind"] == "step_start":
            start[(e["rank"], e["step"])] = e["t"]
        elif e["kind"] == "step_end" and (e["rank"], e["step"]) in start:
            out.append((e["t"] - start.pop((e["rank"], e["step"]))) / 1e9)
    return out


def rtt_figures(events: list[dict[str, Any]]) -> dict[str, Any]:
    """From the ranks' ``stats`` counters: rtt_min_s (median over ranks of
    their minimum), rtt_mean_s (over all samples), rtt_samples."""
    mins, total, n = [], 0, 0
    for e in events:
        c = e.get("counters") if e["kind"] == "stats" else None
        if not isinstance(c, dict) or not c.get("rtt_samples"):
            continue
        mins.append(c.get("rtt_min_us", 0) / 1e6)
        total += c.get("rtt_sum_us", 0)
        n += c["rtt_samples"]
    return {"rtt_min_s": median(mins) if mins else None,
            "rtt_mean_s": total / n / 1e6 if n else None, "rtt_samples": n}


def _at_line(rate: float, line: float) -> bool:
    return rate >= line * (1 - AT_LINE)


def rate_episodes(trace: list[tuple[int, float, float]], line: float) -> dict[str, list[float]]:
    """One sender's (t_ns, rc, rt) rate events -> {"recovery": [s], "climb":
    [s]} (module docstring); episodes still open at the end are left out."""
    out: dict[str, list[float]] = {"recovery": [], "climb": []}
    recovering = climbing = None
    prev_rc, prev_rt = line, line
    for t, rc, rt in trace:
        if recovering is not None and not _at_line(rt, line):
            recovering = None                       # its target was cut: a climb now
        if rc >= RECOVERED * line:
            if recovering is not None:
                out["recovery"].append((t - recovering) / 1e9)
            if climbing is not None:
                out["climb"].append((t - climbing) / 1e9)
            recovering = climbing = None
        else:
            if prev_rc >= RECOVERED * line and _at_line(rt, line) and recovering is None:
                recovering = t
            if _at_line(prev_rt, line) and not _at_line(rt, line) and climbing is None:
                climbing = t
        prev_rc, prev_rt = rc, rt
    return out


def line_rate_of(events: list[dict[str, Any]], configured: float | None) -> float | None:
    """The line rate the reaction points start from: the configured host
    rate, else the largest target rate the rate events show."""
    if configured:
        return configured
    rts = [e["rt"] for e in events if e["kind"] == "rate"]
    return max(rts) if rts else None


def measure(events: list[dict[str, Any]], line_rate_bps: float | None) -> dict[str, dict[str, Any]]:
    """Per job (ids as strings): the figures of one run (module docstring)."""
    out = {}
    for job, evs in sorted(by_job(events).items()):
        steps = step_durations_s(evs)
        line = line_rate_of(evs, line_rate_bps)
        episodes: dict[str, list[float]] = {"recovery": [], "climb": []}
        traces: dict[int, list[tuple[int, float, float]]] = {}
        for e in evs:
            if e["kind"] == "rate":
                traces.setdefault(e["rank"], []).append((e["t"], e["rc"], e["rt"]))
        if line:
            for trace in traces.values():
                for k, v in rate_episodes(trace, line).items():
                    episodes[k] += v
        out[str(job)] = {"step_median_s": median(steps) if steps else None, "steps": len(steps),
                         **rtt_figures(evs), "line_rate_bps": line,
                         "recovery_s": episodes["recovery"], "climb_s": episodes["climb"]}
    return out


# ---------------------------------------------------------------- a variant's runs

def summarise(runs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per job over the runs' ``regime`` figures (their metrics.json): the
    median of their step medians, the median of their RTT minima, the mean
    of their mean RTTs, the median recovery and climb over every episode."""
    out = {}
    for job in job_order(j for r in runs for j in (r.get("regime") or {})):
        rows = [r["regime"][job] for r in runs if job in (r.get("regime") or {})]
        steps = [x["step_median_s"] for x in rows if x["step_median_s"] is not None]
        mins = [x["rtt_min_s"] for x in rows if x["rtt_min_s"] is not None]
        means = [x["rtt_mean_s"] for x in rows if x["rtt_mean_s"] is not None]
        rec = [v for x in rows for v in x["recovery_s"]]
        climb = [v for x in rows for v in x["climb_s"]]
        out[job] = {"runs": len(rows), "step_s": median(steps) if steps else None,
                    "rtt_min_s": median(mins) if mins else None, "rtt_mean_s": mean(means) if means else None,
                    "recovery_s": median(rec) if rec else None, "recoveries": len(rec),
                    "climb_s": median(climb) if climb else None, "climbs": len(climb)}
    return out


def ratios(measured: dict[str, Any], job_doc: dict[str, Any] | None) -> dict[str, float]:
    """The measured ratios of one job (the names of hosts.dcqcn.RATIO_LABELS)."""
    step = measured.get("step_s")
    out: dict[str, float] = {}
    if not step:
        return out
    for name, key in (("rtt_per_step", "rtt_min_s"), ("recovery_per_step", "recovery_s"),
                      ("climb_per_step", "climb_s")):
        if measured.get(key) is not None:
            out[name] = measured[key] / step
    periods = (job_doc or {}).get("periods") or {}
    for p in PERIODS:
        if periods.get(p):
            out["step_per_cnp_interval" if p == "cnp" else f"step_per_{p}_period"] = step / periods[p]
    out.update(thresholds_per_bdp(job_doc, measured.get("rtt_min_s")))
    return out


def thresholds_per_bdp(job_doc: dict[str, Any] | None, rtt_s: float | None) -> dict[str, float]:
    """kmin_per_bdp and kmax_per_bdp: the job's ECN thresholds over its
    bandwidth-delay product at rtt_s (where the document has them)."""
    jd = job_doc or {}
    line, frame = jd.get("line_rate_bps"), jd.get("frame_bytes")
    if not (rtt_s and line and frame):
        return {}
    bdp = line * rtt_s / 8
    return {f"{k}_per_bdp": jd[f"{k}_pkts"] * frame / bdp for k in ("kmin", "kmax") if jd.get(f"{k}_pkts") is not None}


# rows of the table: (ratio name, what it is)
TABLE_RATIOS = ("rtt_per_step", "recovery_per_step", "climb_per_step", "step_per_decrease_period",
                "step_per_increase_period", "kmin_per_bdp", "kmax_per_bdp")


def table(by_variant: dict[str, dict[str, dict[str, Any]]], doc: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Rows of the regime table: per job the measured seconds and ratios of
    each variant beside the parameters' own (design) and the target.  Each
    row: job, quantity, unit ("ms" or "ratio"), {variant: value}, design,
    target."""
    jobs = job_order(set().union(*(set(v) for v in by_variant.values())) if by_variant else set())
    rows = []
    for job in jobs:
        jdoc = ((doc or {}).get("jobs") or {}).get(job)
        targets = job_targets(doc, job)
        design = (jdoc or {}).get("design") or {}
        m = {v: s.get(job) or {} for v, s in by_variant.items()}
        r = {v: ratios(x, jdoc) for v, x in m.items()}

        def row(quantity, unit, values, design_value=None, target=None, job=job):
            rows.append({"job": job, "quantity": quantity, "unit": unit, "measured": values,
                         "design": design_value, "target": target})
        row("step time", "ms", {v: x.get("step_s") for v, x in m.items()}, (jdoc or {}).get("step_s"),
            (jdoc or {}).get("deployment_step_s") or (doc or {}).get("deployment_step_s"))
        row("RTT (median of the senders' minima)", "ms", {v: x.get("rtt_min_s") for v, x in m.items()}, None,
            (doc or {}).get("deployment_rtt_s"))
        row("RTT (mean of all samples)", "ms", {v: x.get("rtt_mean_s") for v, x in m.items()})
        row("recovery from a halving", "ms", {v: x.get("recovery_s") for v, x in m.items()},
            (jdoc or {}).get("recovery_s"))
        rows[-1]["counts"] = {v: x.get("recoveries") for v, x in m.items()}
        row("climb from half rate", "ms", {v: x.get("climb_s") for v, x in m.items()}, (jdoc or {}).get("climb_s"))
        rows[-1]["counts"] = {v: x.get("climbs") for v, x in m.items()}
        for name in TABLE_RATIOS:
            row(name, "ratio", {v: x.get(name) for v, x in r.items()}, design.get(name), targets.get(name))
    return rows


# ---------------------------------------------------------------- in regime or not

# The ratios that decide Symphony's outcome under DCQCN (issue 22): the RTT,
# DCQCN's periods and its recovery, each per ring step, and the marking
# thresholds per bandwidth-delay product.
VERDICT_RATIOS = ("rtt_per_step", "step_per_alpha_period", "step_per_decrease_period", "step_per_increase_period",
                  "recovery_per_step", "kmin_per_bdp", "kmax_per_bdp")
# "In regime": every one of them within this factor of the deployment's.
REGIME_FACTOR = 2.0


def verdict_rtt_s(measured: dict[str, Any], job_doc: dict[str, Any] | None) -> float | None:
    """The RTT the verdict counts: the network's base RTT (the job
    document's base_rtt_s), as the deployment's target is a base RTT.  The
    runs' minimum sample is no base RTT: DCQCN holds a standing queue near
    Kmin on every shared port, so even a ring's smallest sample carries it
    (13-17 ms on the demo's 3.5 ms paths at 20 Mbit/s, in the emulation and
    the simulation alike), as the deployment's would; an emulator that is
    slower than its network shows in the fidelity monitors (the twin's and
    the pacer's lateness), not here.  Without base_rtt_s (a regime file
    from before it): the measured minimum."""
    base = (job_doc or {}).get("base_rtt_s")
    return base if base is not None else measured.get("rtt_min_s")


def verdict_ratios(measured: dict[str, Any], job_doc: dict[str, Any] | None) -> dict[str, float]:
    """One job's VERDICT_RATIOS, each counted in the job's step at line rate
    (the deployment's targets are): the parameters' own ratios there, the
    base RTT (verdict_rtt_s) over it, the thresholds over the
    bandwidth-delay product at that RTT."""
    jd = job_doc or {}
    out = {k: v for k, v in (jd.get("at_line_step") or {}).items() if k in VERDICT_RATIOS}
    step = jd.get("line_step_s")
    rtt = verdict_rtt_s(measured, jd)
    if step and rtt:
        out["rtt_per_step"] = rtt / step
    out.update(thresholds_per_bdp(jd, rtt))
    return out


def verdict(values: dict[str, float], targets: dict[str, float]) -> dict[str, Any]:
    """In regime, or not with every ratio off by more than REGIME_FACTOR (its
    value, the target, the factor); None when the RTT is unknown (nothing
    measured: no verdict)."""
    if "rtt_per_step" not in values:
        return {"in_regime": None, "off": []}
    off = []
    for name in VERDICT_RATIOS:
        v, t = values.get(name), targets.get(name)
        if not v or not t:
            continue
        factor = max(v / t, t / v)
        if factor > REGIME_FACTOR:
            off.append({"ratio": name, "value": v, "target": t, "factor": factor})
    off.sort(key=lambda o: -o["factor"])
    return {"in_regime": not off, "off": off}


def job_targets(doc: dict[str, Any] | None, job: str) -> dict[str, float]:
    """The ratios a job is held to: its own in the deployment (a job with
    shorter steps than its scenario's has more RTTs per step there too),
    else, in a document written before jobs had their own, the deployment's."""
    jdoc = ((doc or {}).get("jobs") or {}).get(job) or {}
    return jdoc.get("targets") or (doc or {}).get("targets") or {}


def job_verdicts(by_variant: dict[str, dict[str, dict[str, Any]]], doc: dict[str, Any] | None) -> dict[str, dict]:
    """Per job: the verdict on the baseline's measured figures (else the
    first variant's)."""
    jobs_doc = (doc or {}).get("jobs") or {}
    variants = list(by_variant)
    out = {}
    for job in job_order(set().union(*(set(v) for v in by_variant.values())) if by_variant else set()):
        measured = next((by_variant[v][job] for v in ["baseline", *variants] if job in by_variant.get(v, {})), {})
        out[job] = verdict(verdict_ratios(measured, jobs_doc.get(job)), job_targets(doc, job))
    return out


def describe(v: dict[str, Any]) -> str:
    """A verdict in a few words: "in regime", or the ratios off and by how much."""
    if v.get("in_regime") is None:
        return "regime unknown"
    if v["in_regime"]:
        return "in regime"
    return "out of regime: " + ", ".join(f"{o['ratio']} {o['value']:.3g} (deployment {o['target']:.3g}, "
                                         f"x{o['factor']:.3g} off)" for o in v["off"])
