"""python3 -m experiments run CONFIG [--target auto|bmv2|soft|sim] [--repeat N] [--seed S]
                                  [--out DIR] [--sweep] [--rank-by-oracle] [--model-only]
                                  [--fail-fast] [--no-report] [--no-sim] [--jobs N | --workers ADDRESS]
                                  [--scale K|auto [--confirm [--confirm-up-to K]]] [--rate R|auto]
                                  [--deployment [--coarse C]]
python3 -m experiments check CONFIG [--sweep] [--rate R|auto] [--confirm [--confirm-up-to K] [--out DIR]]
                                    [--jobs N | --workers ADDRESS]
python3 -m experiments model CONFIG [--json] [--no-sim] [--coarse C] [--repeat N] [--seed S] [--target auto|bmv2|soft]
                                    [--jobs N | --workers ADDRESS]
python3 -m experiments net CONFIG [--cli] [--target auto|bmv2|soft] [--baseline] [--run-dir DIR]

Exit codes (contract.exits; experiments/README.md, "Exit codes"): 0 every
run ok and every result exact; 1 an AllReduce result was wrong; 2 bad
config, arguments or paths (one line naming the key or path); 3 a run failed
(deadline, crashed switch or agent); 4 disk full (records could not be
written); 130 interrupted.  Every command resolves the config the same way
(experiments.config.load_points), so `check` refuses what `run` would,
`net` builds the network a run would build and `model` models the runs a
`run` would make.  `check`, `model` and `run --model-only` need no root.

The parser is here; each command lives in a module of its own,
experiments/cli_<command>.py, imported (importlib) only once the command is
known: `model` and `check` would otherwise pay for importing Mininet,
matplotlib and the runner, most of a second, for a prediction that takes
a tenth of that.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

from contract import exits
from experiments import workers as W
from experiments.cli_common import Refused, own_dir
from experiments.config.scale import MAX_COARSE
from experiments.plan import TARGETS
from experiments.signals import signame_of
from experiments.sim.predict import PREDICTION_COARSE
from topologies.switch.targets import TARGETS as SWITCH_TARGETS

COMMANDS = ("run", "check", "model", "net")
# the directories a command writes under, resolved once (every symlink followed) and never a system's own
DIRECTORIES = (("out", "--out"), ("run_dir", "--run-dir"))


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2 (argparse's own usage block is noise here)
        print(f"{self.prog}: {message}", file=sys.stderr)
        sys.exit(exits.USAGE)


def _option_type(convert, ok, what: str):
    """An option's type: `convert` the text, refused in one line unless
    `ok` (what it must be is `what`, for the error)."""
    def parse(text: str):
        try:
            value = convert(text)
        except ValueError:
            value = None
        if value is None or not ok(value):
            raise argparse.ArgumentTypeError(f"give {what}, got {text}")
        return value
    return parse


# --coarse, for `run` and `model` alike: packets simulated as one
_coarse = _option_type(int, lambda c: 1 <= c <= MAX_COARSE,
                       f"an integer in 1..{MAX_COARSE} (packets simulated as one)")


def at_least_one(what: str):
    """An option's type: a whole number, 1 or more (`what` it counts)."""
    return _option_type(int, lambda n: n >= 1, f"{what}, 1 or more")


def positive_seconds(what: str):
    """An option's type: a number of seconds above 0 (`what` they are)."""
    return _option_type(float, lambda s: 0 < s < float("inf"), f"{what}, a number of seconds above 0")


# --jobs
worker_count = at_least_one("a number of worker processes (1: this process)")


