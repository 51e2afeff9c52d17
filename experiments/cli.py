"""python3 -m experiments run CONFIG [--target auto|bmv2|soft] [--repeat N] [--seed S]
                                  [--out DIR] [--sweep] [--fail-fast] [--no-report]
python3 -m experiments check CONFIG
python3 -m experiments net CONFIG [--cli] [--target auto|bmv2|soft] [--baseline] [--run-dir DIR]

Exit codes: 0 every run ok and every result exact; 1 an AllReduce result was
wrong; 2 bad config or arguments (one line naming the key); 3 a run failed
(deadline, crashed switch or agent); 130 interrupted.  Every command resolves
the config the same way (experiments.config), so `net` builds the network a
run would build.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from pathlib import Path

import tomli_w
from mininet.cli import CLI
from tqdm import tqdm

from experiments import config as C
from experiments import rundir as R
from experiments import summary as SU
from experiments.plan import network_plan
from experiments.runner import Runner
from experiments.signals import Signals
from experiments.supervise import REPO, RunResult
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
    run.add_argument("--repeat", type=int, default=None, metavar="N", help="repeats (overrides the config)")
    run.add_argument("--seed", type=int, default=None, metavar="S", help="seed (overrides the config)")
    run.add_argument("--out", type=Path, default=Path("results"), metavar="DIR",
                     help="results root (default: results)")
    run.add_argument("--sweep", action="store_true", help="run every point of the config's [sweep]")
    run.add_argument("--fail-fast", action="store_true", help="stop at the first run that is not ok")
    run.add_argument("--no-report", action="store_true", help="skip analysis' plots and report.md")
    check = sub.add_parser("check", help="validate a config and print it resolved")
    net = sub.add_parser("net", help="start a config's network (Ctrl-C or the CLI's exit tears it down)")
    net.add_argument("--cli", action="store_true", help="open the Mininet CLI")
    net.add_argument("--baseline", action="store_true", help="install the job flows with Symphony disabled")
    net.add_argument("--run-dir", type=Path, default=None, help="where switch logs go (default /tmp/sym-<id>)")
    for p in (run, check, net):
        p.error = ap.error
        p.add_argument("config", type=Path)
    for p in (run, net):
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
    if os.geteuid() != 0:
        return _usage(f"experiments {args.command}: needs root (Mininet and network namespaces): run it with sudo")
    try:
        resolve_target(args.target)
    except TargetError as exc:
        return _usage(f"--target {args.target}: {exc}")
    if args.command == "net":
        return net(args, points[0][1])
    return run_points(args, points)


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
                                   **{f"{v}_cct_mean_s": row.get("cct_mean_s") for v, row in summ["variants"].items()}})
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
