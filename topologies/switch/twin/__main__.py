"""python3 -m topologies.switch.twin --name s1 --port 1=IFNAME --port 2=IFNAME --control SOCKPATH
[--queue-depth 64] [--seed 0] [--dump PATH]

One software switch: raw sockets on the given root-namespace interfaces,
control on a Unix socket (topologies.switch.twin.client.TwinClient).  Exits 0 on
SIGTERM/SIGINT (after writing --dump if given), 2 on bad arguments or a
start-up failure, with a one-line message."""

from __future__ import annotations

import argparse
import json
import os
import sys

from contract.files import write_atomic
from topologies.network.names import IFNAMSIZ
from topologies.switch.twin.queues import DEFAULT_DEPTH
from topologies.switch.twin.sockets import SwitchError
from topologies.switch.twin.switch import TwinSwitch


def parse_port(text: str) -> tuple[int, str]:
    num, sep, ifname = text.partition("=")
    if not sep or not ifname:
        raise argparse.ArgumentTypeError(f"--port wants NUMBER=IFNAME, got {text!r}")
    try:
        port = int(num)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--port number must be an integer, got {num!r}") from None
    if not 1 <= port < 512:
        raise argparse.ArgumentTypeError(f"--port number must be in 1..511 (9-bit port), got {port}")
    if len(ifname) > IFNAMSIZ:
        raise argparse.ArgumentTypeError(f"interface name {ifname!r} is longer than {IFNAMSIZ} characters")
    return port, ifname


def main_loop(sw: TwinSwitch, dump_path: str | None = None) -> int:
    """Run the switch until SIGTERM/SIGINT, then write its dump (whole or
    not at all) and close it."""
    try:
        sw.run()
    finally:
        if dump_path:
            try:
                write_atomic(dump_path, json.dumps(sw.dump()), dump_path)
            except OSError as e:
                print(f"twin {sw.name}: {e.strerror}", file=sys.stderr)      # cannot write <path>: <why>
        sw.close()
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m topologies.switch.twin", description=__doc__.splitlines()[2])
    ap.add_argument("--name", required=True)
    ap.add_argument("--port", action="append", type=parse_port, required=True, metavar="N=IFNAME")
    ap.add_argument("--control", required=True, metavar="SOCKPATH")
    ap.add_argument("--queue-depth", type=int, default=DEFAULT_DEPTH)
    ap.add_argument("--seed", type=int, default=0, help="seeds the ECN marking draws and the delay lines")
    ap.add_argument("--dump", metavar="PATH", help="write registers and counters here on exit")
    args = ap.parse_args(argv)
    ports = dict(args.port)
    if len(ports) != len(args.port):
        ap.error("a port number is given twice")
    if len(set(ports.values())) != len(ports):
        ap.error("an interface is given twice")
    if args.queue_depth < 1:
        ap.error("--queue-depth must be >= 1")
    if os.geteuid() != 0:
        print("twin: needs root (raw sockets on the switch's interfaces)", file=sys.stderr)
        return 2

    try:
        sw = TwinSwitch(args.name, ports, args.control, args.queue_depth, args.seed)
    except SwitchError as e:
        print(f"twin {args.name}: {e}", file=sys.stderr)
        return 2
    for w in sw.warnings:
        print(f"twin {args.name}: warning: {w}", file=sys.stderr)
    return main_loop(sw, args.dump)


if __name__ == "__main__":
    sys.exit(main())
