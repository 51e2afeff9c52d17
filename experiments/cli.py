"""python3 -m experiments run CONFIG [--target auto|bmv2|soft] [--repeat N] [--seed S]
                                  [--out DIR] [--sweep] [--fail-fast] [--no-report]

Exit codes: 0 every run ok and every result exact; 1 an AllReduce result was
wrong; 2 bad config or arguments (one line naming the key); 3 a run failed
(deadline, crashed switch or agent); 130 interrupted.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from experiments import config as C
from experiments import rundir as R
from experiments import runner as RN

TARGETS = ("auto", "bmv2", "soft")


class UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2 (argparse's own usage block is noise here)
        print(f"{self.prog}: {message}", file=sys.stderr)
        sys.exit(RN.EXIT_USAGE)


def parse_args(argv):
    ap = _Parser(prog="python3 -m experiments", description="Run Symphony experiments.")
    sub = ap.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run a config's repeats x variants")
    run.error = ap.error
    run.add_argument("config", type=Path)
    run.add_argument("--target", default="auto", choices=TARGETS)
    run.add_argument("--repeat", type=int, default=None, metavar="N", help="repeats (overrides the config)")
    run.add_argument("--seed", type=int, default=None, metavar="S", help="seed (overrides the config)")
    run.add_argument("--out", type=Path, default=Path("results"), metavar="DIR",
                     help="results root (default: results)")
    run.add_argument("--sweep", action="store_true", help="run every point of the config's [sweep]")
    run.add_argument("--fail-fast", action="store_true", help="stop at the first run that is not ok")
    run.add_argument("--no-report", action="store_true", help="skip analysis' plots and report.md")
    check = sub.add_parser("check", help="validate a config and print it resolved")
    check.error = ap.error
    check.add_argument("config", type=Path)
    return ap.parse_args(argv)


def _points(args) -> list[tuple[str | None, dict]]:
    raw = C.load_raw(args.config)
    if getattr(args, "repeat", None) is not None:
        raw["repeats"] = args.repeat
    if getattr(args, "seed", None) is not None:
        raw["seed"] = args.seed
    if getattr(args, "sweep", False):
        return [(label, cfg) for label, cfg in C.sweep_points(raw, str(args.config))]
    return [(None, C.resolve(raw, str(args.config)))]


def _target_check(target: str) -> None:
    from topologies.switch.targets import TargetError, resolve_target  # noqa: PLC0415
    try:
        resolve_target(target)
    except TargetError as exc:
        raise UsageError(str(exc)) from None


def main(argv=None) -> int:
    args = parse_args(argv)
    try:
        points = _points(args)
    except C.ConfigError as exc:
        print(f"config error: {exc}", file=sys.stderr)
        return RN.EXIT_USAGE
    if args.command == "check":
        from experiments.tomlout import dumps  # noqa: PLC0415
        for label, cfg in points:
            print(dumps({k: v for k, v in cfg.items() if k != "sweep"}), end="")
        return 0
    if args.repeat is not None and args.repeat < 1:
        print("--repeat: must be >= 1", file=sys.stderr)
        return RN.EXIT_USAGE
    if not RN.os_is_root():
        print("experiments run: needs root (Mininet and network namespaces): run it with sudo", file=sys.stderr)
        return RN.EXIT_USAGE
    try:
        _target_check(args.target)
    except UsageError as exc:
        print(f"--target {args.target}: {exc}", file=sys.stderr)
        return RN.EXIT_USAGE
    return run_points(args, points)


def run_points(args, points) -> int:
    from tqdm import tqdm  # noqa: PLC0415

    signals = RN.Signals()
    signals.install()
    stamp = R.stamp()
    versions = R.versions(RN.REPO)
    name = points[0][1]["name"]
    total = sum(cfg["repeats"] * len(cfg["variants"]) for _, cfg in points)
    all_results: list[RN.RunResult] = []
    sweep_rows = []
    reports = []
    bar = tqdm(total=total, desc=name, unit="run", file=sys.stderr, dynamic_ncols=True)

    def say(msg: str) -> None:
        bar.write(msg, file=sys.stderr)

    try:
        for label, cfg in points:
            if signals.interrupted:
                break
            exp_dir = args.out / name / label if label else args.out / name
            runner = RN.Runner(cfg, exp_dir, target=args.target, fail_fast=args.fail_fast, signals=signals,
                               stamp=stamp, versions=versions, say=say)
            try:
                for rep, variant in runner.runs():
                    if signals.interrupted:
                        break
                    bar.set_postfix_str(f"{label + ' ' if label else ''}rep {rep} {variant}")
                    res = runner.run_one(variant, rep)
                    runner.results.append(res)
                    bar.update(1)
                    say(_run_line(res))
                    if signals.interrupted or (args.fail_fast and res.status != "ok"):
                        break
            except KeyboardInterrupt:
                signals.count = max(signals.count, 1)     # between runs: nothing to tear down
            all_results.extend(runner.results)
            summ, report = _finish_point(runner, exp_dir, stamp, args, signals, say)
            reports.append(report)
            if label:
                sweep_rows.append({"point": label, **(cfg.get("sweep_point") or {}),
                                   "cct_change_pct": summ.get("cct_change_pct"),
                                   **{f"{v}_cct_mean_s": row.get("cct_mean_s") for v, row in summ["variants"].items()}})
            if args.fail_fast and any(r.status != "ok" for r in runner.results):
                break
    finally:
        bar.close()
        signals.restore()
    if sweep_rows:
        R.write_json(args.out / name / f"{stamp}-sweep.json", {"experiment": name, "points": sweep_rows})
        print(f"sweep: {args.out / name / f'{stamp}-sweep.json'}")
        for row in sweep_rows:
            print(f"  {row['point']:<30} change {RN._f(row['cct_change_pct'], '{:+.1f}')} %")
    code = RN.exit_code(all_results, signals.interrupted)
    if code == RN.EXIT_WRONG:
        print("some AllReduce result was wrong (see the runs' meta.json)", file=sys.stderr)
    return code


def _run_line(res: RN.RunResult) -> str:
    line = f"{res.run_dir}: {res.status}"
    if res.reason:
        line += f" ({res.reason})"
    return line


def _finish_point(runner: RN.Runner, exp_dir: Path, stamp: str, args, signals: RN.Signals, say):
    results = runner.results
    analysed = []
    if signals.hurry:
        analysed = [None] * len(results)      # second Ctrl-C: the run list only, no analysis
    else:
        try:
            analysed = RN.analyse(results)
        except Exception as exc:
            say(f"analysis of the runs failed: {type(exc).__name__}: {exc}")
            analysed = [None] * len(results)
    if analysed and all(a is not None for a in analysed):
        summ = RN.summary(runner.cfg, results, analysed, signals.interrupted)
    else:
        summ = RN.summary(runner.cfg, results, [], signals.interrupted)
        summ["runs"] = [{"run": r.run_dir.name, "variant": r.variant, "repeat": r.repeat, "status": r.status,
                         "reason": r.reason, "wrong_result": r.wrong} for r in results]
    summ["stamp"] = stamp
    exp_dir.mkdir(parents=True, exist_ok=True)
    R.write_json(exp_dir / f"{stamp}-summary.json", summ)
    R.write_json(exp_dir / "summary.json", summ)
    print(f"\n{runner.cfg['name']}{' ' + str(runner.cfg.get('sweep_point')) if runner.cfg.get('sweep_point') else ''}"
          f": {len(results)} run(s), target {_targets(results)}")
    if summ["variants"]:
        print(RN.table(summ))
    for v, row in summ["variants"].items():
        if row.get("cct_mean_s") is not None:
            spread = row.get("cct_std_s")
            excluded = row["runs"] - row["runs_ok"]
            print(f"  {v}: mean CCT {row['cct_mean_s']:.3f} s +- {spread or 0:.3f} s"
                  f" over {row['cct_n']} iteration(s) of {row['runs_ok']} run(s)"
                  + (f"; {excluded} run(s) not ok, left out" if excluded else ""))
    if summ.get("cct_change_pct") is not None:
        print(f"  Symphony against baseline: {summ['cct_change_pct']:+.1f} % mean CCT "
              f"({'faster' if summ['cct_change_pct'] < 0 else 'slower'})")
    print(f"summary: {exp_dir / 'summary.json'}")
    report = None
    ok_dirs = [r.run_dir for r in results if r.status in ("ok", "failed")]
    if signals.interrupted:
        print("interrupted: no report; make one with: python3 -m analysis report "
              + " ".join(str(d) for d in ok_dirs[:4]) + (" ..." if len(ok_dirs) > 4 else ""))
    elif not args.no_report and ok_dirs:
        try:
            import warnings  # noqa: PLC0415

            from analysis.report import write_report  # noqa: PLC0415
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                report = write_report(ok_dirs, exp_dir / f"{stamp}-report")
            print(f"report:  {report}")
        except Exception as exc:
            say(f"report failed: {type(exc).__name__}: {exc}")
    return summ, report


def _targets(results) -> str:
    import json  # noqa: PLC0415
    seen = set()
    for r in results:
        try:
            seen.add(json.loads((r.run_dir / "meta.json").read_text()).get("target"))
        except (OSError, ValueError):
            pass
    return ",".join(sorted(str(t) for t in seen)) or "-"
