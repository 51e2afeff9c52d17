"""After the runs of one experiment (or sweep point): the oracle on the
schedules the runs used (``<stamp>-oracle.json``), analysis' per-run
metrics, summary.json (analysis' per-variant figures plus the spread of the
per-run means, and per job the measured change beside the oracle's), the
tables printed at the end, the report, the exit code.  CCT, misalignment
and the comparison with the oracle are analysis' definitions, computed there
only."""

from __future__ import annotations

import json
import math
import os
import warnings
from collections.abc import Mapping
from pathlib import Path
from statistics import mean, stdev

from analysis.oracle import job_comparison
from analysis.records import load_run
from analysis.report import analyse_run, summarise, write_report
from experiments import rundir as R
from experiments.config import ExperimentSpec
from experiments.oracle import ModelError
from experiments.oracle.export import document
from experiments.oracle.scenario import predict_repeats
from experiments.supervise import RunResult

EXIT_OK, EXIT_WRONG, EXIT_USAGE, EXIT_FAILED, EXIT_INTERRUPTED = 0, 1, 2, 3, 130


def analyse(results: list[RunResult]) -> list[dict]:
    """analysis' per-run metrics (its records warnings silenced: the report says them)."""
    out = []
    for r in results:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out.append(analyse_run(load_run(r.run_dir)))
    return out


def _stats(xs: list[float]) -> tuple[float | None, float | None]:
    xs = [x for x in xs if x is not None and math.isfinite(x)]
    if not xs:
        return None, None
    return mean(xs), (stdev(xs) if len(xs) > 1 else 0.0)


def applied_schedules(results: list[RunResult]) -> dict[int, list[dict]]:
    """repeat -> the jitter schedule its runs applied: the run directory's
    jitter.jsonl, written before anything was applied (the first run of a
    repeat that has one; both variants of a repeat share it)."""
    out: dict[int, list[dict]] = {}
    for r in results:
        path = r.run_dir / "jitter.jsonl"
        if r.repeat not in out and path.is_file():
            out[r.repeat] = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    return out


def oracle_document(spec: ExperimentSpec, schedules: Mapping[int, list[dict]], stamp: str) -> dict:
    """The oracle file's content: the model on each repeat's schedule as the
    runs applied it (experiments/oracle/export.py states the schema).
    ModelError when the model cannot run the config."""
    return document(spec, predict_repeats(spec, schedules), stamp)


def write_oracle(path: Path, doc: dict) -> None:
    """Compact (step records make it long), atomic."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(doc, separators=(",", ":")) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def summary(spec: ExperimentSpec, results: list[RunResult], analysed: list[dict | None], interrupted: bool,
            oracle: dict | None = None) -> dict:
    """summary.json: analysis' per-variant figures (pooled per-iteration CCT,
    change against baseline) plus the spread of the per-run means, and per
    job (``jobs.<id>``) the measured change beside the oracle's
    (analysis.oracle: ``cct_change_pct``, ``oracle``, ``captured``,
    ``efficiency``).  Without an analysis of every run (it failed, or a
    second Ctrl-C), the run list and the oracle only."""
    complete = bool(analysed) and all(a is not None for a in analysed)
    s = summarise(analysed, oracle) if complete else {"variants": {}, "jobs": job_comparison({}, oracle, [])}
    for v, row in s["variants"].items():
        means = [a["summary"]["cct_mean_s"] for a, r in zip(analysed, results, strict=True)
                 if r.variant == v and r.status == "ok"]
        row["run_cct_mean_s"], row["run_cct_std_s"] = _stats(means)
        row["wrong_results"] = sorted(set(row.get("wrong_results", []))
                                      | {r.run_dir.name for r in results if r.variant == v and r.wrong})
    runs = []
    for i, r in enumerate(results):
        row = {"run": r.run_dir.name, "variant": r.variant, "repeat": r.repeat, "status": r.status,
               "reason": r.reason, "wrong_result": r.wrong}
        if complete:
            a = analysed[i]["summary"]
            row.update(cct_mean_s=a["cct_mean_s"], misalignment_mean=a["misalignment_mean"])
        runs.append(row)
    return {
        "experiment": spec.name,
        "sweep_point": spec.sweep_point,
        "interrupted": interrupted,
        "runs": runs,
        "cct_change_pct": s["variants"].get("symphony", {}).get("cct_change_pct"),
        **s,
    }


def fmt(x, spec="{:.3f}") -> str:
    return "-" if x is None else spec.format(x)


def align(rows: list[tuple[str, ...]], indent: str = "") -> str:
    """Rows of cells as left-aligned columns."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join(indent + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows)


def table(summ: dict) -> str:
    rows = [("variant", "runs ok", "CCT mean s", "CCT std s", "run-mean std s", "change %", "misalign",
             "sym marks/run")]
    for v, row in summ["variants"].items():
        rows.append((v, f"{row['runs_ok']}/{row['runs']}", fmt(row["cct_mean_s"]), fmt(row["cct_std_s"]),
                     fmt(row.get("run_cct_std_s")), fmt(row.get("cct_change_pct"), "{:+.1f}"),
                     fmt(row.get("misalignment_mean"), "{:.2f}"), fmt(row.get("sym_marks_per_run"), "{:.0f}")))
    return align(rows)


