"""python3 -m experiments run CONFIG [--target auto|bmv2|soft] [--repeat N] [--seed S]
                                  [--out DIR] [--sweep] [--rank-by-oracle] [--model-only]
                                  [--fail-fast] [--no-report]
python3 -m experiments check CONFIG
python3 -m experiments model CONFIG [--json] [--repeat N] [--seed S] [--target auto|bmv2|soft]
python3 -m experiments net CONFIG [--cli] [--target auto|bmv2|soft] [--baseline] [--run-dir DIR]

Exit codes: 0 every run ok and every result exact; 1 an AllReduce result was
wrong; 2 bad config or arguments (one line naming the key); 3 a run failed
(deadline, crashed switch or agent); 130 interrupted.  Every command resolves
the config the same way (experiments.config), so `net` builds the network a
run would build and `model` models the runs a `run` would make.  `model` and
`run --model-only` need no root.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from pathlib import Path

import tomli_w
from mininet.cli import CLI
from tqdm import tqdm

from experiments import config as C
from experiments import rundir as R
from experiments import summary as SU
from experiments.oracle import ModelError
from experiments.oracle.scenario import RepeatsPrediction, predict_repeats
from experiments.plan import network_plan, run_plan
from experiments.runner import Runner
from experiments.signals import Signals
from experiments.supervise import REPO, RunResult
from hosts.job import JobError
from topologies.network.testbed import NetworkError
from topologies.spec.topo import TopoError
from topologies.switch.targets import TARGETS, TargetError, resolve_target


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2 (argparse's own usage block is noise here)
        print(f"{self.prog}: {message}", file=sys.stderr)
        sys.exit(SU.EXIT_USAGE)


def parse_args(argv):
    ap = _Parser(prog="python3 -m experiments", description="Run Symphony experiments.")
    sub = ap.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run a config's repeats x variants")
    run.add_argument("--out", type=Path, default=Path("results"), metavar="DIR",
                     help="results root (default: results)")
    run.add_argument("--sweep", action="store_true", help="run every point of the config's [sweep]")
    run.add_argument("--rank-by-oracle", action="store_true",
                     help="rank the points by the oracle's predicted gain, print the ranking, run them in that order")
    run.add_argument("--model-only", action="store_true",
                     help="print the oracle's ranking of the points and stop (no root needed)")
    run.add_argument("--fail-fast", action="store_true", help="stop at the first run that is not ok")
    run.add_argument("--no-report", action="store_true", help="skip analysis' plots and report.md")
    check = sub.add_parser("check", help="validate a config and print it resolved")
    model = sub.add_parser("model", help="the flow-level oracle's CCT per job, baseline against Symphony")
    model.add_argument("--json", action="store_true", help="print JSON")
    net = sub.add_parser("net", help="start a config's network (Ctrl-C or the CLI's exit tears it down)")
    net.add_argument("--cli", action="store_true", help="open the Mininet CLI")
    net.add_argument("--baseline", action="store_true", help="install the job flows with Symphony disabled")
    net.add_argument("--run-dir", type=Path, default=None, help="where switch logs go (default /tmp/sym-<id>)")
    for p in (run, model):
        p.add_argument("--repeat", type=int, default=None, metavar="N", help="repeats (overrides the config)")
        p.add_argument("--seed", type=int, default=None, metavar="S", help="seed (overrides the config)")
    for p in (run, check, model, net):
        p.error = ap.error
        p.add_argument("config", type=Path)
    for p in (run, model, net):
        p.add_argument("--target", default="auto", choices=TARGETS)
    return ap.parse_args(argv)


def _points(args) -> list[tuple[str | None, C.ExperimentSpec]]:
    raw = C.load_raw(args.config)
    if getattr(args, "repeat", None) is not None:
        raw["repeats"] = args.repeat
    if getattr(args, "seed", None) is not None:
        raw["seed"] = args.seed
    if getattr(args, "sweep", False):
        return list(C.sweep_points(raw, str(args.config)))
    return [(None, C.resolve(raw, str(args.config)))]


def _usage(message: str) -> int:
    print(message, file=sys.stderr)
    return SU.EXIT_USAGE


def main(argv=None) -> int:
    args = parse_args(argv)
    try:
        points = _points(args)
    except C.ConfigError as exc:
        return _usage(f"config error: {exc}")
    if args.command == "check":
        for _, spec in points:
            print(tomli_w.dumps(spec.as_dict()), end="")
        return 0
    if getattr(args, "repeat", None) is not None and args.repeat < 1:
        return _usage("--repeat: must be >= 1")
    if args.command == "model":
        return model(args, points[0][1])
    if args.command == "run" and (args.rank_by_oracle or args.model_only):
        try:
            points = rank_points(points, args.target)
        except (ModelError, JobError, TargetError) as exc:
            return _usage(f"oracle: {exc}")
        if args.model_only:
            return 0
    if os.geteuid() != 0:
        return _usage(f"experiments {args.command}: needs root (Mininet and network namespaces): run it with sudo")
    try:
        resolve_target(args.target)
    except TargetError as exc:
        return _usage(f"--target {args.target}: {exc}")
    if args.command == "net":
        return net(args, points[0][1])
    return run_points(args, points)


# --- the oracle ----------------------------------------------------------------

def planned_schedules(spec: C.ExperimentSpec, target: str) -> tuple[dict[int, list[dict]], list[str]]:
    """Each repeat's jitter schedule as a run on `target` would apply it
    (plan.run_plan), on a kernel without sch_netem (the runner probes the
    kernel, which needs root; the model does not), and the fallback notes.
    TargetError for a target that cannot run here."""
    schedules, notes = {}, []
    for rep in range(1, spec.repeats + 1):
        plan = run_plan(spec, "baseline", rep, netem_ok=False, target=target)
        schedules[rep] = list(plan.schedule)
        notes += [n for n in plan.notes if n not in notes]
    return schedules, notes


def oracle(spec: C.ExperimentSpec, target: str = "auto") -> tuple[RepeatsPrediction, list[str]]:
    """The model on every repeat's schedule, and what it says of them
    (fallbacks taken, what it leaves out).  ModelError, JobError, TargetError."""
    schedules, notes = planned_schedules(spec, target)
    pred = predict_repeats(spec, schedules)
    return pred, notes + [f"repeat {rep}: {n}" for rep, ns in pred.notes.items() for n in ns]


def predicted_gain_pct(pred: RepeatsPrediction) -> float:
    """What the oracle says Symphony gains, the mean over jobs of minus the
    change of their mean CCT (positive: faster)."""
    return 0.0 - sum(j.cct_change_pct for j in pred.jobs.values()) / len(pred.jobs)     # 0.0 -: never -0.0


def model(args, spec: C.ExperimentSpec) -> int:
    """Per job the oracle's baseline and Symphony CCT, change and bound:
    means over iterations and over the repeats' schedules."""
    t = time.perf_counter()
    try:
        pred, notes = oracle(spec, args.target)
    except (ModelError, JobError, TargetError) as exc:
        return _usage(f"model: {exc}")
    elapsed = time.perf_counter() - t
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    if args.json:
        print(json.dumps({"experiment": spec.name, "threshold": spec.symphony.threshold, "model_time_s": elapsed,
                          "notes": notes, **pred.as_dict()}, indent=1))
        return 0
    print(f"{spec.name}: the flow-level oracle over {len(pred.repeats)} repeat(s)' jitter schedules "
          f"(seed {spec.seed}), threshold {spec.symphony.threshold}, {elapsed:.3f} s")
    rows = [("job", "ranks", "baseline CCT s", "Symphony CCT s", "change %", "bound s")]
    ranks = {j.job: j.ranks for j in spec.jobs}
    for job, p in pred.jobs.items():
        rows.append((str(job), str(ranks[job]), f"{p.baseline_cct_s:.4f}", f"{p.symphony_cct_s:.4f}",
                     f"{p.cct_change_pct:+.2f}", f"{p.bound_s:.4f}"))
    print(SU.align(rows))
    print("CCT: mean over iterations and repeats; change: (Symphony - baseline) / baseline, negative = faster; "
          "bound: 2(N-1)/N x S / B at the slowest access link")
    return 0


