"""python3 -m experiments net CONFIG [--cli] [--target ...] [--baseline] [--run-dir DIR]:
the network a run of the config would build (the symphony variant unless
--baseline), up until Ctrl-C, SIGTERM or the Mininet CLI's exit, then torn
down; whatever the moment of a signal (the build included), nothing is left,
or a line names what is (experiments.cli_common.leave_nothing)."""

from __future__ import annotations

import json
import os
import signal
import sys

from mininet.cli import CLI

from contract import exits
from experiments import config as C
from experiments.cli_common import Refused, leave_nothing, load, root_and_target
from experiments.network import build_network
from experiments.plan import network_plan
from experiments.signals import Signals, signal_name, signame_of
from topologies.network.testbed import NetworkError
from topologies.spec.topo import TopoError
from topologies.switch.targets import TargetError


class Stopped(Exception):
    """SIGTERM while the Mininet CLI runs: the CLI takes KeyboardInterrupt
    for itself (it cancels the command typed), so the signal that ends it
    must be something else."""

    def __init__(self, signame: str):
        super().__init__(signame)
        self.signame = signame


def _cli_signals() -> None:
    """Ctrl-C as the Mininet CLI expects it (KeyboardInterrupt each time);
    SIGTERM ends the CLI."""
    def stop(signum, frame):
        raise Stopped(signal_name(signum))
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, stop)


def net(args, spec: C.ExperimentSpec) -> int:
    """Build the spec's network, print what was built, then open the Mininet
    CLI (--cli) or wait for Ctrl-C; torn down on exit, Ctrl-C or SIGTERM.
    Exit 0 once the network was up; a signal during the build: 130."""
    if args.cli:
        os.environ.setdefault("SYMPHONY_MININET_LOG", "output")   # pingall etc. print at this level
    plan = network_plan(spec, "baseline" if args.baseline else "symphony")
    signals = Signals()
    signals.install()
    up = False
    try:
        with build_network(plan, target=args.target, run_dir=args.run_dir) as network:
            up = True
            print(json.dumps(network.describe(), indent=1, default=str))
            for w in network.warnings:
                print(f"warning: {w}", file=sys.stderr)
            if args.cli:
                _cli_signals()
                CLI(network.net)
            else:
                print("network up; Ctrl-C to tear it down", flush=True)
                signal.pause()
    except (TopoError, TargetError, NetworkError) as exc:
        raise Refused(f"experiments net: {exc}") from None
    except (KeyboardInterrupt, Stopped) as exc:
        if not up:
            print(f"experiments net: {exits.interrupted(signame_of(exc))} while the network was being built; "
                  "torn down", file=sys.stderr)
            return exits.INTERRUPTED
    finally:
        signals.install()               # the CLI's handlers gave way: nothing cuts the last cleanup short
        with signals.shielded():
            leave_nothing()
        signals.restore()
    return exits.OK


def main(args) -> int:
    # the network runs no agent: only the config is checked
    points = load(args, machine=False)
    root_and_target(args)
    return net(args, points[0][1])
