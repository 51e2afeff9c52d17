"""Report over one or many run directories: metrics.json per run, plots and
report.md comparing the variants (baseline against Symphony) and repeats.

The runner calls ``write_report(run_dirs, out_dir)``; the command line is
``python3 -m analysis report RUN_DIR [RUN_DIR ...]``.

What is averaged: only runs whose meta.json status is "ok" and whose every
rank left records (analysis.records.Run.status: a run without a readable
meta.json is "unknown", one missing a rank's records "incomplete").  A run
that is not ok gets its metrics.json and a line in the report with its
reason, and is left out of every mean.  The report is written whole or not
at all: into a folder beside its place, moved there at the end.  CCT
statistics are per job, over every completed iteration of that job in the
counted runs of a variant (n in the table); a variant's own CCT figures
pool its iterations and are given only where the runs have one job (a
mean over several jobs' iterations says nothing of any of them).

Units: metrics.json keeps each run's own clock (a scaled run's, --scale K,
runs K times the config's; its ``time_factor`` says by how much), and the
summary, report.json and the report give every time in the config's own
units (``config_summary``: the run's seconds divided by its time factor,
its rates by its rate factor), the oracle's too (it ran on the runs'
schedules, their clock); only the regime's measured seconds keep the runs'
clock, which the regime they ran in is about.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
from collections.abc import Iterable, Iterator
from pathlib import Path
from statistics import mean, stdev
from typing import Any

from analysis import metrics as m
from analysis import plots
from analysis import regime as rg
from analysis.markdown import render_markdown
from analysis.noise import change_noise, spread
from analysis.oracle import find_oracle, job_comparison, load_oracle, timeline_events
from analysis.records import Run, load_run, meta_t0_ns
from analysis.simulation import (
    DEPLOYMENT_SCALE,
    config_k,
    config_rate,
    confirmed,
    find_sim,
    job_figures,
    load_sim,
    verdict,
)
from analysis.windows import place_compute_jitter
from contract.files import write_atomic

BASELINE = "baseline"
SYMPHONY = "symphony"
VARIANT_ORDER = (BASELINE, SYMPHONY)


def _order(variants: Iterable[str]) -> list[str]:
    vs = set(variants)
    return [v for v in VARIANT_ORDER if v in vs] + sorted(vs - set(VARIANT_ORDER))


def _std(xs: list[float]) -> float | None:
    return stdev(xs) if len(xs) > 1 else (0.0 if xs else None)


def _mean(xs: list[float]) -> float | None:
    xs = m.finite(xs)
    return mean(xs) if xs else None


def _clean(value: Any) -> Any:
    """NaN/inf (an agent may log them) -> None, so the file is strict JSON."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


def _write_json(path: Path, value: Any) -> None:
    """Atomic (contract.files); a failed write (a full disk, an interrupt) leaves no .tmp."""
    write_atomic(path, json.dumps(_clean(value), indent=1, allow_nan=False) + "\n")


def analyse_run(run: Run) -> dict[str, Any]:
    """metrics.json of one run: its identity and status, then the metrics."""
    out = {
        "run": run.name,
        "variant": run.variant,
        "repeat": run.repeat,
        "status": run.status,
        "fidelity": run.fidelity,               # experiments/fidelity.py's verdict, None: not judged
        "fidelity_reasons": run.fidelity_reasons,
        "fidelity_checks": run.fidelity_checks,
        "reason": run.reason,
        "target": run.meta.get("target"),
        "seed": run.meta.get("seed"),
        "scale": run.scale_k,                   # the emulation's --scale K
        "time_factor": run.time_factor,         # its clock per second of the config's
        "rate_factor": run.rate_factor,         # its link rates per the config's
        **m.run_metrics(run.events, run.switches, run.config, run.jitter),
    }
    # the regime DCQCN ran in, as the records measure it (analysis.regime)
    out["regime"] = rg.measure(run.events, m.link_rate_bps(run.config))
    out["summary"] = run_summary(out)
    out["warnings"] = list(run.warnings)
    return out