def rank_points(points: list[tuple[str | None, C.ExperimentSpec]],
                target: str = "auto") -> list[tuple[str | None, C.ExperimentSpec]]:
    """The points by the oracle's predicted gain, most first (stable: ties
    keep the sweep's order); prints the ranking."""
    preds = []
    for label, spec in points:
        try:
            preds.append(oracle(spec, target)[0])
        except (ModelError, JobError, TargetError) as exc:
            raise type(exc)(f"point {label}: {exc}" if label else str(exc)) from None
    order = sorted(range(len(points)), key=lambda i: -predicted_gain_pct(preds[i]))
    print("oracle ranking (predicted change of each job's mean CCT, Symphony against baseline; most gain first):")
    rows = [("#", "point", "gain %", "per job change %")]
    for n, i in enumerate(order, 1):
        label, spec = points[i]
        per_job = ", ".join(f"job {j} {p.cct_change_pct:+.2f}" for j, p in preds[i].jobs.items())
        rows.append((str(n), label or spec.name, f"{predicted_gain_pct(preds[i]):+.2f}", per_job))
    print(SU.align(rows, "  "))
    return [points[i] for i in order]


def net(args, spec: C.ExperimentSpec) -> int:
    """Build the spec's network, print what was built, then open the Mininet
    CLI (--cli) or wait for Ctrl-C; torn down on exit, Ctrl-C or SIGTERM."""
    if args.cli:
        os.environ.setdefault("SYMPHONY_MININET_LOG", "output")   # pingall etc. print at this level
    plan = network_plan(spec, "baseline" if args.baseline else "symphony")
    try:
        with plan.network(target=args.target, run_dir=args.run_dir) as network:
            print(json.dumps(network.describe(), indent=1, default=str))
            for w in network.warnings:
                print(f"warning: {w}", file=sys.stderr)
            if args.cli:
                CLI(network.net)
            else:
                print("network up; Ctrl-C to tear it down", flush=True)
                signal.pause()
    except (TopoError, TargetError, NetworkError) as exc:
        return _usage(f"experiments net: {exc}")
    except KeyboardInterrupt:
        pass
    return 0


