"""The simulation against the emulation, on the same configs and seeds:

    sudo python3 -m experiments.bench.sim_validation [--config PATH ...] [--target soft --target bmv2]
                                                     [--repeat N] [--scale K|auto] [--out DIR] [--json FILE]

For each config (default: every shipped config with UDP jobs only, its
sweep left out) and each emulated target, a batch of --repeat repeats of
both variants as `experiments run` makes it; then the simulation at the
config's own rates on the same repeats' schedules (experiments.sim.predict,
cached under DIR/.sim-cache).  With --scale, both sides run the config
scaled as `experiments run --scale` scales it (auto: the K it picks, in
the deployment's regime), and the simulation is of the same K.  Per job, for the runs the batch counts
(ok, and fidelity-ok unless none is): the measured baseline CCT against the
simulation's (target: within 10 %), and the measured change Symphony makes
against the simulation's (target: within 5 points).  Figures, not a timed
test; the targets are printed beside what was measured.

With two or more repeats, per job also the change repeat by repeat, each
repeat's emulation against the simulation of the same schedule: the mean
of those paired differences and its standard error (whether the emulator
departs from the simulation, or the scenario's answer moves between
schedules more than the targets' 5 points), and the simulation's own
spread of the change between schedules.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import warnings
from pathlib import Path
from statistics import mean, stdev
from types import SimpleNamespace

from analysis.records import load_run
from analysis.report import analyse_run
from analysis.simulation import CONFIG_SCALE
from contract import exits
from experiments import config as C
from experiments.cli_common import Refused
from experiments.cli_run import run_points, scaled_points
from experiments.config.scale import Scaling
from experiments.sim.predict import SIM_CACHE, Task, run_all, summarise, tasks
from experiments.sim.run import refusal
from experiments.summary import runs_via
from experiments.supervise import RunResult

CONFIGS = Path(__file__).resolve().parents[1] / "configs"
CCT_PCT, CHANGE_POINTS = 10.0, 5.0


def shipped() -> list[Path]:
    return [p for p in sorted(CONFIGS.glob("*.toml")) if not refusal(C.load(p))]


def scaled(spec: C.ExperimentSpec, k: str | None, target: str) -> tuple[C.ExperimentSpec, Scaling | None]:
    """The config as `experiments run --scale k` runs it (k None: as it is),
    and its scaling."""
    if k is None:
        return spec, None
    args = SimpleNamespace(scale=k, deployment=False, coarse=1, confirm=False, rate=None, target=target)
    (_, point, scaling), = scaled_points(args, [(None, spec)])[0]
    return point, scaling


class Interrupted(Exception):
    """The batch was interrupted (SIGINT/SIGTERM): the bench stops with it."""


def batch(spec: C.ExperimentSpec, scaling: Scaling | None, target: str, out: Path) -> tuple[dict, list[RunResult]]:
    """One batch as `experiments run` makes it (without its own simulation);
    its summary (in the config's units) and runs."""
    args = SimpleNamespace(out=out, fail_fast=False, no_report=True, target=target, no_sim=True)
    if run_points(args, [(None, spec, scaling)]) == exits.INTERRUPTED:
        raise Interrupted
    exp = out / spec.name
    summ = json.loads((exp / "summary.json").read_text())
    results = [RunResult(exp / r["run"], r["variant"], r["repeat"], status=r["status"]) for r in summ["runs"]]
    return summ, results


def compare(spec: C.ExperimentSpec, target: str, summ: dict, sim: dict, time: float = 1.0) -> list[dict]:
    """Per job, the batch's figures against the simulation's; time: the
    scaling's time factor, which the batch's CCTs are divided by (the
    config's units) and the simulation's are not."""
    rows = []
    for job, row in summ["jobs"].items():
        s = sim["scales"][CONFIG_SCALE]["jobs"].get(job) or {}
        base, sbase = row.get("baseline_cct_s"), s.get("baseline_cct_s")
        sbase = None if sbase is None else sbase / time
        change, schange = row.get("cct_change_pct"), s.get("cct_change_pct")
        rows.append({"config": spec.name, "target": target, "job": job,
                     "baseline_cct_s": base, "sim_baseline_cct_s": sbase,
                     "baseline_diff_pct": (base - sbase) / sbase * 100 if base and sbase else None,
                     "change_pct": change, "sim_change_pct": schange,
                     "change_diff_points": change - schange if change is not None and schange is not None else None,
                     "runs_counted": {v: r["runs_ok"] for v, r in summ["variants"].items()},
                     "fidelity": {v: r.get("fidelity") for v, r in summ["variants"].items()}})
    return rows


def repeat_changes(ccts: dict[tuple[int, str], dict[str, float | None]]) -> dict[str, dict[int, float]]:
    """job -> repeat -> Symphony's change (%), from {(repeat, variant): {job: mean CCT}}."""
    out: dict[str, dict[int, float]] = {}
    for (rep, variant), jobs in ccts.items():
        if variant != "baseline":
            continue
        for job, b in jobs.items():
            s = (ccts.get((rep, "symphony")) or {}).get(job)
            if b and s is not None:
                out.setdefault(job, {})[rep] = (s - b) / b * 100
    return out


def paired(emulated: dict[int, float], simulated: dict[int, float]) -> dict:
    """The emulation's change against the simulation's on the same
    schedules: the paired differences' mean and standard error, and the
    simulation's spread between schedules (None with fewer than 2 pairs)."""
    reps = sorted(set(emulated) & set(simulated))
    d = [emulated[r] - simulated[r] for r in reps]
    two = len(d) >= 2
    return {"repeats": reps, "diff_points": d, "diff_mean_points": mean(d) if d else None,
            "diff_se_points": stdev(d) / math.sqrt(len(d)) if two else None,
            "sim_change_std_points": stdev([simulated[r] for r in reps]) if two else None}


def emulated_ccts(results: list[RunResult]) -> dict[tuple[int, str], dict[str, float | None]]:
    """{(repeat, variant): {job: mean CCT}} of the batch's ok runs."""
    out = {}
    for res in results:
        if res.status != "ok" or not res.run_dir.is_dir():
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            a = analyse_run(load_run(res.run_dir))
        out[(res.repeat, res.variant)] = {job: j["cct_mean_s"] for job, j in a["summary"]["jobs"].items()}
    return out


def simulated_ccts(todo: list[Task], done: dict[Task, dict]) -> dict[tuple[int, str], dict[str, float | None]]:
    """{(repeat, variant): {job: mean CCT}} of the simulated runs."""
    return {(t.repeat, t.variant): {job: row["cct_mean_s"] for job, row in done[t].get("jobs", {}).items()}
            for t in todo}


def met(r: dict) -> bool:
    """The row's job within both targets."""
    return (r["baseline_diff_pct"] is not None and abs(r["baseline_diff_pct"]) <= CCT_PCT
            and r["change_diff_points"] is not None and abs(r["change_diff_points"]) <= CHANGE_POINTS)


def line(r: dict) -> str:
    def f(x, fmt):
        return "-" if x is None else fmt.format(x)
    name = r["config"] + (f" K={r['scale_k']:g}" if r.get("scale_k") else "")
    return (f"{name:<24} {r['target']:<5} job {r['job']}: baseline {f(r['baseline_cct_s'], '{:.3f}')} s "
            f"(sim {f(r['sim_baseline_cct_s'], '{:.3f}')}, {f(r['baseline_diff_pct'], '{:+.1f}')} %), change "
            f"{f(r['change_pct'], '{:+.1f}')} % (sim {f(r['sim_change_pct'], '{:+.1f}')}, "
            f"{f(r['change_diff_points'], '{:+.1f}')} points)  {'ok' if met(r) else 'MISSED'}"
            + _paired_words(r.get("paired")))


def _paired_words(p: dict | None) -> str:
    if not p or p["diff_se_points"] is None:
        return ""
    return (f"; repeat by repeat ({len(p['repeats'])}): emulation - simulation {p['diff_mean_points']:+.1f} "
            f"+- {p['diff_se_points']:.1f} points (SE), the simulation's change spread {p['sim_change_std_points']:.1f}"
            " points (std) between schedules")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m experiments.bench.sim_validation",
                                 description=__doc__.split("\n")[0])
    ap.add_argument("--config", type=Path, action="append", default=None, metavar="PATH")
    ap.add_argument("--target", action="append", default=None, choices=("soft", "bmv2"))
    ap.add_argument("--repeat", type=int, default=2, metavar="N")
    ap.add_argument("--scale", default=None, metavar="K|auto",
                    help="both sides at K times the bytes (auto: the K `experiments run --scale auto` picks)")
    ap.add_argument("--out", type=Path, default=Path("results") / "sim-validation", metavar="DIR")
    ap.add_argument("--json", type=Path, default=None, metavar="FILE")
    args = ap.parse_args(argv)
    rows = []
    for path in args.config or shipped():
        raw = C.load_raw(path)
        raw["repeats"] = args.repeat
        spec = C.resolve(raw, str(path))
        for target in args.target or ["soft"]:
            out = args.out / target
            try:
                point, scaling = scaled(spec, args.scale, target)
            except Refused as exc:
                print(f"sim_validation: {path.name}: {exc}", file=sys.stderr)
                return 2
            try:
                summ, results = batch(point, scaling, target, out)
            except Interrupted:
                # a half-run batch is no comparison: the rows so far, and stop as the runner does
                print(f"sim_validation: interrupted during {path.name}; the {len(rows)} row(s) before it are kept",
                      file=sys.stderr)
                finish(rows, args.json)
                return exits.INTERRUPTED
            repeats = sorted({r.repeat for r in results})
            todo = tasks(point, repeats, runs_via(results), scales=(CONFIG_SCALE,))
            done = run_all(todo, args.out / SIM_CACHE)       # each run once: the means and each repeat's
            sim = summarise(point, todo, done)
            emu_rep = repeat_changes(emulated_ccts(results))
            sim_rep = repeat_changes(simulated_ccts(todo, done))
            k = scaling.time if scaling else None      # --scale K scales time by K, rates not at all
            for r in compare(spec, target, summ, sim, k or 1.0):
                r["scale_k"] = k
                r["paired"] = paired(emu_rep.get(r["job"], {}), sim_rep.get(r["job"], {}))
                rows.append(r)
                print(line(r), flush=True)
    finish(rows, args.json)
    return 0


def finish(rows: list[dict], out: Path | None) -> None:
    print(f"targets: each job's baseline CCT within {CCT_PCT:g} % of the simulation's, its change within "
          f"{CHANGE_POINTS:g} points; {sum(map(met, rows))} of {len(rows)} met")
    if out:
        out.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    sys.exit(main())
