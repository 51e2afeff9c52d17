"""python3 -m experiments run CONFIG [--target ...] [--repeat N] [--seed S] [--out DIR]
                                  [--sweep] [--rank-by-oracle] [--model-only] [--fail-fast] [--no-report]:
every repeat x variant of the config (of each sweep point), then per point
the oracle, summary.json and the report; the exit code says the worst that
happened (contract.exits).

The batch's stamp is claimed in ``--out/<name>/`` before anything runs, by
creating its record exclusively (``<stamp>-summary.json``, a sweep's
``<stamp>-sweep.json``, "running" until the batch replaces it): two batches
started in the same second get distinct stamps and never write each other's
files, and an --out that cannot be written is refused before anything starts."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from tqdm import tqdm

from contract import exits
from experiments import config as C
from experiments import parallel as P
from experiments import rundir as R
from experiments import summary as SU
from experiments import workers as W
from experiments.cli_common import (
    NOTE,
    Refused,
    confirm_scale,
    confirm_up_to,
    leave_nothing,
    load,
    rate_arg,
    root_and_target,
    say,
)
from experiments.cli_model import MODEL_ERRORS, expected_load, rank_points
from experiments.config.budget import packet_budget
from experiments.config.machine import emulation_refusal
from experiments.config.regime import TARGET_NAMES, auto_rate, auto_scale
from experiments.config.scale import Scaling, at, deployment_scaling, rate_words, scale
from experiments.config.spec import job_specs
from experiments.plan import SIM
from experiments.runner import Runner
from experiments.signals import Signals
from experiments.sim import confirm as CF
from experiments.sim.predict import SIM_CACHE
from experiments.sim.run import refusal
from experiments.supervise import REPO, RunResult
from experiments.tables import fmt
from hosts.job import JobError
from topologies.network.links import VIA_TWIN
from topologies.switch.targets import resolve_target

Points = list[tuple[str | None, C.ExperimentSpec]]
Scaled = list[tuple[str | None, C.ExperimentSpec, Scaling | None]]


def claim(out: Path, points: Points) -> str:
    """The batch's stamp in out/<name>/; Refused when that cannot be written."""
    name = points[0][1].name
    sweep = points[0][0] is not None
    record = {"experiment": name, "status": "running", "pid": os.getpid(),
              "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
              "reason": "the batch is running: its summary replaces this record when it ends"}
    try:
        return R.claim_stamp(out / name, "-sweep.json" if sweep else "-summary.json", record)
    except OSError as exc:
        what = exc.strerror or str(exc)
        if exits.is_disk_full(exc):
            raise Refused(f"--out {out}: disk full ({what})", exits.DISK_FULL) from None
        raise Refused(f"--out {out}: cannot write there ({what}{': ' + str(exc.filename) if exc.filename else ''})"
                      ) from None


def write_sweep(path: Path, name: str, stamp: str, rows: list[dict], interrupted: bool) -> None:
    doc = {"experiment": name, "stamp": stamp, "status": "interrupted" if interrupted else "complete",
           "points": rows}
    problem = R.write_status(path, doc, {"experiment": name, "stamp": stamp, "status": "incomplete",
                                         "reason": "disk full: the sweep table could not be written"})
    if problem:
        print(f"sweep: {problem}", file=sys.stderr)
        return
    print(f"sweep: {path}")
    for row in rows:
        jobs = row.get("jobs") or {}
        change = (f"{fmt(row['cct_change_pct'], '{:+.1f}')} %" if len(jobs) <= 1 else     # several: each job's
                  ", ".join(f"job {job} {fmt(j.get('cct_change_pct'), '{:+.1f}')} %" for job, j in jobs.items()))
        print(f"  {row['point']:<30} change {change}")


