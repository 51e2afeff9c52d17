"""Forwarding rate of BMv2: python3 -m experiments.bench.bmv2 [--duration S] [--size BYTES] [--simple-switch PATH]...

The twin's benchmark (experiments.bench.twin) with simple_switch in the
twin's place: two namespaces joined only through one simple_switch running
build/bmv2/symphony.json, started as the testbed starts it (log level warn,
no per-packet log), with the same table entries; a sender in the first
blasts UDP packets of --size bytes (IP packet, 1500 by default) at the
second as fast as Python can, on a tracked Symphony flow, so the whole
pipeline runs (forward, symphony_flows, registers, egress ECN).  The egress
queue is unlimited (BMv2's default rate), so the figure is what the switch
itself forwards: packets out of its port towards the sink (the interface's
tx counter) per second of wall time, and per second of simple_switch's own
CPU time (user + system of all its threads, from /proc), next to how many
the tracked flow's `pkts` counter saw in ingress.  Needs root and BMv2.

--simple-switch PATH (repeatable) measures each given build in turn in the
same run, e.g. the performance and the package build of
scripts/build-p4-toolchain.sh: `--simple-switch /usr/local --simple-switch
/opt/symphony-bmv2-package` (a prefix means its bin/simple_switch).  Each
is named by its build (experiments.config.budget.build_of: the build
script's record, or a probe of the binary).  Default: the simple_switch on
the PATH.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import time

from contract.tags import tag_port
from experiments.bench.twin import (
    SENDER,
    SINK,
    check_forwarding_options,
    cpu_seconds,
    forwarding_figures,
    forwarding_options,
)
from experiments.config.budget import build_of
from topologies.network.lab import Lab
from topologies.network.shell import stop_child
from topologies.switch import program as S
from topologies.switch.bmv2 import Bmv2Client, free_tcp_port, simple_switch_command, simple_switch_log_options
from topologies.switch.targets import BMV2_JSON, bmv2_program_stale, bmv2_skip_reason

# the twin bench's sender, paced: `rate` packets/s in bursts of 10 (0: as fast as it can)
PACED_SENDER = r"""
import socket, sys, time
dst, sport, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
duration, rate = float(sys.argv[4]), float(sys.argv[5])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, 2)
s.bind(("0.0.0.0", sport))
payload = bytes(size - 28)
t0 = time.monotonic()
end = t0 + duration
n = 0
while True:
    now = time.monotonic()
    if now > end:
        break
    if n >= (now - t0) * rate:
        time.sleep(0.0002)
        continue
    for _ in range(10):
        try:
            s.sendto(payload, (dst, 5000))
            n += 1
        except OSError:
            pass