def run_summary(rm: dict[str, Any]) -> dict[str, Any]:
    """One row of figures per run, over all its jobs."""
    jobs = rm["jobs"].values()
    ccts = [c for j in jobs for c in j["cct_s"]]
    iters = [i for j in jobs for i in j["iterations"]]
    gps = [g for i in iters for g in i["goodput"].values()]
    exact_flags = [i["exact"] for i in iters if i["exact"] is not None]
    marks = rm["marks"]["total"]
    return {
        "iterations": len(iters),
        "iterations_complete": sum(1 for i in iters if i["complete"]),
        "cct_s": ccts,
        "cct_mean_s": _mean(ccts),
        "misalignment_mean": _mean([j["misalignment"]["mean"] for j in jobs]),
        "misalignment_max": max(m.finite(j["misalignment"]["max"] for j in jobs), default=None),
        "step_end_skew_mean_s": _mean([st["end_skew_s"] for j in jobs for st in j["steps"]]),
        "step_end_skew_max_s": max(m.finite(st["end_skew_s"] for j in jobs for st in j["steps"]), default=None),
        "goodput_mean_bps": _mean([g["bps"] for g in gps]),
        "goodput_mean_fraction": _mean([g["fraction_of_link"] for g in gps]),
        "exact": all(exact_flags) if exact_flags else None,
        "sym_marks": marks["sym_marks"],
        "queue_marks": marks["queue_marks"],
        "cnp_tx": rm["cnp"]["tx"],
        "errors": [e for j in jobs for e in j["errors"]],
        "jobs": {job: job_summary(jm) for job, jm in rm["jobs"].items()},
    }


def config_summary(a: dict[str, Any]) -> dict[str, Any]:
    """One analysed run's summary (run_summary) in the config's own units:
    its times divided by the run's time factor, its goodput by its rate
    factor (analyse_run's ``time_factor``, ``rate_factor``); 1 unscaled."""
    s, f, r = a["summary"], a.get("time_factor") or 1.0, a.get("rate_factor") or 1.0

    def t(x):
        return None if x is None else x / f
    jobs = {job: {**j, "cct_by_iter_s": {it: t(c) for it, c in j["cct_by_iter_s"].items()},
                  "cct_s": [t(c) for c in j["cct_s"]], "cct_mean_s": t(j["cct_mean_s"])}
            for job, j in s["jobs"].items()}
    gp = s["goodput_mean_bps"]
    return {**s, "cct_s": [t(c) for c in s["cct_s"]], "cct_mean_s": t(s["cct_mean_s"]),
            "step_end_skew_mean_s": t(s["step_end_skew_mean_s"]), "step_end_skew_max_s": t(s["step_end_skew_max_s"]),
            "goodput_mean_bps": None if gp is None else gp / r, "jobs": jobs}


def job_summary(jm: dict[str, Any]) -> dict[str, Any]:
    """One job of one run: its CCT per iteration and their mean, misalignment."""
    iters = jm["iterations"]
    exact_flags = [i["exact"] for i in iters if i["exact"] is not None]
    return {
        "ranks": len(jm["ranks"]),
        "iterations": len(iters),
        "iterations_complete": sum(1 for i in iters if i["complete"]),
        "cct_by_iter_s": {str(i["iter"]): i["cct_s"] for i in iters},
        "cct_s": list(jm["cct_s"]),
        "cct_mean_s": _mean(jm["cct_s"]),
        "misalignment_mean": jm["misalignment"]["mean"],
        "misalignment_max": jm["misalignment"]["max"],
        "exact": all(exact_flags) if exact_flags else None,
    }