def jobs_table(jobs: dict, indent: str = "") -> str:
    """Per job: measured CCTs and change, the oracle's, captured, efficiency."""
    rows = [("job", "baseline s", "Symphony s", "change %", "oracle base s", "oracle Sym s", "oracle change %",
             "bound s", "captured", "efficiency")]
    for job, row in jobs.items():
        o = row.get("oracle") or {}
        rows.append((job, fmt(row["baseline_cct_s"]), fmt(row["symphony_cct_s"]),
                     fmt(row["cct_change_pct"], "{:+.1f}"), fmt(o.get("baseline_cct_s")),
                     fmt(o.get("symphony_cct_s")), fmt(o.get("cct_change_pct"), "{:+.1f}"), fmt(o.get("bound_s")),
                     fmt(row["captured"], "{:.2f}"), fmt(row["efficiency"], "{:.2f}")))
    return align(rows, indent)


def exit_code(results: list[RunResult], interrupted: bool) -> int:
    if any(r.wrong for r in results):
        return EXIT_WRONG
    if interrupted:
        return EXIT_INTERRUPTED
    if any(r.status != "ok" for r in results):
        return EXIT_FAILED
    return EXIT_OK


def _targets(results: list[RunResult]) -> str:
    seen = set()
    for r in results:
        try:
            seen.add(json.loads((r.run_dir / "meta.json").read_text()).get("target"))
        except (OSError, ValueError):
            pass
    return ",".join(sorted(str(t) for t in seen)) or "-"


def _print_summary(spec: ExperimentSpec, results: list[RunResult], summ: dict, exp_dir: Path) -> None:
    point = f" {spec.sweep_point}" if spec.sweep_point else ""
    print(f"\n{spec.name}{point}: {len(results)} run(s), target {_targets(results)}")
    if summ["variants"]:
        print(table(summ))
    for v, row in summ["variants"].items():
        if row.get("cct_mean_s") is not None:
            excluded = row["runs"] - row["runs_ok"]
            print(f"  {v}: mean CCT {row['cct_mean_s']:.3f} s +- {row.get('cct_std_s') or 0:.3f} s"
                  f" over {row['cct_n']} iteration(s) of {row['runs_ok']} run(s)"
                  + (f"; {excluded} run(s) not ok, left out" if excluded else ""))
    if summ.get("cct_change_pct") is not None:
        print(f"  Symphony against baseline: {summ['cct_change_pct']:+.1f} % mean CCT "
              f"({'faster' if summ['cct_change_pct'] < 0 else 'slower'})")
    if summ.get("jobs"):
        print("per job, measured and the flow-level oracle on the same schedules"
              " (captured = measured change / oracle change; efficiency = oracle / measured baseline CCT):")
        print(jobs_table(summ["jobs"], "  "))
    print(f"summary: {exp_dir / 'summary.json'}")


def finish_point(spec: ExperimentSpec, results: list[RunResult], exp_dir: Path, stamp: str, *, interrupted: bool,
                 hurry: bool, report: bool, say) -> dict:
    """Run the oracle on the schedules the runs applied and write it beside
    them, analyse the runs, write summary.json (and a stamped copy), print
    the tables, write analysis' report (with the oracle beside the runs)
    unless told not to or interrupted."""
    analysed: list[dict | None] = [None] * len(results)
    oracle, oracle_path = None, None
    exp_dir.mkdir(parents=True, exist_ok=True)
    if not hurry:                   # a second Ctrl-C: the run list only, no analysis
        schedules = applied_schedules(results)
        if schedules:
            try:
                oracle = oracle_document(spec, schedules, stamp)
                oracle_path = exp_dir / f"{stamp}-oracle.json"
                write_oracle(oracle_path, oracle)
            except ModelError as exc:
                say(f"oracle: {exc}")
            except Exception as exc:        # the model must not cost the batch its summary
                say(f"oracle failed: {type(exc).__name__}: {exc}")
        try:
            analysed = analyse(results)
        except Exception as exc:
            say(f"analysis of the runs failed: {type(exc).__name__}: {exc}")
    summ = summary(spec, results, analysed, interrupted, oracle)
    summ["stamp"] = stamp
    summ["oracle_file"] = str(oracle_path) if oracle_path else None
    R.write_json(exp_dir / f"{stamp}-summary.json", summ)
    R.write_json(exp_dir / "summary.json", summ)
    _print_summary(spec, results, summ, exp_dir)
    ok_dirs = [r.run_dir for r in results if r.status in ("ok", "failed")]
    if interrupted:
        print("interrupted: no report; make one with: python3 -m analysis report "
              + " ".join(str(d) for d in ok_dirs[:4]) + (" ..." if len(ok_dirs) > 4 else ""))
    elif report and ok_dirs:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                print(f"report:  {write_report(ok_dirs, exp_dir / f'{stamp}-report', oracle=oracle_path)}")
        except Exception as exc:
            say(f"report failed: {type(exc).__name__}: {exc}")
    return summ