print(n)
"""


def tx_packets(ifname: str) -> int:
    with open(f"/sys/class/net/{ifname}/statistics/tx_packets") as f:
        return int(f.read())


def run(duration: float, size: int, log_level: str = "warn", offered_pps: float = 0,
        simple_switch: str = "simple_switch") -> dict:
    """offered_pps: the sender's rate (0: as fast as it can, as the twin's bench);
    simple_switch: the binary to measure."""
    lab = Lab(2, bridge=False)
    proc = None
    ipc = f"/tmp/sym{lab.id}bench-notifications.ipc"
    try:
        thrift = free_tcp_port()
        args = simple_switch_command(thrift, {i + 1: h.root_if for i, h in enumerate(lab.hosts)}, str(BMV2_JSON),
                                     ipc, options=simple_switch_log_options(log_level), binary=simple_switch)
        proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        client = Bmv2Client.connect(thrift, "bench", str(BMV2_JSON), proc=proc)
        h0, h1 = lab.hosts
        for i, h in enumerate(lab.hosts):
            mac = lab.exec(i, "cat", "/sys/class/net/eth0/address").stdout.strip()
            client.table_add("forward", "ipv4_forward", [f"{h.ip}/32"], [mac, str(i + 1)])
            with open(f"/sys/class/net/{h.root_if}/address") as f:
                root_mac = f.read().strip()
            lab.exec(i, "ip", "neigh", "replace", lab.hosts[1 - i].ip, "lladdr", root_mac, "dev", "eth0")
        S.add_flow(client, h0.ip, h1.ip, 5000, flow_id=0, job_slot=0, n_local=2, threshold=1, enabled=1)
        S.install_job(client, 0, [0, 1], first_step=0)
        S.install_queue_ecn(client, 20, 60, 0.2)

        sink = lab.popen(1, [sys.executable, "-c", SINK, str(duration + 5)])
        time.sleep(0.3)
        tx0 = tx_packets(h1.root_if)
        cpu0, t0 = cpu_seconds(proc.pid), time.monotonic()
        if offered_pps:
            sender = lab.exec(0, sys.executable, "-c", PACED_SENDER, h1.ip, str(tag_port(1)), str(size),
                              str(duration), str(offered_pps))
        else:
            sender = lab.exec(0, sys.executable, "-c", SENDER, h1.ip, str(tag_port(1)), str(size), str(duration))
        # let the switch finish what is in its buffers: until its output stops growing
        last = -1
        while tx_packets(h1.root_if) != last:
            last = tx_packets(h1.root_if)
            time.sleep(0.1)
        t1, cpu1 = time.monotonic() - 0.1, cpu_seconds(proc.pid)
        forwarded = tx_packets(h1.root_if) - tx0
        sent = int(sender.stdout.strip() or 0)
        pkts = client.counter_read("pkts", 0).packets
        sink.kill()
        wall = t1 - t0
        return {**forwarding_figures(size, wall, cpu1 - cpu0, sent, forwarded, pkts, "switch"),
                "log_level": log_level, "offered_pps": round(sent / wall) if offered_pps else None,
                "load_avg_1m": os.getloadavg()[0]}
    finally:
        stop_child(proc, 5)
        lab.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(ipc)


def simple_switch_path(text: str) -> str:
    """--simple-switch: a simple_switch binary, or a prefix holding bin/simple_switch."""
    path = os.path.join(text, "bin", "simple_switch") if os.path.isdir(text) else text
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        raise argparse.ArgumentTypeError(f"no simple_switch program at {path}")
    return os.path.abspath(path)


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python3 -m experiments.bench.bmv2", description=__doc__.splitlines()[0])
    forwarding_options(ap)
    ap.add_argument("--log-level", default="warn", choices=["trace", "debug", "info", "warn", "error", "off"],
                    help="simple_switch's log level (default warn, as the testbed runs it)")
    ap.add_argument("--offered", type=float, default=0, metavar="PPS",
                    help="send at this many packets/s instead of as fast as possible (default 0)")
    ap.add_argument("--simple-switch", type=simple_switch_path, action="append", default=[], metavar="PATH",
                    dest="simple_switch",
                    help="a simple_switch, or a prefix with bin/simple_switch, to measure; repeatable: each is "
                         "measured in turn, in the order given (default: the simple_switch on the PATH)")
    return ap


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    ap = parser()
    args = ap.parse_args(argv)
    check_forwarding_options(ap, args)
    if not 0 <= args.offered <= 1e6:
        ap.error("--offered must be in 0..1e6 packets/s")
    if len(set(args.simple_switch)) != len(args.simple_switch):
        ap.error("--simple-switch: the same simple_switch twice")
    return args


def report(r: dict) -> None:
    print(f"{r['simple_switch']}: {r['build']}")
    print(f"  simple_switch forwarding, {r['packet_bytes']}-byte packets, {r['duration_s']} s, "
          f"log level {r['log_level']}, load {r['load_avg_1m']:.2f}:")
    offered = f" at {r['offered_pps']} pkt/s" if r["offered_pps"] else ""
    print(f"  sent {r['sent']}{offered}, forwarded {r['forwarded']} ({r['pps_wall']} pkt/s wall, "
          f"{r['mbit_s_wall']} Mbit/s)")
    print(f"  simple_switch CPU {r['switch_cpu_s']} s ({r['switch_cpu_share']:.0%} of a core)")
    print(f"  => {r['pps_per_core']} packets/s per core")


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    if os.geteuid() != 0:
        print("bmv2 bench: needs root (network namespaces)", file=sys.stderr)
        return 2
    missing = bmv2_skip_reason()
    if missing:
        print(f"bmv2 bench: {missing}", file=sys.stderr)
        return 2
    stale = bmv2_program_stale()        # the network's one rule: missing, or older than its P4 source
    if stale:
        print(f"bmv2 bench: {stale}", file=sys.stderr)
        return 2
    binaries = args.simple_switch or [shutil.which("simple_switch")]
    results = []
    for binary in binaries:
        build = build_of(binary)
        r = run(args.duration, args.size, args.log_level, args.offered, simple_switch=binary)
        results.append({**r, "simple_switch": binary, "build": build.describe(), "flavour": build.flavour})
    if args.json:
        print(json.dumps(results[0] if len(results) == 1 else results))
        return 0
    for r in results:
        report(r)
    if len(results) > 1:
        print("side by side, packets/s per core:")
        for r in results:
            print(f"  {r['pps_per_core']:>8} {r['flavour']:<11} {r['simple_switch']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