def summarise_jobs(ok: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per job id over a variant's ok runs: pooled CCT samples, mean, std,
    each run's mean (the run-to-run spread), misalignment."""
    out = {}
    for job in m.job_order(j for a in ok for j in a["summary"]["jobs"]):
        rows = [a["summary"]["jobs"][job] for a in ok if job in a["summary"]["jobs"]]
        ccts = [c for r in rows for c in r["cct_s"]]
        out[job] = {
            "runs": len(rows),
            "ranks": max((r["ranks"] for r in rows), default=0),
            "cct_n": len(ccts),
            "cct_mean_s": _mean(ccts),
            "cct_std_s": _std(ccts),
            "cct_run_means_s": [r["cct_mean_s"] for r in rows if r["cct_mean_s"] is not None],
            "misalignment_mean": _mean([r["misalignment_mean"] for r in rows]),
        }
    return out


def summarise(analysed: list[dict[str, Any]], oracle: dict[str, Any] | None = None,
              regime: dict[str, Any] | None = None, sim: dict[str, Any] | None = None) -> dict[str, Any]:
    """Every time in the config's own units (module docstring), the batch's
    clock beside them (``time_factor``, ``scale``, ``rate_factor``).  Per
    variant: ok/failed runs, each job's CCT mean/std over its iterations and
    change against the same job's baseline in percent (negative = faster),
    the variant's own CCT figures only where the runs have one job (None
    with several), misalignment, marks and CNPs per run.  Per job: measured CCTs and change beside the
    oracle's (an oracle document, analysis.oracle), what was captured of it
    and the emulation's efficiency.  ``regime``: the regime measured per
    variant and job, and the table's rows beside the parameters' design and
    the targets of a regime document (analysis.regime).  ``sim``: a
    simulation document (analysis.simulation): per job its figures at the
    config's scale and the deployment's, and the lines where they disagree."""
    variants = _order(a["variant"] for a in analysed)
    first = analysed[0] if analysed else {}
    # the batch's clock: its runs' seconds per second of the config's, its --scale K and --rate
    clock = first.get("time_factor") or 1.0
    out: dict[str, Any] = {"variants": {}, "time_factor": clock, "scale": first.get("scale") or 1.0,
                           "rate_factor": first.get("rate_factor") or 1.0}
    out["multi_job"] = multi = any(len(a["summary"]["jobs"]) > 1 for a in analysed)
    analysed = [{**a, "summary": config_summary(a)} for a in analysed]
    use = paired(analysed, variants)
    for v in variants:
        runs = [a for a in analysed if a["variant"] == v]
        ok, degraded = use[v]
        ccts = [] if multi else [c for a in ok for c in a["summary"]["cct_s"]]      # pooled: one job's only
        out["variants"][v] = {
            "runs": len(runs),
            "runs_ok": len(ok),
            # degraded runs are kept apart: the figures are the fidelity-ok
            # runs' unless none is ("fidelity": "degraded" then says so)
            "runs_degraded": [a["run"] for a in runs if a["status"] == "ok" and a.get("fidelity") == "degraded"],
            # fidelity-ok runs left out all the same: their repeat's other variant was not ok (paired)
            "runs_unpaired": [a["run"] for a in runs if a["status"] == "ok" and a.get("fidelity") != "degraded"
                              and a not in ok],
            "fidelity": "degraded" if ok and ok == degraded else "ok",
            "runs_not_ok": [{"run": a["run"], "status": a["status"], "reason": a["reason"]}
                            for a in runs if a["status"] != "ok"],
            "cct_n": len(ccts),
            "cct_mean_s": _mean(ccts),
            "cct_std_s": _std(ccts),
            "cct_run_means_s": [] if multi else [a["summary"]["cct_mean_s"] for a in ok],
            "misalignment_mean": _mean([a["summary"]["misalignment_mean"] for a in ok]),
            "misalignment_max": max(m.finite(a["summary"]["misalignment_max"] for a in ok), default=None),
            "step_end_skew_mean_s": _mean([a["summary"]["step_end_skew_mean_s"] for a in ok]),
            "sym_marks_per_run": _mean([a["summary"]["sym_marks"] for a in ok]),
            "queue_marks_per_run": _mean([a["summary"]["queue_marks"] for a in ok]),
            "cnp_per_run": _mean([a["summary"]["cnp_tx"] for a in ok]),
            "goodput_mean_fraction": _mean([a["summary"]["goodput_mean_fraction"] for a in ok]),
            "wrong_results": [a["run"] for a in ok if a["summary"]["exact"] is False],
            "jobs": summarise_jobs(ok),
        }
    base = out["variants"].get(BASELINE, {}).get("cct_mean_s")
    base_jobs = out["variants"].get(BASELINE, {}).get("jobs", {})
    for v, row in out["variants"].items():
        row["cct_change_pct"] = _change(v, row["cct_mean_s"], base)
        for job, jrow in row["jobs"].items():   # against the same job's baseline
            jrow["cct_change_pct"] = _change(v, jrow["cct_mean_s"], base_jobs.get(job, {}).get("cct_mean_s"))
    out["jobs"] = job_comparison(out["variants"], oracle, analysed, clock)
    for job, changes in repeat_changes(use).items():
        if job in out["jobs"]:
            out["jobs"][job]["change_per_repeat_pct"] = changes
            out["jobs"][job]["change_sd_pct"] = spread(changes)
            out["jobs"][job]["change_noise"] = change_noise(changes)
    measured = {v: rg.summarise(use[v][0]) for v in variants}
    out["regime"] = {"measured": measured, "rows": rg.table(measured, regime),
                     "labels": (regime or {}).get("labels") or {}, "verdicts": rg.job_verdicts(measured, regime)}
    out["oracle_threshold"] = oracle.get("threshold") if oracle else None
    simulated = job_figures(sim)
    for job, row in out["jobs"].items():
        row["sim"] = simulated.get(job)
    scale = out["scale"]
    out["sim_k"] = config_k(sim)
    out["sim_rate"] = config_rate(sim)
    out["sim_verdict"] = verdict(simulated, out["regime"]["verdicts"], scale, out["sim_k"])
    out["sim_confirmed"] = confirmed(simulated, scale, out["sim_k"])
    out["sim_coarse"] = (((sim or {}).get("scales") or {}).get(DEPLOYMENT_SCALE) or {}).get("coarse")
    return out


def repeat_changes(use: dict[str, tuple[list, list]]) -> dict[str, list[float]]:
    """Per job, Symphony's change against baseline within each counted
    repeat (both variants on that repeat's jitter schedule), in repeat
    order: how much the change itself varies from run to run, which the
    means over the repeats hide and a target "within the run-to-run noise"
    needs.  Repeats without both variants' run are skipped."""
    base = {a.get("repeat"): a for a in use.get(BASELINE, ([], []))[0] if isinstance(a.get("repeat"), int)}
    out: dict[str, list[float]] = {}
    for s in sorted(use.get(SYMPHONY, ([], []))[0], key=lambda a: a.get("repeat") or 0):
        b = base.get(s.get("repeat"))
        if b is None:
            continue
        for job, sj in s["summary"]["jobs"].items():
            c = _change(SYMPHONY, sj["cct_mean_s"], (b["summary"]["jobs"].get(job) or {}).get("cct_mean_s"))
            if c is not None:
                out.setdefault(job, []).append(c)
    return out


def counted(runs: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(the ok runs a variant's figures come from, its ok runs whose fidelity
    was degraded).  A degraded run (the machine bent its timing:
    experiments/fidelity.py) is left out while any run of the variant is
    fidelity-ok; when none is, the figures come from the degraded ones, and
    are marked so."""
    ok = [a for a in runs if a["status"] == "ok"]
    degraded = [a for a in ok if a.get("fidelity") == "degraded"]
    return [a for a in ok if a.get("fidelity") != "degraded"] or degraded, degraded


def paired(analysed: list[dict[str, Any]], variants: list[str]) -> dict[str, tuple[list, list]]:
    """Per variant, ``counted``'s pair, taken from the same repeats for
    every variant: the repeats whose run of each variant is ok, and of
    those the ones where each is fidelity-ok unless none is (then the
    degraded ones, marked so).  A variant's figures and another's then come
    from the same jitter schedules and the same machine conditions: never
    one ok run of one against four degraded runs of the other.  Runs
    without a repeat number (records from elsewhere) are counted as before."""
    by_rep: dict[int, dict[str, dict[str, Any]]] = {}
    for a in analysed:
        if isinstance(a.get("repeat"), int):
            by_rep.setdefault(a["repeat"], {})[a["variant"]] = a
    if len(variants) < 2 or any(not isinstance(a.get("repeat"), int) for a in analysed):
        return {v: counted([a for a in analysed if a["variant"] == v]) for v in variants}
    ok = [rep for rep, vs in sorted(by_rep.items())
          if all(v in vs and vs[v]["status"] == "ok" for v in variants)]
    good = [rep for rep in ok if all(by_rep[rep][v].get("fidelity") != "degraded" for v in variants)]
    reps = good or ok
    out = {}
    for v in variants:
        runs = [by_rep[rep][v] for rep in reps]
        out[v] = (runs, [a for a in runs if a.get("fidelity") == "degraded"])
    return out


def _change(variant: str, value: float | None, base: float | None) -> float | None:
    """Percent change of a mean CCT against baseline's (negative = faster)."""
    if variant == BASELINE or base in (None, 0) or value is None:
        return None
    return (value - base) / base * 100.0


# ---------------------------------------------------------------- plots

def _pairs_by_repeat(runs: list[Run], variants: list[str]) -> list[tuple[str, list[Run]]]:
    """Runs that belong together in a stacked plot: same repeat, one per variant."""
    groups: dict[Any, list[Run]] = {}
    for r in runs:
        key = r.repeat if r.repeat is not None else r.name
        groups.setdefault(key, []).append(r)
    out = []
    for key in sorted(groups, key=lambda k: (0, k, "") if isinstance(k, int) else (1, 0, str(k))):
        members = sorted(groups[key], key=lambda r: variants.index(r.variant))
        out.append((f"rep{key}" if isinstance(key, int) else str(key), members))
    return out


def full_rate_traces(events: list[dict[str, Any]], t0: int, clock: float = 1.0,
                     rate: float = 1.0) -> dict[str, dict[str, list]]:
    """Every rate event (metrics.json keeps a decimated copy; a plot must not
    lose the dips), keyed by flow label, times in s from t0; in the
    config's units: the run's seconds over clock, its rates over rate."""
    out = {}
    for job, evs in m.by_job(events).items():
        ranks = m.ranks_of(evs)
        for rank, tr in m.rate_traces(evs).items():
            out[m.flow_label(job, rank, ranks)] = {
                "t_s": [(t - t0) / 1e9 / clock for t in tr["t"]], "rc_bps": [rc / rate for rc in tr["rc"]],
                "cnp_rx_t_s": [(t - t0) / 1e9 / clock for t in tr["cnp_t"]]}
    return out


def job_ccts(ccts: dict[str, float | None]) -> str:
    """Mean CCT per job in words, seconds of the config's time: "mean CCT
    4.348 s" for one job, "mean CCT job 1 4.348 s, job 2 0.619 s" for
    several (never one mean over them)."""
    known = {job: c for job, c in ccts.items() if c is not None}
    if not known:
        return "no completed iteration"
    if len(ccts) == 1:
        return f"mean CCT {next(iter(known.values())):.3f} s"
    return "mean CCT " + ", ".join(f"job {job} {c:.3f} s" for job, c in known.items())


def _title(run: Run, rm: dict[str, Any]) -> str:
    """A run's panel title: its variant, name, each job's mean CCT in the
    config's time, and how it ended when not ok."""
    status = "" if run.status == "ok" else f"  [{run.status.upper()}: {run.reason}]"
    jobs = config_summary(rm)["jobs"]
    return f"{run.variant} - {run.name} - {job_ccts({j: x['cct_mean_s'] for j, x in jobs.items()})}{status}"


def oracle_panels(members: list[Run], by_name: dict[str, dict[str, Any]],
                  oracle: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Timeline panels of the model on the schedule of these runs' repeat,
    one per variant, on the measured panels' time axis (the model's t = 0 is
    the run's t0 in meta.json, the jitter clock's zero); compute windows
    placed where the model's rank started late."""
    panels = []
    for r in members if oracle else []:
        t0 = by_name[r.name]["t0_ns"]
        events = timeline_events(oracle, r.repeat, r.variant, meta_t0_ns(r.meta) or t0) if r.repeat is not None else []
        if not events:
            continue
        jobs = oracle["repeats"][str(r.repeat)]["variants"][r.variant]["jobs"]
        ccts = {job: j["mean_cct_s"] / (r.time_factor or 1.0) for job, j in jobs.items()}
        unplaced = [{**w, "start_ns": None, "end_ns": None} if w.get("kind") == "compute" else w for w in r.jitter]
        panels.append({"title": f"oracle {r.variant} - the flow-level model on rep {r.repeat}'s jitter - "
                                f"{job_ccts(ccts)}",
                       "events": events, "t0": t0, "jitter": place_compute_jitter(unplaced, events)})
    return panels


def cct_per_job(summary: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """What the CCT-per-job chart draws: per job the measured mean and std
    per variant, the oracle's CCT per variant and the bandwidth bound."""
    out = {}
    for job, row in summary["jobs"].items():
        o = row["oracle"] or {}
        out[job] = {"measured": {v: (r["jobs"][job]["cct_mean_s"], r["jobs"][job]["cct_std_s"] or 0.0)
                                 for v, r in summary["variants"].items()
                                 if job in r["jobs"] and r["jobs"][job]["cct_mean_s"] is not None},
                    "oracle": {v: o.get(f"{v}_cct_s") for v in VARIANT_ORDER if o.get(f"{v}_cct_s") is not None},
                    "bound_s": o.get("bound_s")}
    return out


def make_plots(runs: list[Run], analysed: list[dict[str, Any]], plot_dir: Path,
               max_timelines: int = 10, oracle: dict[str, Any] | None = None,
               summary: dict[str, Any] | None = None) -> list[Path]:
    by_name = {a["run"]: a for a in analysed}
    variants = _order(r.variant for r in runs)
    written: list[Path] = []
    with_events = [r for r in runs if r.events]

    # every time axis in the config's seconds: a scaled run's clock over its time factor
    for label, members in _pairs_by_repeat(with_events, variants)[:max_timelines]:
        panels = [{"title": _title(r, by_name[r.name]), "events": r.events,
                   "t0": by_name[r.name]["t0_ns"], "jitter": r.jitter} for r in members]
        panels += oracle_panels(members, by_name, oracle)
        written.append(plots.plot_timeline(panels, plot_dir / f"timeline_{label}.png",
                                           clock=members[0].time_factor, rate=members[0].rate_factor))

    # ok runs only (a failed run can last far longer and squash the axis); all
    # runs when none is ok, so that something is shown
    shown = [r for r in with_events if r.status == "ok"] or with_events
    series = {v: [{"label": (f"rep {r.repeat}" if r.repeat is not None else r.name)
                            + (f" job {j}" if len(by_name[r.name]["jobs"]) > 1 else "")
                            + ("" if r.status == "ok" else f" ({r.status})"),
                   "curve": [[t / r.time_factor, x] for t, x in jm["misalignment_curve"]]}
                  for r in shown if r.variant == v
                  for j, jm in by_name[r.name]["jobs"].items()]
              for v in variants}
    series = {v: s for v, s in series.items() if s}
    if any(series.values()):
        written.append(plots.plot_misalignment(series, plot_dir / "misalignment.png"))

    # per job: a CCT pooled over several jobs' iterations is no job's
    samples: dict[str, dict[str, list[float]]] = {}
    for a in analysed:
        if a["status"] == "ok":
            for job, j in config_summary(a)["jobs"].items():
                samples.setdefault(job, {}).setdefault(a["variant"], []).extend(j["cct_s"])
    written.append(plots.plot_cct({job: {v: samples[job][v] for v in variants if v in samples[job]}
                                   for job in m.job_order(samples)}, plot_dir / "cct.png"))

    rate_panels = []
    first_pair = _pairs_by_repeat(with_events, variants)[:1]
    for _, members in first_pair:
        for r in members:
            rm = by_name[r.name]
            traces = full_rate_traces(r.events, rm["t0_ns"], r.time_factor, r.rate_factor)
            ends = [jm["misalignment_curve"][-1][0] / r.time_factor
                    for jm in rm["jobs"].values() if jm["misalignment_curve"]]
            link = rm.get("link_rate_bps")
            rate_panels.append({"title": f"{r.variant} - {r.name}", "traces": traces,
                                "link_rate_bps": None if link is None else link / r.rate_factor,
                                "t_end_s": max(ends, default=None)})
    if any(p["traces"] for p in rate_panels):
        written.append(plots.plot_rates(rate_panels, plot_dir / "rates.png"))

    marks: dict[str, dict[str, dict[str, tuple[float, float]]]] = {}
    for v in variants:
        ok = [a for a in analysed if a["variant"] == v and a["status"] == "ok"]
        switches = sorted({sw for a in ok for sw in a["marks"]["switches"]})
        marks[v] = {}
        for sw in switches:
            marks[v][sw] = {}
            for cause in m.MARK_CAUSES:
                xs = m.finite(a["marks"]["switches"].get(sw, {}).get(cause) for a in ok)
                if xs:
                    marks[v][sw][cause] = (mean(xs), _std(xs) or 0.0)
    if any(marks.values()):
        written.append(plots.plot_marks(marks, plot_dir / "marks.png"))
    if oracle and summary is not None:
        written.append(plots.plot_cct_jobs(cct_per_job(summary), plot_dir / "cctjobs.png"))
    return written


RUN_MARKERS = ("meta.json", "config.toml", "agents")


def default_out_dir(run_dirs: list[Path]) -> Path:
    """The single run dir, or the experiment dir the runs share; ValueError
    when they lie in different directories (their common ancestor, /tmp or
    /, is no place for a report: say where with out_dir)."""
    resolved = [Path(d).resolve() for d in run_dirs]
    if len(resolved) == 1:
        return resolved[0]
    parents = sorted({str(p.parent) for p in resolved})
    if len(parents) > 1:
        raise ValueError(f"the runs lie in {len(parents)} different directories ({', '.join(parents[:3])}"
                         f"{', ...' if len(parents) > 3 else ''}): say where the report goes with --out DIR")
    return Path(parents[0])


def _check_dirs(run_dirs: Iterable[str | Path]) -> list[Path]:
    """Run directories, each holding at least one of RUN_MARKERS; ValueError
    (one line) for anything else."""
    dirs = [Path(d) for d in run_dirs]
    if not dirs:
        raise ValueError("no run directories given")
    for d in dirs:
        if not d.is_dir():
            raise ValueError(f"not a directory: {d}")
        if not any((d / m).exists() for m in RUN_MARKERS):
            inner = sorted(p.name for p in d.iterdir() if p.is_dir() and (p / "meta.json").exists())
            hint = f"; it holds run directories ({', '.join(inner[:2])}{', ...' if len(inner) > 2 else ''}): " \
                   "give those" if inner else ""
            raise ValueError(f"{d}: not a run directory (no meta.json, config.toml or agents/){hint}")
    return dirs


@contextlib.contextmanager
def _staged(out: Path) -> Iterator[Path]:
    """A folder beside out to write the report into, moved into out when
    the block ends well and removed when it does not (an interrupt, a full
    disk): a report is whole or absent, never half made."""
    stage = out.with_name(f".{out.name}.partial-{os.getpid()}")
    shutil.rmtree(stage, ignore_errors=True)
    stage.mkdir(parents=True)
    try:
        yield stage
        if not out.exists():
            stage.rename(out)
            return
        for item in stage.iterdir():        # into an existing folder (a run dir): item by item
            target = out / item.name
            if target.is_dir() and not target.is_symlink():
                shutil.rmtree(target)
            item.replace(target)
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def write_report(run_dirs: Iterable[str | Path], out_dir: str | Path | None = None,
                 oracle: str | Path | None = None, regime: str | Path | None = None,
                 sim: str | Path | None = None, loaded: list[tuple[Run, dict[str, Any]]] | None = None) -> Path:
    """Analyse the runs, write metrics.json into each, plots, report.md and
    report.json (the summary table's figures) into out_dir (default:
    ``default_out_dir``).  oracle: the oracle file to set beside the runs
    (default: the one beside the run directories, ``analysis.oracle.find_oracle``;
    none: no oracle figures); regime: the regime file with the targets
    (default: the one beside the run directories, ``analysis.regime.find_regime``;
    none: the regime table without design and target); sim: the simulation
    file (default: the one beside the run directories,
    ``analysis.simulation.find_sim``); loaded: the runs as the caller
    has already read and analysed them (analyse_run), in run_dirs' order
    (a batch: a run's records take seconds to read).  Returns report.md's
    path."""
    run_dirs = _check_dirs(run_dirs)
    out = Path(out_dir) if out_dir is not None else default_out_dir(run_dirs)
    if loaded is None:
        loaded = [(run, analyse_run(run)) for run in map(load_run, run_dirs)]
    elif [run.path for run, _ in loaded] != run_dirs:
        raise ValueError("write_report: the runs loaded are not the run directories given")
    runs = [run for run, _ in loaded]
    analysed = [a for _, a in loaded]
    for run, a in loaded:
        _write_json(run.path / "metrics.json", a)
    warnings = [w for r in runs for w in r.warnings]
    oracle_path = Path(oracle) if oracle is not None else find_oracle(run_dirs)
    doc = load_oracle(oracle_path, warnings) if oracle_path is not None else None
    regime_path = Path(regime) if regime is not None else rg.find_regime(run_dirs)
    regime_doc = rg.load_regime(regime_path, warnings) if regime_path is not None else None
    sim_path = Path(sim) if sim is not None else find_sim(run_dirs)
    sim_doc = load_sim(sim_path, warnings) if sim_path is not None else None
    summary = summarise(analysed, doc, regime_doc, sim_doc)
    with _staged(out) as stage:
        _write_json(stage / "report.json", {"runs": [str(r.path) for r in runs],
                                            "oracle_file": str(oracle_path) if doc else None, **summary})
        plot_paths = make_plots(runs, analysed, stage / "plots", oracle=doc, summary=summary)
        text = render_markdown(out.name, summary, [{**a, "summary": config_summary(a)} for a in analysed],
                               plot_paths, stage, warnings)
        (stage / "report.md").write_text(text, encoding="utf-8")
    return out / "report.md"