def run_points(args, points: Scaled | Points, stamp: str | None = None,
               scenarios: dict[str | None, C.ExperimentSpec] | None = None,
               confirmations: dict[str | None, dict] | None = None) -> int:
    """Every run of every point (a point without its scaling runs unscaled),
    then each point's summary; the exit code.  scenarios: each point's spec
    as configured, where the points are scaled (the simulation's figures are
    of the scenario as configured); confirmations: each point's --confirm
    record, where it ran (its batch's simulation is then of the batch's K)."""
    points = [p if len(p) == 3 else (*p, None) for p in points]
    sim_cache = None if getattr(args, "no_sim", True) else args.out / SIM_CACHE
    stamp = stamp or claim(args.out, points)
    # once, where the batch writes, now that it can: --out with its symlinks followed (experiments.cli)
    print(f"{NOTE}--out {args.out}: the batch writes under {args.out / points[0][1].name}", file=sys.stderr)
    signals = Signals()
    versions = R.versions(REPO)
    name = points[0][1].name
    total = sum(spec.repeats * len(spec.variants) for _, spec, _ in points)
    all_results: list[RunResult] = []
    sweep_rows = []
    bar = tqdm(total=total, desc=name, unit="run", file=sys.stderr, dynamic_ncols=True)

    def say(msg: str) -> None:
        bar.write(msg, file=sys.stderr)

    def done(res: RunResult) -> None:
        bar.update(1)
        say(f"{res.run_dir}: {res.status}" + (f" ({res.reason})" if res.reason else ""))

    # a batch's runs on the simulation go to workers, every point's at once (experiments.parallel); one
    # worker, or --fail-fast (which must not have run the runs after a failed one), runs them here in turn
    parallel = args.target == SIM and not args.fail_fast and (W.cluster() is not None or W.local_jobs(total) > 1)
    try:
        signals.install()       # inside: a signal at once still settles the batch's record
        runners = [Runner(spec, args.out / name / label if label else args.out / name, target=args.target,
                          fail_fast=args.fail_fast, signals=signals, stamp=stamp, versions=versions, say=say,
                          scaling=scaling) for label, spec, scaling in points]
        if parallel:
            P.run_batch(runners, say, done, signals)
        in_runs = signals.interrupted       # then each point that ran is finished, as the one under way is
        for (label, spec, scaling), runner in zip(points, runners, strict=True):
            if signals.interrupted and not (parallel and in_runs):
                break
            if not parallel:
                runner.run_all(before=lambda rep, variant, label=label: bar.set_postfix_str(
                    f"{label + ' ' if label else ''}rep {rep} {variant}"), after=done)
            elif not runner.results:
                continue        # none of its runs began (the batch stopped first)
            all_results.extend(runner.results)
            for line in R.mark_lost(runner.results):     # a run whose directory has gone is not ok
                say(line)
            summ = SU.finish_point(spec, runner.results, runner.exp_dir, stamp, signals=signals,
                                   report=not args.no_report, say=say, scaling=scaling, sim_cache=sim_cache,
                                   scenario=(scenarios or {}).get(label),
                                   confirmation=(confirmations or {}).get(label), simulated=args.target == SIM)
            if label:
                sweep_rows.append({"point": label, **(spec.sweep_point or {}),
                                   "cct_change_pct": summ.get("cct_change_pct"),
                                   **{f"{v}_cct_mean_s": row.get("cct_mean_s") for v, row in summ["variants"].items()},
                                   "jobs": summ.get("jobs", {})})
            if runner.stopped and not parallel:
                break
    except BaseException:       # an interrupt between two phases: the batch's record does not stay "running"
        R.settle_claim(args.out / name, stamp, "-sweep.json" if points[0][0] is not None else "-summary.json",
                       "interrupted")
        raise
    finally:
        bar.close()
        with signals.shielded():        # signals held by a teardown are counted here, none cuts it short
            leave_nothing()
        signals.restore()
    if points[0][0] is not None:
        write_sweep(args.out / name / f"{stamp}-sweep.json", name, stamp, sweep_rows, signals.interrupted)
    code = SU.exit_code(all_results, signals.interrupted)
    if code != exits.OK:
        what = exits.interrupted(signals.names) if code == exits.INTERRUPTED else exits.MEANINGS[code]
        print(f"experiments run: {what} (see the runs' meta.json)", file=sys.stderr)
    return code


def scaled_points(args, points: Points) -> tuple[Scaled, dict[str | None, dict]]:
    """Each point with the scaling the arguments ask for (--scale,
    --deployment, --coarse; --confirm: the K the simulation confirms), its
    job files checked; and per point its confirmation's record, where
    --confirm ran.  Refused (one line)."""
    if args.deployment and args.target != SIM:
        raise Refused("--deployment: the deployment's scale runs on the simulation only (--target sim)")
    if args.deployment and args.scale is not None:
        raise Refused("--scale and --deployment: give one (--deployment sets the scale itself)")
    if args.coarse != 1 and not args.deployment:
        raise Refused("--coarse: only with --deployment (coarse packets are the deployment simulation's option)")
    up_to = confirm_up_to(args)
    if getattr(args, "confirm", False) and args.scale != "auto":
        raise Refused("--confirm: only with --scale auto (it climbs from auto's K)")
    if getattr(args, "rate", None) is not None and args.deployment:
        raise Refused("--rate and --deployment: give one (--deployment sets the rates itself)")
    out, confirmations = [], {}
    for label, spec in points:
        try:
            rate = _rate(args, label, spec)
            if args.deployment:
                sc = deployment_scaling(spec, args.coarse)
            elif args.scale == "auto":
                sc = _auto(args, label, spec, up_to, confirmations, rate)
            elif args.scale is not None or rate != 1.0:
                sc = at(_factor(args.scale) if args.scale is not None else 1.0, rate)
            else:
                out.append((label, spec, None))
                continue
            scaled = scale(spec, sc)
            job_specs(scaled, {})
        except (ValueError, JobError) as exc:
            what = "--deployment" if args.deployment else f"--scale {args.scale}" if args.scale else "--rate"
            raise Refused(f"{what}: {exc}") from None
        out.append((label, scaled, sc))
    return out, confirmations