def parse_args(argv):
    ap = _Parser(prog="python3 -m experiments", description="Run Symphony experiments.")
    sub = ap.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run a config's repeats x variants")
    run.add_argument("--out", type=Path, default=Path("results"), metavar="DIR",
                     help="results root (default: results)")
    run.add_argument("--rank-by-oracle", action="store_true",
                     help="rank the points by the oracle's predicted gain, print the ranking, run them in that order")
    run.add_argument("--model-only", action="store_true",
                     help="print the oracle's ranking of the points and stop (no root needed)")
    run.add_argument("--fail-fast", action="store_true", help="stop at the first run that is not ok")
    run.add_argument("--no-report", action="store_true", help="skip analysis' plots and report.md")
    run.add_argument("--scale", default=None, metavar="K",
                     help="run the scenario with K times its bytes and durations (same network): steps K times "
                          "as many RTTs long; times are reported in the config's own units (divided by K); "
                          "'auto': the smallest K predicted to put every job in the deployment's regime")
    run.add_argument("--deployment", action="store_true",
                     help="(--target sim) run the scenario as the declared deployment would: its line rate, "
                          "step, link delays, ECN, DCQCN and packets (docs/design.md, \"Scaling\")")
    run.add_argument("--no-sim", action="store_true",
                     help="skip the simulation's figures beside the oracle (at the config's rates and the "
                          "deployment's scale; cached under --out, so a second batch of a scenario costs nothing)")
    run.add_argument("--coarse", type=_coarse, default=1, metavar="C",
                     help="(--deployment) simulate C of the deployment's packets as one (speed; its error "
                          "against finer packets is in experiments/README.md)")
    check = sub.add_parser("check", help="validate a config as `run` would and print it resolved")
    check.add_argument("--confirm", action="store_true",
                       help="simulate the scenario at --scale auto's K, and at larger K up to --confirm-up-to, "
                            "against the deployment's scale, and say the first K whose answer agrees within 5 "
                            "points (minutes: one simulated run per variant and K, on repeat 1's schedule)")
    run.add_argument("--confirm", action="store_true",
                     help="(--scale auto) before the runs, climb from auto's K as `check --confirm` does and run "
                          "at the first K whose simulated network agrees with the deployment's within 5 points "
                          "(else the closest); the batch's simulation is then of that K, not of K = 1")
    for p in (run, check):
        p.add_argument("--rate", default=None, metavar="R",
                       help="the scenario on links R times as fast, its durations 1/R times as long (the same "
                            "scenario in units of its step, R times the packets per second), e.g. 1/3 to keep it "
                            "within what BMv2 carries on this machine; with --scale K, K times the bytes on those "
                            "links; 'auto'" + (": the fastest of 1, 1/2, 1/3, ... at which the agents stay within the "
                                              "target's packet budget" if p is run else
                                              ": the config's rates, and what `run --rate auto` picks for each "
                                              "target whose budget they pass"))
    for p in (run, check):
        p.add_argument("--confirm-up-to", type=float, default=None, metavar="K",
                       help="(--confirm) the largest K to simulate (default: 3 x --scale auto's)")
    model = sub.add_parser("model", help="the flow-level oracle's CCT per job, baseline against Symphony")
    model.add_argument("--json", action="store_true", help="print JSON")
    model.add_argument("--no-sim", action="store_true",
                       help="the oracle only, without the simulation at the config's rates and the deployment's")
    model.add_argument("--coarse", type=_coarse, default=PREDICTION_COARSE, metavar="C",
                       help=f"the deployment's simulation with C of its packets as one (default {PREDICTION_COARSE}, "
                            "a batch's: full packets; C > 1 is faster and can differ by a few points: "
                            "experiments.bench.sim_coarse measures by how much)")
    for p in (model, check):
        p.add_argument("--out", type=Path, default=Path("results"), metavar="DIR",
                       help="results root whose .sim-cache holds the simulation's figures (default: results)")
    net = sub.add_parser("net", help="start a config's network (Ctrl-C or the CLI's exit tears it down)")
    net.add_argument("--cli", action="store_true", help="open the Mininet CLI")
    net.add_argument("--baseline", action="store_true", help="install the job flows with Symphony disabled")
    net.add_argument("--run-dir", type=Path, default=None, help="where switch logs go (default /tmp/sym-<id>)")
    for p in (run, check):
        p.add_argument("--sweep", action="store_true", help="every point of the config's [sweep]")
    for p in (run, model):
        p.add_argument("--repeat", type=int, default=None, metavar="N", help="repeats (overrides the config)")
        p.add_argument("--seed", type=int, default=None, metavar="S", help="seed (overrides the config)")
    for p in (run, check, model, net):
        p.error = ap.error
        p.add_argument("config", type=Path)
    for p in (run, check, model):
        how = p.add_mutually_exclusive_group()
        how.add_argument("--jobs", type=worker_count, default=None, metavar="N",
                         help="simulated runs (a batch's on --target sim, its prediction's, --confirm's) on N "
                              "worker processes (default: one per core; 1: one after another in this process)")
        how.add_argument("--workers", default=None, metavar="ADDRESS",
                         help="simulated runs on the workers of the Dask scheduler at ADDRESS (tcp://HOST:PORT; "
                              "docs/cli.md, \"Every core, and more than one machine\")")
    for p in (run, model):
        p.add_argument("--target", default="auto", choices=TARGETS)
    net.add_argument("--target", default="auto", choices=SWITCH_TARGETS)
    return ap.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    try:
        # inside the try: a signal while the command's module (Mininet, the runner) is imported
        command = importlib.import_module(f"experiments.cli_{args.command}")
        for name, flag in DIRECTORIES:
            if getattr(args, name, None) is not None:
                setattr(args, name, own_dir(getattr(args, name), flag))
        with W.using(getattr(args, "jobs", None), getattr(args, "workers", None)):
            return command.main(args)
    except Refused as exc:
        print(exits.one_line(exc), file=sys.stderr)
        return exc.code
    except KeyboardInterrupt as exc:       # a signal outside a run (a run handles its own: experiments.signals)
        print(f"experiments {args.command}: {exits.interrupted(signame_of(exc))}", file=sys.stderr)
        return exits.INTERRUPTED
