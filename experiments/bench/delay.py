"""Link delay, jitter and loss as configured, on the network a run uses:

    python3 -m experiments.bench.delay [--rates 10,50] [--delay-ms 5] [--netem-delay-ms 10]
        [--jitter-ms 2] [--distribution normal] [--loss-pct 1] [--probes 3000] [--target soft]
        [--no-agents] [--no-twin] [--twin-seconds 4]

For each rate, a two-host star (h1 - s1 - h2) with host_delay_ms = D, built
as a run builds it (experiments.config, plan, TestbedNetwork):

1. ping h1 -> h2: the RTT against 4 D (two links, both ways); the same
   with every delay off (the processing);
2. the agents: a 2-rank ring AllReduce over UDP through the runner, small
   messages, their RTT samples (the senders' counters in the stats event:
   minimum, mean, final SRTT) against 4 D plus a data frame's and an
   ACK's serialisation on both hops;
3. a netem entry on h1-s1 (set_link_netem, as the jitter injector applies
   one): one-way UDP probes h1 -> h2 (the hosts share the clock), their
   delay's mean and standard deviation against the distribution's
   (topologies.switch.twin.delayline.expected_delay), also with the spread
   measured without any delay taken out (a busy machine adds its own), and
   their loss.

Then the twin's forwarding rate without and with a delay line
(experiments.bench.twin).  Targets: delay within 10 %, jitter standard
deviation within 20 %, loss within 1 percentage point.  Needs root.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from experiments import config as C
from experiments.bench import twin as twin_bench
from experiments.network import build_network
from experiments.plan import run_plan
from experiments.runner import Runner
from hosts.udp.params import UdpParams
from hosts.wire import DATA
from topologies.network.links import netem_available
from topologies.spec.netem import NetemParams
from topologies.switch.twin.delayline import expected_delay

ETH_IP_UDP = 14 + 20 + 8
PING_FRAME = 14 + 20 + 8 + 56          # ping's default 56 data bytes
ACK_FRAME = 100                        # an agent's ACK, about (small: serialisation ~0)
PROBE_BYTES = 200                      # one-way probe payload
DELAY_TOL, JITTER_TOL, LOSS_TOL_PP = 0.10, 0.20, 1.0

# one-way probes: the sender stamps CLOCK_REALTIME (shared by every
# namespace) and a sequence number; the receiver prints {"seq": delay_ns}
PROBE_SEND = r"""
import socket, struct, sys, time
dst, port, n, gap, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
pad = bytes(size - 12)
t0 = time.monotonic()
for i in range(n):
    wait = t0 + i * gap - time.monotonic()
    if wait > 0:
        time.sleep(wait)
    s.sendto(struct.pack("!IQ", i, time.time_ns()) + pad, (dst, port))
"""
PROBE_RECV = r"""
import json, socket, struct, sys, time
ip, port, quiet_s = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 22)
s.bind((ip, port))
print("ready", flush=True)
got = {}
s.settimeout(10.0)
while True:
    try:
        data = s.recv(65535)
    except socket.timeout:
        break
    seq, sent = struct.unpack_from("!IQ", data)
    got[seq] = time.time_ns() - sent
    s.settimeout(quiet_s)
print(json.dumps(got))
"""


def frame_s(frame_bytes: int, rate_mbit: float) -> float:
    """A frame's serialisation time on a link (s)."""
    return frame_bytes * 8 / (rate_mbit * 1e6)


def ping_rtts(net, src: str, dst: str, count: int = 200, interval: float = 0.01) -> list[float]:
    """RTTs (ms) of `count` pings src -> dst."""
    r = net.cmd(src, "ping", "-n", "-c", str(count), "-i", str(interval), "-W", "2", net.topo.host(dst).ip,
                timeout=count * interval + 30)
    return [float(line.split("time=")[1].split()[0]) for line in r.stdout.splitlines() if "time=" in line]


