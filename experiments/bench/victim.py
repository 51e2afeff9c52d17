"""Symphony's effect wherever it exists, in the deployment's regime (issue 22's targets):
sudo python3 -m experiments.bench.victim [--scenario NAME ...] [--config PATH ...] [--all] [--family] [--repeats N]
        [--scale auto|K|none] [--no-confirm] [--confirm-up-to K] [--target soft|bmv2] [--out DIR]
        [--json FILE] [--no-report]
python3 -m experiments.bench.victim --batch EXP_DIR/<stamp>-summary.json ...   (figures of batches already run)

Runs each scenario (a shipped config, experiments/configs/<name>.toml, or
one of the family written for this bench and never tuned to it,
experiments/bench/family/<name>.toml, or any config by its path with
--config; default the demo's, victim_straggle8)
for --repeats repeats of both variants as `experiments run --scale auto
--confirm` does (experiments.cli_run: the K the simulation confirms, or the
closest of the K it tried; the oracle on the schedules the runs applied,
the simulation at that K and at the deployment's scale, the regime verdict,
summary.json, the report), then prints per job the measured
mean CCT of each variant with the run-to-run noise (the standard deviation
of the per-run means), the change, the oracle's change, the deployment
simulation's, the captured fraction, the regime verdict, and the targets:

* the victim's (the job the oracle gains most for, at least 2 %) change
  within 10 points of the simulation's at the deployment's scale, every
  other job's within 5 points;
* at least half the oracle's gain captured (measured change / oracle
  change) wherever the deployment simulation captures that much;
* for a job the oracle gives less than 2 %: the measured change within the
  noise, |change| <= 2 x its standard error, sqrt(s_b^2/n_b + s_s^2/n_s) /
  baseline mean (s: the std of the per-run means, n: the runs counted);
* every job in the deployment's regime (analysis.regime);
* the emulated baseline within 10 % of the oracle's: |oracle baseline CCT /
  measured baseline CCT - 1| <= 0.10 for every job.

A run counts as the summary counts it (analysis.report.paired): ok, and
its fidelity ok unless no run of the variant is, in repeats where both
variants' runs count.  Figures, not a timed test:
the targets are printed with what was measured, never asserted.

A signal (Ctrl-C, SIGTERM) settles the batch it came in, as `experiments
run` does, and stops the bench there: the scenarios after it are named,
not run, and the exit code is the interrupted one.
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

from analysis.oracle import captured
from analysis.records import load_run
from analysis.regime import describe as rg_describe
from analysis.report import analyse_run, paired
from analysis.simulation import CONFIG_SCALE, DEPLOYMENT_SCALE
from analysis.simulation import CONFIRMED_NOTE as SIM_CONFIRMED_NOTE
from contract import exits
from experiments import config as C
from experiments.cli_common import Refused
from experiments.cli_run import claim, run_points, scaled_points
from experiments.supervise import REPO
from experiments.tables import align, fmt

CONFIGS = REPO / "experiments" / "configs"
FAMILY = Path(__file__).resolve().parent / "family"
DEMO = "victim_straggle8"
SHIPPED = (DEMO, "victim_straggle8_small", "victim_squeeze8", "victim_straggle16", "nohelp_access_squeeze")
FAMILY_NAMES = tuple(sorted(p.stem for p in FAMILY.glob("*.toml")))
REPEATS = 2                     # per variant: a batch in the regime takes K times as long as the config's

VICTIM_POINTS = 10.0            # the victim's change: within this many points of the deployment simulation's
OTHERS_POINTS = 5.0             # every other job's
CAPTURED_MIN = 0.50             # measured change / oracle change, where the deployment simulation's is this much
ORACLE_SMALL_PCT = 2.0          # an oracle change below this in size: "nothing to gain"
NOISE_SE = 2.0                  # within the noise: |change| <= this many standard errors
BASELINE_TOLERANCE = 0.10       # |oracle baseline / measured baseline - 1|


def per_run_means(summ: dict, exp_dir: Path) -> dict[str, dict[str, list[float]]]:
    """variant -> job -> the mean CCT of each run the summary's figures come
    from (the same paired runs, in the config's units).  A summary written
    before it carried them per job: from the run directories instead."""
    variants = summ.get("variants") or {}
    jobs = [j for row in variants.values() for j in (row.get("jobs") or {}).values()]
    if jobs and all("cct_run_means_s" in j for j in jobs):
        return {v: {job: list(j["cct_run_means_s"]) for job, j in row["jobs"].items()}
                for v, row in variants.items()}
    analysed = []
    for row in summ["runs"]:
        d = exp_dir / row["run"]
        if not d.is_dir():
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            analysed.append(analyse_run(load_run(d)))
    return run_means(analysed)


def run_means(analysed: list[dict]) -> dict[str, dict[str, list[float]]]:
    """variant -> job -> each paired run's mean CCT in the config's units
    (for summaries without them): a scaled run's records keep its own
    clock, so its CCTs are divided by its K, as the summary's are (else the
    spread and the noise come out K times too large beside means that are not)."""
    out: dict[str, dict[str, list[float]]] = {}
    variants = sorted({a["variant"] for a in analysed})
    for v, (ok, _) in paired(analysed, variants).items():
        for a in ok:
            for job, j in a["summary"]["jobs"].items():
                if j["cct_mean_s"] is not None:
                    out.setdefault(v, {}).setdefault(job, []).append(j["cct_mean_s"] / (a.get("time_factor") or 1.0))
    return out


def _std(xs: list[float]) -> float | None:
    return stdev(xs) if len(xs) > 1 else None


def job_figures(summ: dict, means: dict[str, dict[str, list[float]]]) -> dict[str, dict]:
    """Per job: the summary's measured, oracle, simulation and regime
    figures, the per-run means' std per variant and the change's standard
    error (percent of baseline)."""
    out = {}
    verdicts = (summ.get("regime") or {}).get("verdicts") or {}
    scaled_sim = (summ.get("sim_k") or 1.0) != 1.0       # the simulation of the batch's own K (--confirm)
    for job, row in summ.get("jobs", {}).items():
        b = means.get("baseline", {}).get(job, [])
        s = means.get("symphony", {}).get(job, [])
        sb, ss = _std(b), _std(s)
        base = row.get("baseline_cct_s")
        se = (math.sqrt(sb ** 2 / len(b) + ss ** 2 / len(s)) / base * 100
              if sb is not None and ss is not None and base else None)
        o = row.get("oracle") or {}
        dep = ((row.get("sim") or {}).get(DEPLOYMENT_SCALE) or {}).get("cct_change_pct")
        at_k = ((row.get("sim") or {}).get(CONFIG_SCALE) or {}).get("cct_change_pct") if scaled_sim else None
        ochange = o.get("cct_change_pct")
        out[job] = {**{k: row.get(k) for k in ("baseline_cct_s", "symphony_cct_s", "cct_change_pct", "captured",
                                               "efficiency")},
                    "oracle_baseline_cct_s": o.get("baseline_cct_s"), "oracle_change_pct": ochange,
                    "deployment_change_pct": dep, "sim_at_k_change_pct": at_k,
                    "deployment_captured": captured(dep, ochange),
                    "in_regime": (verdicts.get(job) or {}).get("in_regime"),
                    "confirmed": bool(summ.get("sim_confirmed")),
                    "regime": rg_describe(verdicts[job]) if job in verdicts else "regime unknown",
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


def _within(value, ref, points) -> bool | None:
    return None if value is None or ref is None else abs(value - ref) <= points


def targets(jobs: dict[str, dict]) -> list[dict]:
    """The targets of one scenario, each {"what", "value", "target", "met"}
    (met None: not measurable, e.g. fewer than two runs for the noise, or
    no deployment simulation)."""
    out = []

    def add(what, value, target, met, unit="%"):
        out.append({"what": what, "value": value, "target": target, "met": met, "unit": unit})
    victim = victim_of(jobs)
    for job, j in jobs.items():
        change, oracle, dep = j["cct_change_pct"], j["oracle_change_pct"], j["deployment_change_pct"]
        points = VICTIM_POINTS if job == victim else OTHERS_POINTS
        name = f"job {job}{' (victim)' if job == victim else ''}"
        add(f"{name}: change against the deployment simulation's", change,
            f"{fmt(dep, '{:+.1f}')} % +- {points:g} points", _within(change, dep, points))
        dep_captured = j["deployment_captured"]
        if job == victim and dep_captured is not None and dep_captured >= CAPTURED_MIN:
            add(f"{name}: captured (the deployment simulation: {dep_captured:.2f})", j["captured"],
                f">= {CAPTURED_MIN:.2f}", None if j["captured"] is None else j["captured"] >= CAPTURED_MIN, unit="")
        if oracle is not None and abs(oracle) < ORACLE_SMALL_PCT:
            se = j["change_se_pct"]
            add(f"job {job}: oracle {oracle:+.1f} %: change within the noise", change,
                f"|change| <= {NOISE_SE:g} SE = {fmt(None if se is None else NOISE_SE * se, '{:.1f}')} %",
                None if change is None or se is None else abs(change) <= NOISE_SE * se)
        add(f"job {job}: in the deployment's regime", None,
            j["regime"] + (f"; {SIM_CONFIRMED_NOTE}" if j["confirmed"] and not j["in_regime"] else ""),
            True if j["confirmed"] else j["in_regime"], unit="regime")
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
    scaling = summ.get("scaling") or {}
    if scaling:
        rate = f", link rates x{scaling['rate']:.4g}" if scaling.get("rate", 1.0) != 1.0 else ""
        print(f"  at K = {scaling.get('bytes'):.4g}{rate} (times in the config's units)")
    for line in summ.get("sim_verdict") or []:
        print(f"  {line}")
    rows = [("job", "runs b/s", "baseline s", "Symphony s", "change %", "noise 2SE %", "oracle %",
             "sim at K %", "deployment sim %", "captured", "sim captured", "oracle base s", "efficiency")]
    for job, j in jobs.items():
        rows.append((job, f"{j['runs_baseline']}/{j['runs_symphony']}",
                     _pm(j["baseline_cct_s"], j["run_std_baseline_s"]),
                     _pm(j["symphony_cct_s"], j["run_std_symphony_s"]),
                     fmt(j["cct_change_pct"], "{:+.1f}"),
                     fmt(None if j["change_se_pct"] is None else NOISE_SE * j["change_se_pct"], "{:.1f}"),
                     fmt(j["oracle_change_pct"], "{:+.1f}"), fmt(j.get("sim_at_k_change_pct"), "{:+.1f}"),
                     fmt(j["deployment_change_pct"], "{:+.1f}"),
                     fmt(j["captured"], "{:.2f}"), fmt(j["deployment_captured"], "{:.2f}"),
                     fmt(j["oracle_baseline_cct_s"]), fmt(j["efficiency"], "{:.2f}")))
    print(align(rows, "  "))
    print("  (mean CCT +- the std of the per-run means; noise: 2 x the change's standard error; sim at K: the "
          "simulation of the batch's own network, where --confirm chose its K)")
    for c in checks:
        verdict = {True: "met", False: "NOT MET", None: "-"}[c["met"]]
        if c["unit"] == "regime":
            print(f"  {verdict:8s} {c['what']}: {c['target']}")
            continue
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


def config_of(name: str) -> Path:
    return FAMILY / f"{name}.toml" if name in FAMILY_NAMES else CONFIGS / f"{name}.toml"


def run_scenario(config: Path, args) -> tuple[Path, int]:
    """One batch of a scenario, as `experiments run --scale ...` makes it
    (with the simulation's predictions); its stamped summary and the
    batch's exit code."""
    points = C.load_points(config, repeat=args.repeats, seed=None, sweep=False, machine=True)
    run_args = SimpleNamespace(out=args.out, target=args.target, fail_fast=False, no_report=args.no_report,
                               no_sim=False, deployment=False, coarse=1,
                               scale=None if args.scale == "none" else args.scale,
                               confirm=args.scale == "auto" and not args.no_confirm, confirm_up_to=args.confirm_up_to)
    stamp = claim(args.out, points)
    scaled, confirmations = scaled_points(run_args, points)
    code = run_points(run_args, scaled, stamp, scenarios=dict(points), confirmations=confirmations)
    return args.out / points[0][1].name / f"{stamp}-summary.json", code


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m experiments.bench.victim", description=__doc__.split("\n")[0])
    ap.add_argument("--scenario", action="append", default=[], choices=SHIPPED + FAMILY_NAMES,
                    help=f"a scenario to run (repeatable; default {DEMO})")
    ap.add_argument("--config", action="append", default=[], type=Path, metavar="PATH",
                    help="a scenario of your own, by its config's path (repeatable)")
    ap.add_argument("--all", action="store_true", help="every shipped scenario")
    ap.add_argument("--family", action="store_true", help="every scenario of the untuned family")
    ap.add_argument("--scale", default="auto", help="K, auto (default: the smallest K in regime, confirmed by the "
                    "simulation as `experiments run --confirm` does) or none")
    ap.add_argument("--no-confirm", action="store_true",
                    help="(--scale auto) run at auto's K from the regime ratios alone, without the simulation's "
                         "climb to a K that agrees with the deployment's")
    ap.add_argument("--confirm-up-to", type=float, default=None, metavar="K",
                    help="the largest K the confirmation simulates (default: 3 x --scale auto's)")
    ap.add_argument("--repeats", type=int, default=REPEATS, help=f"repeats of each variant (default {REPEATS})")
    ap.add_argument("--target", default="soft")
    ap.add_argument("--out", type=Path, default=Path("results/bench-victim"))
    ap.add_argument("--no-report", action="store_true", help="skip analysis' plots and report.md")
    ap.add_argument("--batch", action="append", default=[], type=Path, metavar="SUMMARY",
                    help="the figures of a batch already run (its <stamp>-summary.json), repeatable; runs nothing")
    ap.add_argument("--json", type=Path, help="also write the figures to this file")
    args = ap.parse_args(argv)
    if args.repeats < 1:
        ap.error("--repeats must be >= 1")
    summaries, interrupted = list(args.batch), False
    if not summaries:
        names = [*(SHIPPED if args.all else ()), *(FAMILY_NAMES if args.family else ()), *args.scenario]
        configs = [config_of(n) for n in names] + args.config or [config_of(DEMO)]
        missing = next((p for p in configs if not p.is_file()), None)
        if missing is not None:
            print(f"experiments.bench.victim: {missing}: no such config file", file=sys.stderr)
            return exits.USAGE
        if os.geteuid() != 0:
            print("experiments.bench.victim: needs root (Mininet, raw sockets): run it with sudo", file=sys.stderr)
            return exits.USAGE
        for config in configs:
            try:
                summary, code = run_scenario(config, args)
            except Refused as e:
                print(f"experiments.bench.victim: {config}: {e}", file=sys.stderr)
                return e.code
            except C.ConfigError as e:
                print(f"experiments.bench.victim: {config}: config error: {e}", file=sys.stderr)
                return exits.USAGE
            if code == exits.INTERRUPTED:       # a signal stops the bench, not only the batch it came in
                left = configs[configs.index(config) + 1:]
                print(f"experiments.bench.victim: interrupted in {config}"
                      + (f"; not run: {', '.join(str(c) for c in left)}" if left else ""), file=sys.stderr)
                interrupted = True
                break
            summaries.append(summary)
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
    return exits.INTERRUPTED if interrupted else exits.OK


if __name__ == "__main__":
    sys.exit(main())
