"""Symphony's headline in real packets, against issue 15's targets:
sudo python3 -m experiments.bench.victim [--scenario NAME ...] [--all] [--repeats N]
        [--target soft] [--out DIR] [--json FILE] [--no-report]
python3 -m experiments.bench.victim --batch EXP_DIR/<stamp>-summary.json ...   (figures of batches already run)

Runs each scenario (experiments/configs/<name>.toml; default the demo's,
victim_straggle8) for --repeats repeats of both variants as `experiments
run` does (experiments.cli_run.run_points: the oracle on the schedules the
runs applied, summary.json, the report), then prints per job the measured
mean CCT of each variant with the run-to-run noise (the standard deviation
of the per-run means), the change, the oracle's change, the captured
fraction and the emulation's efficiency, and the targets:

* in a scenario where the oracle gives the victim (the job it gains most
  for) at least 2 %: the victim's mean CCT at least 30 % lower with
  Symphony, the other jobs' at most 5 % higher, at least 70 % of the
  oracle's gain captured (measured change / oracle change);
* for a job the oracle gives less than 2 %: the measured change within the
  noise, |change| <= 2 x its standard error, sqrt(s_b^2/n_b + s_s^2/n_s) /
  baseline mean (s: the std of the per-run means, n: the runs counted);
* the emulated baseline within 10 % of the oracle's: |oracle baseline CCT /
  measured baseline CCT - 1| <= 0.10 for every job.

A run counts as analysis counts it (analysis.report.counted): ok, and its
fidelity ok unless no run of the variant is.  Figures, not a timed test:
the targets are printed with what was measured, never asserted.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import warnings
from pathlib import Path
from statistics import stdev
from types import SimpleNamespace

from analysis.records import load_run
from analysis.report import analyse_run, counted
from contract import exits
from experiments import config as C
from experiments.cli_run import claim, run_points
from experiments.supervise import REPO
from experiments.tables import align, fmt

CONFIGS = REPO / "experiments" / "configs"
DEMO = "victim_straggle8"
SCENARIOS = (DEMO, "victim_straggle8_small", "victim_squeeze8", "victim_straggle16", "nohelp_access_squeeze")
DEMO_REPEATS = 8

VICTIM_GAIN_PCT = -30.0         # the victim's change: at most this (at least 30 % lower)
OTHERS_MAX_PCT = 5.0            # the other jobs' change: at most this
CAPTURED_MIN = 0.70             # measured change / oracle change
ORACLE_SMALL_PCT = 2.0          # an oracle change below this in size: "nothing to gain"
NOISE_SE = 2.0                  # within the noise: |change| <= this many standard errors
BASELINE_TOLERANCE = 0.10       # |oracle baseline / measured baseline - 1|


def per_run_means(summ: dict, exp_dir: Path) -> dict[str, dict[str, list[float]]]:
    """variant -> job -> the mean CCT of each run analysis counts (ok, and
    fidelity-ok unless none of the variant's runs is), from the run directories."""
    analysed = []
    for row in summ["runs"]:
        d = exp_dir / row["run"]
        if not d.is_dir():
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            analysed.append(analyse_run(load_run(d)))
    out: dict[str, dict[str, list[float]]] = {}
    for v in {a["variant"] for a in analysed}:
        ok, _ = counted([a for a in analysed if a["variant"] == v])
        for a in ok:
            for job, j in a["summary"]["jobs"].items():
                if j["cct_mean_s"] is not None:
                    out.setdefault(v, {}).setdefault(job, []).append(j["cct_mean_s"])
    return out


def _std(xs: list[float]) -> float | None:
    return stdev(xs) if len(xs) > 1 else None


def job_figures(summ: dict, means: dict[str, dict[str, list[float]]]) -> dict[str, dict]:
    """Per job: the summary's measured and oracle figures, the per-run means'
    std per variant and the change's standard error (percent of baseline)."""
    out = {}
    for job, row in summ.get("jobs", {}).items():
        b = means.get("baseline", {}).get(job, [])
        s = means.get("symphony", {}).get(job, [])
        sb, ss = _std(b), _std(s)
        base = row.get("baseline_cct_s")
        se = (math.sqrt(sb ** 2 / len(b) + ss ** 2 / len(s)) / base * 100
              if sb is not None and ss is not None and base else None)
        o = row.get("oracle") or {}
        out[job] = {**{k: row.get(k) for k in ("baseline_cct_s", "symphony_cct_s", "cct_change_pct", "captured",
                                               "efficiency")},
                    "oracle_baseline_cct_s": o.get("baseline_cct_s"), "oracle_change_pct": o.get("cct_change_pct"),
                    "runs_baseline": len(b), "runs_symphony": len(s), "run_std_baseline_s": sb,
                    "run_std_symphony_s": ss, "change_se_pct": se}
    return out


def victim_of(jobs: dict[str, dict]) -> str | None:
    """The job the oracle gains most for, when it gains at least ORACLE_SMALL_PCT."""
    gains = [(j["oracle_change_pct"], job) for job, j in jobs.items() if j["oracle_change_pct"] is not None]
    if not gains:
        return None
    change, job = min(gains)
    return job if change <= -ORACLE_SMALL_PCT else None


def targets(jobs: dict[str, dict]) -> list[dict]:
    """The targets of one scenario, each {"what", "value", "target", "met"}
    (met None: not measurable, e.g. fewer than two runs for the noise)."""
    out = []

    def add(what, value, target, met, unit="%"):
        out.append({"what": what, "value": value, "target": target, "met": met, "unit": unit})
    victim = victim_of(jobs)
    for job, j in jobs.items():
        change, oracle = j["cct_change_pct"], j["oracle_change_pct"]
        if job == victim:
            add(f"job {job} (victim): change", change, f"<= {VICTIM_GAIN_PCT:+.0f} %",
                None if change is None else change <= VICTIM_GAIN_PCT)
            add(f"job {job} (victim): captured", j["captured"], f">= {CAPTURED_MIN:.2f}",
                None if j["captured"] is None else j["captured"] >= CAPTURED_MIN, unit="")
        elif victim is not None:
            add(f"job {job}: change", change, f"<= {OTHERS_MAX_PCT:+.0f} %",
                None if change is None else change <= OTHERS_MAX_PCT)
        if oracle is not None and abs(oracle) < ORACLE_SMALL_PCT:
            se = j["change_se_pct"]
            add(f"job {job}: oracle {oracle:+.1f} %: change within the noise", change,
                f"|change| <= {NOISE_SE:g} SE = {fmt(None if se is None else NOISE_SE * se, '{:.1f}')} %",
                None if change is None or se is None else abs(change) <= NOISE_SE * se)
        eff = j["efficiency"]
        add(f"job {job}: baseline against the oracle's (oracle / measured)", eff,
            f"{1 - BASELINE_TOLERANCE:.2f}..{1 + BASELINE_TOLERANCE:.2f}",
            None if eff is None else abs(eff - 1) <= BASELINE_TOLERANCE, unit="")
    return out


def _pm(m, s) -> str:
    return f"{fmt(m)} +- {fmt(s)}" if m is not None else "-"


def print_scenario(name: str, summ: dict, jobs: dict[str, dict], checks: list[dict]) -> None:
    runs = summ["runs"]
    degraded = sum(1 for r in runs if r.get("fidelity") == "degraded")
    not_ok = sum(1 for r in runs if r["status"] != "ok")
    print(f"\n{name} (batch {summ.get('stamp')}): {len(runs)} run(s), {not_ok} not ok, {degraded} fidelity degraded")
    rows = [("job", "runs b/s", "baseline s", "Symphony s", "change %", "noise 2SE %", "oracle %", "captured",
             "oracle base s", "efficiency")]
    for job, j in jobs.items():
        rows.append((job, f"{j['runs_baseline']}/{j['runs_symphony']}",
                     _pm(j["baseline_cct_s"], j["run_std_baseline_s"]),
                     _pm(j["symphony_cct_s"], j["run_std_symphony_s"]),
                     fmt(j["cct_change_pct"], "{:+.1f}"),
                     fmt(None if j["change_se_pct"] is None else NOISE_SE * j["change_se_pct"], "{:.1f}"),
                     fmt(j["oracle_change_pct"], "{:+.1f}"), fmt(j["captured"], "{:.2f}"),
                     fmt(j["oracle_baseline_cct_s"]), fmt(j["efficiency"], "{:.2f}")))
    print(align(rows, "  "))
    print("  (mean CCT +- the std of the per-run means; noise: 2 x the change's standard error)")
    for c in checks:
        verdict = {True: "met", False: "NOT MET", None: "-"}[c["met"]]
        shown = fmt(c["value"], "{:+.1f} %") if c["unit"] == "%" else fmt(c["value"], "{:.2f}")
        print(f"  {verdict:8s} {c['what']}: {shown} (target {c['target']})")


class NotABatch(Exception):
    """A --batch file that holds no finished batch's figures (one line)."""


def read_summary(summary_path: Path) -> dict:
    """A finished batch's summary; NotABatch for a file that is missing, not
    JSON, or the placeholder of a batch still running (or cut short)."""
    try:
        summ = json.loads(summary_path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise NotABatch(f"{summary_path}: cannot read a summary: {getattr(e, 'strerror', None) or e}") from None
    if not isinstance(summ, dict) or "runs" not in summ:
        status = summ.get("status") if isinstance(summ, dict) else None
        raise NotABatch(f"{summary_path}: no figures yet (status {status or 'unknown'}: "
                        "a batch still running, or cut short)")
    return summ


def evaluate(summary_path: Path) -> dict:
    summ = read_summary(summary_path)
    jobs = job_figures(summ, per_run_means(summ, summary_path.parent))
    return {"scenario": summ["experiment"], "stamp": summ.get("stamp"), "summary": str(summary_path),
            "jobs": jobs, "targets": targets(jobs), "summ": summ}


def run_scenario(name: str, args) -> Path:
    """One batch of a scenario, as `experiments run` makes it; its stamped summary."""
    config = CONFIGS / f"{name}.toml"
    points = C.load_points(config, repeat=args.repeats or (DEMO_REPEATS if name == DEMO else None),
                           seed=None, sweep=False, machine=True)
    run_args = SimpleNamespace(out=args.out, target=args.target, fail_fast=False, no_report=args.no_report)
    stamp = claim(args.out, points)
    run_points(run_args, points, stamp)
    return args.out / points[0][1].name / f"{stamp}-summary.json"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m experiments.bench.victim", description=__doc__.split("\n")[0])
    ap.add_argument("--scenario", action="append", default=[], choices=SCENARIOS,
                    help=f"a scenario to run (repeatable; default {DEMO})")
    ap.add_argument("--all", action="store_true", help="every scenario")
    ap.add_argument("--repeats", type=int, default=None,
                    help=f"repeats of each variant (default: {DEMO_REPEATS} for the demo, the config's otherwise)")
    ap.add_argument("--target", default="soft")
    ap.add_argument("--out", type=Path, default=Path("results/bench-victim"))
    ap.add_argument("--no-report", action="store_true", help="skip analysis' plots and report.md")
    ap.add_argument("--batch", action="append", default=[], type=Path, metavar="SUMMARY",
                    help="the figures of a batch already run (its <stamp>-summary.json), repeatable; runs nothing")
    ap.add_argument("--json", type=Path, help="also write the figures to this file")
    args = ap.parse_args(argv)
    if args.repeats is not None and args.repeats < 1:
        ap.error("--repeats must be >= 1")
    summaries = list(args.batch)
    if not summaries:
        if os.geteuid() != 0:
            print("experiments.bench.victim: needs root (Mininet, raw sockets): run it with sudo", file=sys.stderr)
            return exits.USAGE
        for name in (SCENARIOS if args.all else args.scenario or [DEMO]):
            summaries.append(run_scenario(name, args))
    results = []
    for path in summaries:
        try:
            r = evaluate(path)
        except NotABatch as e:
            print(f"experiments.bench.victim: {e}", file=sys.stderr)
            return exits.USAGE
        print_scenario(r["scenario"], r.pop("summ"), r["jobs"], r["targets"])
        results.append(r)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return exits.OK


if __name__ == "__main__":
    sys.exit(main())
