"""`python3 -m topologies CONFIG [--cli] [--target auto|bmv2|soft]`

Builds the network of CONFIG's [topology] table (and places its [[jobs]],
with its [ecn] and [symphony] tables for the control plane), prints what it
built, then opens the Mininet CLI (--cli) or waits for Ctrl-C.  The network
is torn down on exit, Ctrl-C or SIGTERM.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import tomllib


class ConfigFileError(ValueError):
    pass


def load(path: str) -> dict:
    try:
        with open(path, "rb") as f:
            cfg = tomllib.load(f)
    except FileNotFoundError:
        raise ConfigFileError(f"no such config file: {path}")
    except tomllib.TOMLDecodeError as exc:
        raise ConfigFileError(f"{path}: bad TOML: {exc}")
    if "topology" not in cfg:
        raise ConfigFileError(f"{path}: missing [topology] table")
    return cfg


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m topologies", description="start a testbed network")
    ap.add_argument("config", help="TOML file with a [topology] table (and optional [[jobs]], [ecn], [symphony])")
    ap.add_argument("--cli", action="store_true", help="open the Mininet CLI")
    ap.add_argument("--target", default="auto", help="auto | bmv2 | soft")
    ap.add_argument("--baseline", action="store_true", help="install the job flows with Symphony disabled")
    ap.add_argument("--run-dir", default=None, help="where switch logs and sockets go (default /tmp/sym-<id>)")
    args = ap.parse_args(argv)
    try:
        cfg = load(args.config)
    except ConfigFileError as exc:
        print(f"topologies: {exc}", file=sys.stderr)
        return 2
    if args.cli:
        os.environ.setdefault("SYMPHONY_MININET_LOG", "output")   # pingall etc. print at this level

    from topologies.network.testbed import NetworkError, TestbedNetwork
    from topologies.spec.topo import TopoError
    from topologies.switch.targets import TargetError
    jobs = [{k: v for k, v in j.items() if k in ("ranks", "hosts", "placement", "job", "data_port")}
            for j in cfg.get("jobs", [])]
    symphony = {k: v for k, v in cfg.get("symphony", {}).items() if k in ("threshold", "k_sym", "p_sym")}
    symphony["enabled"] = not args.baseline
    try:
        net = TestbedNetwork(cfg["topology"], jobs, target=args.target, run_dir=args.run_dir,
                             symphony=symphony, ecn=cfg.get("ecn"))
        with net:
            print(json.dumps(net.describe(), indent=1))
            for w in net.warnings:
                print(f"warning: {w}", file=sys.stderr)
            if args.cli:
                from mininet.cli import CLI
                CLI(net.net)
            else:
                print("network up; Ctrl-C to tear it down", flush=True)
                signal.pause()
    except (TopoError, TargetError, NetworkError) as exc:
        print(f"topologies: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
