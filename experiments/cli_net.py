"""python3 -m experiments net CONFIG [--cli] [--target ...] [--baseline] [--run-dir DIR]:
the network a run of the config would build (the symphony variant unless
--baseline), up until Ctrl-C or the Mininet CLI's exit, then torn down."""

from __future__ import annotations

import json
import os
import signal
import sys

from mininet.cli import CLI

from contract import exits
from experiments import config as C
from experiments.cli_common import Refused, load, root_and_target
from experiments.network import build_network
from experiments.plan import network_plan
from topologies.network.testbed import NetworkError
from topologies.spec.topo import TopoError
from topologies.switch.targets import TargetError


def net(args, spec: C.ExperimentSpec) -> int:
    """Build the spec's network, print what was built, then open the Mininet
    CLI (--cli) or wait for Ctrl-C; torn down on exit, Ctrl-C or SIGTERM."""
    if args.cli:
        os.environ.setdefault("SYMPHONY_MININET_LOG", "output")   # pingall etc. print at this level
    plan = network_plan(spec, "baseline" if args.baseline else "symphony")
    try:
        with build_network(plan, target=args.target, run_dir=args.run_dir) as network:
            print(json.dumps(network.describe(), indent=1, default=str))
            for w in network.warnings:
                print(f"warning: {w}", file=sys.stderr)
            if args.cli:
                CLI(network.net)
            else:
                print("network up; Ctrl-C to tear it down", flush=True)
                signal.pause()
    except (TopoError, TargetError, NetworkError) as exc:
        raise Refused(f"experiments net: {exc}") from None
    except KeyboardInterrupt:
        pass
    return exits.OK


def main(args) -> int:
    # the network runs no agent: only the config is checked
    points = load(args, machine=False)
    root_and_target(args)
    return net(args, points[0][1])