def one_way(net, src: str, dst: str, count: int, gap: float = 0.001, port: int = 7300) -> dict[int, float]:
    """{sequence: one-way delay in ms} of `count` UDP probes src -> dst, one
    every `gap` s; lost probes are missing."""
    ip = net.topo.host(dst).ip
    recv = net.popen(dst, [sys.executable, "-c", PROBE_RECV, ip, str(port), "1.0"], stdout=subprocess.PIPE,
                     text=True)
    try:
        if recv.stdout.readline().strip() != "ready":
            raise RuntimeError("the probe receiver did not start")
        send = net.cmd(src, sys.executable, "-c", PROBE_SEND, ip, str(port), str(count), str(gap),
                       str(PROBE_BYTES), timeout=count * gap + 30)
        if send.returncode:
            raise RuntimeError(f"the probe sender failed: {send.stderr.strip()[-300:]}")
        out, _ = recv.communicate(timeout=60)
    finally:
        if recv.poll() is None:
            recv.kill()
            recv.wait()
    return {int(k): v / 1e6 for k, v in json.loads(out.strip().splitlines()[-1]).items()}


def overtaken(delays: dict[int, float], gap_ms: float) -> int:
    """Probes that arrived before the one sent just before them."""
    seqs = sorted(delays)
    arrival = {k: k * gap_ms + delays[k] for k in seqs}
    return sum(1 for a, b in zip(seqs, seqs[1:], strict=False) if arrival[b] < arrival[a])


def within(got: float, want: float, tol: float) -> str:
    off = (got - want) / want if want else math.inf
    return f"{off:+.1%} [{'ok' if abs(off) <= tol else 'OFF'}: within {tol:.0%}]"


def bench_config(rate: float, delay_ms: float, name: str = "delaybench") -> dict:
    """Small messages (8 KB a step): the RTT samples see the delay, not a
    queue (a window of data ahead of the ACKs would add up to 75 ms at 10
    Mbit/s, and the reverse direction's data delays the ACKs)."""
    return {"name": name, "seed": 1, "repeats": 1, "variants": ["baseline"],
            "topology": {"kind": "star", "hosts": 2, "host_rate_mbit": rate, "host_delay_ms": delay_ms},
            "jobs": [{"ranks": 2, "message_bytes": 16_000, "iterations": 30}]}


def network_phase(rate: float, args, run_dir: Path) -> dict:
    spec = C.resolve(bench_config(rate, args.delay_ms))
    plan = run_plan(spec, "baseline", 1, netem_available(), target=args.target)
    out: dict = {}
    net = build_network(plan, target=args.target, run_dir=run_dir)
    with net:
        out["target"], out["via"] = net.target, net.via
        rtts = ping_rtts(net, "h1", "h2")
        out["ping"] = {"n": len(rtts), "mean": statistics.fmean(rtts), "min": min(rtts),
                       "configured": 4 * args.delay_ms, "serialisation": 4 * frame_s(PING_FRAME, rate) * 1e3}
        for link in net.links:
            net.set_link_netem(link, 0.0)
        out["ping"]["no_delay_mean"] = statistics.fmean(ping_rtts(net, "h1", "h2", 100))
        # the processing a probe meets (stacks, the twin, waking the
        # receiver), and its spread, which a busy machine widens
        base = list(one_way(net, "h1", "h2", 500).values())
        out["probe_base_ms"], out["probe_base_std"] = statistics.fmean(base), statistics.pstdev(base)
        p = NetemParams(args.netem_delay_ms, args.jitter_ms, args.loss_pct, args.distribution)
        net.set_link_netem("h2-s1")                               # its own delay back
        net.set_link_netem("h1-s1", **{k: v for k, v in p.as_dict().items() if k != "limit"})
        got = one_way(net, "h1", "h2", args.probes)
        mean, std = expected_delay(p)
        delays = list(got.values())
        out["netem"] = {"params": p.as_dict(), "n": args.probes, "received": len(got),
                        "mean": statistics.fmean(delays), "std": statistics.pstdev(delays),
                        "want_mean": mean + args.delay_ms + out["probe_base_ms"], "want_std": std,
                        # independent noise adds its variance: the line's own spread
                        "std_less_base": math.sqrt(max(0.0, statistics.pvariance(delays)
                                                       - out["probe_base_std"] ** 2)),
                        "loss_pct": 100 * (1 - len(got) / args.probes),
                        "reordered": overtaken(got, 1.0)}
    return out