def _rate(args, label: str | None, spec: C.ExperimentSpec) -> float:
    """--rate's factor (1 without it); for 'auto' the target's (said on stderr)."""
    text = getattr(args, "rate", None)
    if text is None:
        return 1.0
    if text != "auto":
        return rate_arg(text)
    if args.target == SIM:
        say("--rate auto: 1 on the simulation, which has no packet budget to keep within")
        return 1.0
    target = resolve_target(args.target)
    k = 1.0 if args.scale is None else auto_scale(spec).k if args.scale == "auto" else _factor(args.scale)
    try:
        pps = expected_load(scale(spec, at(k)))[1]
    except MODEL_ERRORS as exc:
        raise Refused(f"--rate auto: the oracle cannot estimate the agents' packets/s ({exc}); give a rate") from None
    budget = packet_budget(target)
    rate = auto_rate(pps, budget)
    where = f"{label}: " if label else ""
    say(f"{where}--rate auto: {rate_words(rate)} of the config's link rates, "
        + (f"the fastest at which its agents stay within {TARGET_NAMES[target]}'s {budget:,} data packets/s on this "
           f"machine (about {pps * rate:,.0f}, from {pps:,.0f} at its own rates)" if pps * rate <= budget else
           f"the slowest tried, and its agents still send about {pps * rate:,.0f} data packets/s, over "
           f"{TARGET_NAMES[target]}'s {budget:,}"))
    return rate


def _auto(args, label: str | None, spec: C.ExperimentSpec, up_to: float | None,
          confirmations: dict[str | None, dict], rate: float = 1.0) -> Scaling:
    """--scale auto's K at --rate rate, or with --confirm the K the
    simulation confirms (its record into confirmations[label])."""
    auto = auto_scale(spec, rate)
    say(auto.describe())
    if not getattr(args, "confirm", False):
        return at(auto.k, rate)
    confirmed = confirm_scale(spec, auto.k, up_to, args.out, VIA_TWIN, rate)
    if confirmed is None or confirmed[0].chosen is None:
        say(f"--confirm: nothing confirmed{f' ({CF.describe(*confirmed)})' if confirmed else ''}: the batch runs "
            f"at --scale auto's K = {auto.k:g}")
        return at(auto.k, rate)
    c, top = confirmed
    say(f"--confirm: {CF.describe_choice(c, top)}")
    confirmations[label] = c.as_dict(top)
    return at(c.chosen.k, rate)


def over_budget(scaled: Scaled, target: str) -> list[str]:
    """A line per point whose agents would send more data packets/s than the
    target carries on this machine: its runs would be fidelity-degraded
    (the budgets: experiments/README.md, "Fidelity at scale")."""
    budget, lines = packet_budget(target), []
    for label, spec, _ in scaled:
        try:
            pps = expected_load(spec)[1]
        except MODEL_ERRORS:
            continue            # the oracle cannot say; the fidelity monitors will
        if pps > budget:
            lines.append(f"{label + ': ' if label else ''}its agents send about {pps:,.0f} data packets/s, over "
                         f"{TARGET_NAMES[target]}'s {budget:,} on this machine, so expect fidelity-degraded runs; "
                         "run it at lower link rates (--rate auto picks them; "
                         "experiments/README.md, \"Fidelity at scale\")")
    return lines


def _factor(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"expected a number or 'auto', got {text!r}") from None


def main(args) -> int:
    # --deployment runs carry no data and run at another scale: what the
    # config's own runs would ask of this machine (the agents' memory,
    # deadlines they are sure to miss) is not what these runs ask
    points = load(args, machine=not (args.target == SIM and args.deployment))
    if args.rank_by_oracle or args.model_only:
        try:
            points = rank_points(points, args.target)
        except MODEL_ERRORS as exc:
            raise Refused(f"oracle: {exc}") from None
        if args.model_only:
            return exits.OK
    if args.target == SIM:          # the simulation needs neither root nor a switch target
        for _, spec in points:
            why = refusal(spec)
            if why:
                raise Refused(why)
    else:
        for _, spec in points:
            why = emulation_refusal(spec)
            if why:
                raise Refused(f"config error: {why}")
        target = root_and_target(args)
    scaled, confirmations = scaled_points(args, points)
    if args.target != SIM:
        for line in over_budget(scaled, target):
            print(f"warning: {line}", file=sys.stderr, flush=True)
    return run_points(args, scaled, scenarios=dict(points), confirmations=confirmations)