def run_points(args, points: list[tuple[str | None, C.ExperimentSpec]]) -> int:
    signals = Signals()
    signals.install()
    stamp = R.stamp()
    versions = R.versions(REPO)
    name = points[0][1].name
    total = sum(spec.repeats * len(spec.variants) for _, spec in points)
    all_results: list[RunResult] = []
    sweep_rows = []
    bar = tqdm(total=total, desc=name, unit="run", file=sys.stderr, dynamic_ncols=True)

    def say(msg: str) -> None:
        bar.write(msg, file=sys.stderr)

    def done(res: RunResult) -> None:
        bar.update(1)
        say(f"{res.run_dir}: {res.status}" + (f" ({res.reason})" if res.reason else ""))

    try:
        for label, spec in points:
            if signals.interrupted:
                break
            exp_dir = args.out / name / label if label else args.out / name
            runner = Runner(spec, exp_dir, target=args.target, fail_fast=args.fail_fast, signals=signals,
                            stamp=stamp, versions=versions, say=say)
            runner.run_all(before=lambda rep, variant, label=label: bar.set_postfix_str(
                f"{label + ' ' if label else ''}rep {rep} {variant}"), after=done)
            all_results.extend(runner.results)
            summ = SU.finish_point(spec, runner.results, exp_dir, stamp, interrupted=signals.interrupted,
                                   hurry=signals.hurry, report=not args.no_report, say=say)
            if label:
                sweep_rows.append({"point": label, **(spec.sweep_point or {}),
                                   "cct_change_pct": summ.get("cct_change_pct"),
                                   **{f"{v}_cct_mean_s": row.get("cct_mean_s") for v, row in summ["variants"].items()},
                                   "jobs": summ.get("jobs", {})})
            if args.fail_fast and any(r.status != "ok" for r in runner.results):
                break
    finally:
        bar.close()
        signals.restore()
    if sweep_rows:
        path = args.out / name / f"{stamp}-sweep.json"
        R.write_json(path, {"experiment": name, "points": sweep_rows})
        print(f"sweep: {path}")
        for row in sweep_rows:
            print(f"  {row['point']:<30} change {SU.fmt(row['cct_change_pct'], '{:+.1f}')} %")
    code = SU.exit_code(all_results, signals.interrupted)
    if code == SU.EXIT_WRONG:
        print("some AllReduce result was wrong (see the runs' meta.json)", file=sys.stderr)
    return code