def agents_phase(rate: float, args, exp_dir: Path) -> dict:
    spec = C.resolve(bench_config(rate, args.delay_ms))
    runner = Runner(spec, exp_dir, target=args.target, versions={}, say=lambda line: None)
    res, = runner.run_all()
    if res.status != "ok":
        raise SystemExit(f"experiments.bench.delay: the agents' run failed: {res.reason} ({res.run_dir})")
    rtt = {"min": [], "mean": [], "srtt": [], "samples": 0}
    for path in sorted((res.run_dir / "agents").glob("rank*.jsonl")):
        stats = [json.loads(line) for line in path.read_text().splitlines() if '"kind":"stats"' in line]
        c = stats[-1]["counters"]
        if c.get("rtt_samples"):
            rtt["samples"] += c["rtt_samples"]
            rtt["min"].append(c["rtt_min_us"] / 1e3)
            rtt["mean"].append(c["rtt_sum_us"] / c["rtt_samples"] / 1e3)
            rtt["srtt"].append(c["rtt_srtt_us"] / 1e3)
    meta = json.loads((res.run_dir / "meta.json").read_text())
    data_frame = UdpParams().payload_bytes + DATA.size + ETH_IP_UDP
    rtt["serialisation"] = 2 * (frame_s(data_frame, rate) + frame_s(ACK_FRAME, rate)) * 1e3
    rtt["want"] = 4 * args.delay_ms + rtt["serialisation"]
    rtt["link_delays"] = (meta.get("link_delays_ms"), meta.get("link_delays_via"))
    return rtt


def report(rate: float, net: dict, agents: dict | None) -> None:
    p = net["ping"]
    want = p["configured"]
    print(f"\n== {rate:g} Mbit/s, h1 - s1 - h2 ({net['target']}, delays via {net['via']})")
    print(f"ping RTT ({p['n']} pings): mean {p['mean']:.2f} ms, min {p['min']:.2f}; configured {want:g} -> "
          f"{within(p['mean'], want, DELAY_TOL)}; without the delay {p['no_delay_mean']:.2f} ms "
          f"(serialisation at most {p['serialisation']:.2f})")
    if agents:
        if agents["min"]:
            print(f"agents' RTT ({agents['samples']} samples, UDP): min {statistics.fmean(agents['min']):.2f} ms, "
                  f"mean {statistics.fmean(agents['mean']):.2f}, final SRTT {statistics.fmean(agents['srtt']):.2f};"
                  f" configured {agents['want'] - agents['serialisation']:g} + a data frame and an ACK "
                  f"serialised on both hops {agents['serialisation']:.2f} = {agents['want']:.2f} -> min "
                  f"{within(statistics.fmean(agents['min']), agents['want'], DELAY_TOL)}")
        else:
            print("agents' RTT: no samples in the stats events")
        print(f"  meta.json: link_delays_ms {agents['link_delays'][0]}, via {agents['link_delays'][1]}")
    n = net["netem"]
    q = n["params"]
    print(f"netem on h1-s1 (delay {q['delay_ms']:g} ms, jitter {q['jitter_ms']:g} ms {q['distribution']}, "
          f"loss {q['loss_pct']:g} %), {n['n']} one-way probes h1 -> h2, {n['reordered']} overtaken:")
    print(f"  delay mean {n['mean']:.2f} ms; want {n['want_mean']:.2f} (the entry's mean, h2-s1's delay and "
          f"{net['probe_base_ms']:.2f} ms measured with no delay) -> {within(n['mean'], n['want_mean'], DELAY_TOL)}")
    print(f"  jitter std {n['std']:.2f} ms, {n['std_less_base']:.2f} without the {net['probe_base_std']:.2f} ms "
          f"measured with no delay; the distribution's {n['want_std']:.2f} -> "
          f"{within(n['std'], n['want_std'], JITTER_TOL)} raw, "
          f"{within(n['std_less_base'], n['want_std'], JITTER_TOL)} without")
    off = n["loss_pct"] - q["loss_pct"]
    print(f"  loss {n['loss_pct']:.2f} %; set {q['loss_pct']:g} % -> {off:+.2f} pp "
          f"[{'ok' if abs(off) <= LOSS_TOL_PP else 'OFF'}: within {LOSS_TOL_PP:g} pp]")


