"""After the runs of one experiment (or sweep point): analysis' per-run
metrics, summary.json (analysis' per-variant figures plus the spread of the
per-run means), the table printed at the end, the report, the exit code.
CCT and misalignment are analysis' definitions, computed there only."""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path
from statistics import mean, stdev

from analysis.records import load_run
from analysis.report import analyse_run, summarise, write_report
from experiments import rundir as R
from experiments.config import ExperimentSpec
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


def summary(spec: ExperimentSpec, results: list[RunResult], analysed: list[dict | None], interrupted: bool) -> dict:
    """summary.json: analysis' per-variant figures (pooled per-iteration CCT,
    change against baseline) plus the spread of the per-run means.  Without
    an analysis of every run (it failed, or a second Ctrl-C), the run list only."""
    complete = bool(analysed) and all(a is not None for a in analysed)
    s = summarise(analysed) if complete else {"variants": {}}
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


def table(summ: dict) -> str:
    rows = [("variant", "runs ok", "CCT mean s", "CCT std s", "run-mean std s", "change %", "misalign",
             "sym marks/run")]
    for v, row in summ["variants"].items():
        rows.append((v, f"{row['runs_ok']}/{row['runs']}", fmt(row["cct_mean_s"]), fmt(row["cct_std_s"]),
                     fmt(row.get("run_cct_std_s")), fmt(row.get("cct_change_pct"), "{:+.1f}"),
                     fmt(row.get("misalignment_mean"), "{:.2f}"), fmt(row.get("sym_marks_per_run"), "{:.0f}")))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows)


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
    print(f"summary: {exp_dir / 'summary.json'}")


def finish_point(spec: ExperimentSpec, results: list[RunResult], exp_dir: Path, stamp: str, *, interrupted: bool,
                 hurry: bool, report: bool, say) -> dict:
    """Analyse the runs, write summary.json (and a stamped copy), print the
    table, write analysis' report unless told not to or interrupted."""
    analysed: list[dict | None] = [None] * len(results)
    if not hurry:                   # a second Ctrl-C: the run list only, no analysis
        try:
            analysed = analyse(results)
        except Exception as exc:
            say(f"analysis of the runs failed: {type(exc).__name__}: {exc}")
    summ = summary(spec, results, analysed, interrupted)
    summ["stamp"] = stamp
    exp_dir.mkdir(parents=True, exist_ok=True)
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
                print(f"report:  {write_report(ok_dirs, exp_dir / f'{stamp}-report')}")
        except Exception as exc:
            say(f"report failed: {type(exc).__name__}: {exc}")
    return summ
