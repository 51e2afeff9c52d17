"""python3 -m analysis report RUN_DIR [RUN_DIR ...] [--out DIR] [--oracle FILE]
python3 -m analysis synth OUT_DIR   (made-up runs, to try the report without a network)
python3 -m analysis rates RUN_DIR [RUN_DIR ...] [--window S] [--windows N]
    (per job and time window: its busy senders' DCQCN rates, CNPs, steps ended;
    then how long CNPs took from receiver to sender)

Exit codes (contract.exits): 0 the report was written (the runs it counts as
ok are in it); 2 a path that is not a run directory, runs in different
directories without --out, an --out that cannot be written; 4 disk full;
130 interrupted (no report left half made).  Each failure is one line."""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

from analysis.records import RecordWarning, load_run
from analysis.report import write_report
from analysis.synthetic import demo_experiment
from analysis.trace import rate_table
from contract import exits
from contract.files import refusal_of_dir


def _one_line_warnings() -> None:
    def show(message, category, filename, lineno, file=None, line=None):
        print(f"warning: {message}", file=sys.stderr)

    warnings.showwarning = show
    warnings.simplefilter("always", RecordWarning)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m analysis", description="Analyse run directories.")
    sub = parser.add_subparsers(dest="command", required=True)
    rep = sub.add_parser("report", help="metrics.json per run, plots and report.md")
    rep.add_argument("run_dirs", nargs="+", type=Path, metavar="RUN_DIR")
    rep.add_argument("--out", type=Path, default=None,
                     help="where plots and report.md go (default: the run dir of a single run, the experiment "
                          "dir of runs that share one; runs in different directories need --out)")
    rep.add_argument("--oracle", type=Path, default=None, metavar="FILE",
                     help="the oracle file to set beside the runs (default: <stamp>-oracle.json beside them)")
    syn = sub.add_parser("synth", help="write made-up baseline/symphony runs (for trying the report)")
    syn.add_argument("out_dir", type=Path)
    syn.add_argument("--repeats", type=int, default=3)
    rates = sub.add_parser("rates", help="per job and time window: busy senders' DCQCN rates, CNPs, steps ended")
    rates.add_argument("run_dirs", nargs="+", type=Path, metavar="RUN_DIR")
    rates.add_argument("--window", type=float, default=0.25, metavar="S",
                       help="window length in the config's seconds (a scaled run's clock divided by its K)")
    rates.add_argument("--windows", type=int, default=40, metavar="N", help="how many windows from the run's start")
    args = parser.parse_args(argv)
    _one_line_warnings()

    if args.command == "rates":
        return _rates(args)
    if args.command == "synth":
        for d in demo_experiment(args.out_dir, repeats=args.repeats):
            print(d)
        return exits.OK

    why = refusal_of_dir(args.out) if args.out is not None else None
    if why is not None:             # a system directory, named or through a symlink (contract.files)
        print(f"analysis: --out {args.out}: {why}", file=sys.stderr)
        return exits.USAGE
    try:
        report = write_report(args.run_dirs, args.out, args.oracle)
    except ValueError as exc:
        print(f"analysis: {exc}", file=sys.stderr)
        return exits.USAGE
    except OSError as exc:
        where = f" ({exc.filename})" if exc.filename else ""
        print(f"analysis: cannot write the report{where}: {exc.strerror or exc}", file=sys.stderr)
        return exits.DISK_FULL if exits.is_disk_full(exc) else exits.USAGE
    except KeyboardInterrupt:
        print("analysis: interrupted; no report written", file=sys.stderr)
        return exits.INTERRUPTED
    print(f"metrics: {', '.join(str(d / 'metrics.json') for d in args.run_dirs)}")
    print(f"plots:   {report.parent / 'plots'}")
    print(f"report:  {report}")
    return exits.OK


def _rates(args) -> int:
    if args.window <= 0 or args.windows < 1:
        print("analysis: --window must be > 0 and --windows >= 1", file=sys.stderr)
        return exits.USAGE
    for d in args.run_dirs:
        if not (d / "agents").is_dir():
            print(f"analysis: {d}: not a run directory (no agents/)", file=sys.stderr)
            return exits.USAGE
    for d in args.run_dirs:
        print(rate_table(load_run(d), args.window, args.windows), end="\n\n")
    return exits.OK


if __name__ == "__main__":
    sys.exit(main())
