"""Forwarding rate of the twin: python3 -m experiments.bench.twin [--duration S] [--size BYTES]

Two namespaces joined only through one twin process; a sender in the first
blasts UDP packets of --size bytes (IP packet, 1500 by default: full-MTU
frames) at the second as fast as Python can, on a tracked Symphony flow (so
the whole pipeline runs: forward, symphony_flows, registers, egress ECN).
The figure is packets forwarded per second of the twin's own CPU time
(user + system, from /proc), i.e. packets/s per core, next to the wall-clock
rate.  Needs root.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

from contract.tags import tag_port
from topologies.network.lab import Lab
from topologies.network.shell import stop_child
from topologies.spec.netem import NetemParams
from topologies.switch import program as S
from topologies.switch.twin.client import TwinClient

SENDER = r"""
import socket, sys, time
dst, sport, size, duration = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, 2)
s.bind(("0.0.0.0", sport))
payload = bytes(size - 28)
end = time.monotonic() + duration
n = 0
while True:
    for _ in range(200):
        try:
            s.sendto(payload, (dst, 5000))
            n += 1
        except OSError:
            pass
    if time.monotonic() > end:
        break
print(n)
"""

SINK = r"""
import socket, time, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("0.0.0.0", 5000))
time.sleep(float(sys.argv[1]))
"""


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def forwarding_figures(size: int, wall: float, cpu: float, sent: int, forwarded: int, pkts: int,
                       who: str) -> dict:
    """What a forwarding bench prints of one run (this one's and bench.bmv2's):
    packets and bits per second of wall time, per core of the switch's CPU
    time; `who` names the CPU keys (twin, switch)."""
    return {
        "packet_bytes": size,
        "duration_s": round(wall, 3),
        "sent": sent,
        "forwarded": forwarded,
        "tracked_pkts_counter": pkts,
        f"{who}_cpu_s": round(cpu, 3),
        "pps_wall": round(forwarded / wall),
        "pps_per_core": round(forwarded / cpu) if cpu > 0 else None,
        "mbit_s_wall": round(forwarded * size * 8 / wall / 1e6, 1),
        f"{who}_cpu_share": round(cpu / wall, 2),
        "cores": os.cpu_count(),
    }


def run(duration: float, size: int, netem: NetemParams | None = None) -> dict:
    """netem: a delay line on the egress port towards the sink (the twin's
    cost of one, experiments.bench.delay)."""
    lab = Lab(2, bridge=False)
    proc = None
    tmp = tempfile.mkdtemp(prefix="symtwinbench")
    sock = os.path.join(tmp, "s1.sock")
    try:
        args = [sys.executable, "-m", "topologies.switch.twin", "--name", "bench", "--control", sock]
        for i, h in enumerate(lab.hosts):
            args += ["--port", f"{i + 1}={h.root_if}"]
        proc = subprocess.Popen(args, start_new_session=True)
        client = TwinClient.wait(sock, timeout=10, proc=proc)
        h0, h1 = lab.hosts
        for i, h in enumerate(lab.hosts):
            mac = lab.exec(i, "cat", "/sys/class/net/eth0/address").stdout.strip()
            client.table_add("forward", "ipv4_forward", [f"{h.ip}/32"], [mac, str(i + 1)])
            root_mac = open(f"/sys/class/net/{h.root_if}/address").read().strip()
            lab.exec(i, "ip", "neigh", "replace", lab.hosts[1 - i].ip, "lladdr", root_mac, "dev", "eth0")
        S.add_flow(client, h0.ip, h1.ip, 5000, flow_id=0, job_slot=0, n_local=2, threshold=1, enabled=1)
        S.install_job(client, 0, [0, 1], first_step=0)
        S.install_queue_ecn(client, 20, 60, 0.2)
        if netem is not None:
            client.set_netem(netem, 2)

        sink = lab.popen(1, [sys.executable, "-c", SINK, str(duration + 5)])
        time.sleep(0.3)
        tx0 = client.stats()["ports"]["2"]["tx"]
        cpu0, t0 = cpu_seconds(proc.pid), time.monotonic()
        sender = lab.exec(0, sys.executable, "-c", SENDER, h1.ip, str(tag_port(1)), str(size), str(duration))
        time.sleep(0.2)                       # let the twin finish what is in its socket buffer
        t1, cpu1 = time.monotonic(), cpu_seconds(proc.pid)
        stats = client.stats()
        forwarded = stats["ports"]["2"]["tx"] - tx0
        sent = int(sender.stdout.strip() or 0)
        pkts = client.counter_read("pkts", 0).packets
        sink.kill()
        return forwarding_figures(size, t1 - t0, cpu1 - cpu0, sent, forwarded, pkts, "twin")
    finally:
        stop_child(proc, 5)
        lab.close()
        try:
            os.rmdir(tmp)
        except OSError:
            pass


def forwarding_options(ap: argparse.ArgumentParser) -> None:
    """The options every forwarding bench takes (this one's and bench.bmv2's)."""
    ap.add_argument("--duration", type=float, default=5.0, help="seconds of sending (default 5)")
    ap.add_argument("--size", type=int, default=1500, help="IP packet bytes (default 1500)")
    ap.add_argument("--json", action="store_true", help="print the figures as one JSON object")


def check_forwarding_options(ap: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    if not 0.5 <= args.duration <= 600:
        ap.error("--duration must be in 0.5..600 s")
    if not 64 <= args.size <= 1500:
        ap.error("--size must be in 64..1500 bytes")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m experiments.bench.twin", description=__doc__.splitlines()[0])
    forwarding_options(ap)
    args = ap.parse_args(argv)
    check_forwarding_options(ap, args)
    if os.geteuid() != 0:
        print("twin bench: needs root (network namespaces, raw sockets)", file=sys.stderr)
        return 2
    r = run(args.duration, args.size)
    if args.json:
        print(json.dumps(r))
    else:
        print(f"twin forwarding, {r['packet_bytes']}-byte packets, {r['duration_s']} s:")
        print(f"  sent {r['sent']}, forwarded {r['forwarded']} ({r['pps_wall']} pkt/s wall, {r['mbit_s_wall']} Mbit/s)")
        print(f"  twin CPU {r['twin_cpu_s']} s ({r['twin_cpu_share']:.0%} of a core)")
        print(f"  => {r['pps_per_core']} packets/s per core")
    return 0


if __name__ == "__main__":
    sys.exit(main())