def twin_rates(seconds: float) -> None:
    plain = twin_bench.run(seconds, 1500)
    delayed = twin_bench.run(seconds, 1500, NetemParams(delay_ms=5, jitter_ms=1))
    print(f"\n== the twin's forwarding rate, 1500-byte packets, {seconds:g} s each")
    for label, r in (("no delay line", plain), ("delay line 5 ms +- 1 ms", delayed)):
        print(f"  {label:<24} {r['pps_wall']:>7} pkt/s wall, {r['pps_per_core']} pkt/s per core of the twin "
              f"({r['twin_cpu_share']:.0%} of a core)")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m experiments.bench.delay", description=__doc__.splitlines()[0])
    ap.add_argument("--rates", default="10,50", help="link rates in Mbit/s, comma separated (default 10,50)")
    ap.add_argument("--delay-ms", type=float, default=5.0, help="host_delay_ms of both links (default 5)")
    ap.add_argument("--netem-delay-ms", type=float, default=10.0, help="the netem entry's delay (default 10)")
    ap.add_argument("--jitter-ms", type=float, default=2.0, help="the netem entry's jitter (default 2)")
    ap.add_argument("--distribution", default="normal", help="the netem entry's distribution (default normal)")
    ap.add_argument("--loss-pct", type=float, default=1.0, help="the netem entry's loss (default 1)")
    ap.add_argument("--probes", type=int, default=3000, help="one-way probes, 1 per ms (default 3000)")
    ap.add_argument("--target", default="soft", choices=("auto", "bmv2", "soft"),
                    help="soft (default: the twin's delay lines where the kernel has no sch_netem), bmv2, auto")
    ap.add_argument("--no-agents", action="store_true", help="skip the agents' run")
    ap.add_argument("--no-twin", action="store_true", help="skip the twin's forwarding rate")
    ap.add_argument("--twin-seconds", type=float, default=4.0)
    args = ap.parse_args(argv)
    try:
        rates = [float(x) for x in args.rates.split(",") if x.strip()]
        NetemParams(args.netem_delay_ms, args.jitter_ms, args.loss_pct, args.distribution)
    except ValueError as e:
        ap.error(str(e))
    if not rates or min(rates) <= 0 or args.delay_ms <= 0 or not 100 <= args.probes <= 100_000:
        ap.error("need rates > 0, --delay-ms > 0 and --probes in 100..100000")
    if os.geteuid() != 0:
        print("experiments.bench.delay: needs root (Mininet, namespaces, raw sockets)", file=sys.stderr)
        return 2
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="symdelaybench-") as tmp:
        for rate in rates:
            net = network_phase(rate, args, Path(tmp) / f"net{rate:g}")
            agents = None if args.no_agents else agents_phase(rate, args, Path(tmp) / f"agents{rate:g}")
            report(rate, net, agents)
    if not args.no_twin:
        twin_rates(args.twin_seconds)
    print(f"\n({time.monotonic() - t0:.0f} s in all; load average now {os.getloadavg()[0]:.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
