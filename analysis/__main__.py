"""python3 -m analysis report RUN_DIR [RUN_DIR ...] [--out DIR] [--oracle FILE]
python3 -m analysis synth OUT_DIR   (made-up runs, to try the report without a network)"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

from analysis.records import RecordWarning
from analysis.report import write_report
from analysis.synthetic import demo_experiment


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
                     help="where plots and report.md go (default: the runs' common experiment dir)")
    rep.add_argument("--oracle", type=Path, default=None, metavar="FILE",
                     help="the oracle file to set beside the runs (default: <stamp>-oracle.json beside them)")
    syn = sub.add_parser("synth", help="write made-up baseline/symphony runs (for trying the report)")
    syn.add_argument("out_dir", type=Path)
    syn.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    _one_line_warnings()

    if args.command == "synth":
        for d in demo_experiment(args.out_dir, repeats=args.repeats):
            print(d)
        return 0

    try:
        report = write_report(args.run_dirs, args.out, args.oracle)
    except (ValueError, OSError) as exc:
        print(f"analysis: {exc}", file=sys.stderr)
        return 2
    print(f"metrics: {', '.join(str(d / 'metrics.json') for d in args.run_dirs)}")
    print(f"plots:   {report.parent / 'plots'}")
    print(f"report:  {report}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
