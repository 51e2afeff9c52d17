"""Benchmark of the ring AllReduce over the UDP transport between namespaces:

    python3 -m experiments.bench.agents [--rates 20,100] [--ranks 4] [--message-bytes 2000000]
                           [--iterations 4] [--no-pacing] [--keep DIR]

For each rate: N namespaces on veths rate-limited with tc htb (both
directions), one agent per namespace, DCQCN off (the sender paces at the link
rate unless --no-pacing).  Prints, per rank, the completion time (CCT) of each
AllReduce against the bandwidth bound 2(N-1)/N x S/B and the goodput (payload
bits a rank sends per iteration / CCT).  Needs root.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from hosts import ring
from hosts.job import JobSpec, RankSpec, dump_job
from topologies.network.lab import Lab

REPO = Path(__file__).resolve().parents[2]


def run_once(rate_mbit: float, n: int, message_bytes: int, iterations: int, pacing: bool,
             work: Path) -> dict:
    work.mkdir(parents=True, exist_ok=True)
    with Lab(n, rate_mbit=rate_mbit) as lab:
        spec = JobSpec(job=1, data_port=5000, message_bytes=message_bytes,
                       iterations=iterations,
                       ranks=tuple(RankSpec(r, h.ip, f"h{r}") for r, h in enumerate(lab.hosts)),
                       dcqcn={"preset": "off", **({"line_rate_mbit": rate_mbit} if pacing else {})})
        job_path = work / "job.toml"
        dump_job(spec, job_path)
        log_dir = work / "agents"
        procs = []
        for r in range(n):
            err = open(work / f"rank{r}.stderr", "w")
            procs.append(lab.popen(r, [sys.executable, "-m", "hosts.agent", "--job",
                                       str(job_path), "--rank", str(r), "--log-dir",
                                       str(log_dir)], cwd=REPO, stdout=subprocess.DEVNULL,
                                   stderr=err))
        codes = [p.wait(timeout=600) for p in procs]
    if any(codes):
        errs = "; ".join((work / f"rank{r}.stderr").read_text().strip() for r in range(n))
        raise SystemExit(f"experiments.bench.agents: agents exited with {codes}: {errs}")
    return summarize(log_dir, n, message_bytes, iterations, rate_mbit * 1e6)


def summarize(log_dir: Path, n: int, message_bytes: int, iterations: int, rate_bps: float):
    bound = ring.bandwidth_bound_s(message_bytes, n, rate_bps)
    sent_bits = 2 * (n - 1) / n * message_bytes * 8
    per_rank, starts, ends = {}, {}, {}
    for r in range(n):
        evs = [json.loads(line) for line in (log_dir / f"rank{r}.jsonl").read_text().splitlines()]
        it_start = {e["iter"]: e["t"] for e in evs if e["kind"] == "iter_start"}
        it_end = {e["iter"]: e["t"] for e in evs if e["kind"] == "iter_end"}
        ccts = [(it_end[i] - it_start[i]) / 1e9 for i in range(iterations)]
        stats = next(e["counters"] for e in evs if e["kind"] == "stats")
        per_rank[r] = {"cct_s": ccts, "retransmits": sum(v for k, v in stats.items()
                                                          if k.startswith("retransmit"))}
        for i in range(iterations):
            starts.setdefault(i, []).append(it_start[i])
            ends.setdefault(i, []).append(it_end[i])
    job_cct = [(max(ends[i]) - min(starts[i])) / 1e9 for i in range(iterations)]
    return {"bound_s": bound, "sent_bits": sent_bits, "ranks": per_rank, "job_cct_s": job_cct}


def report(rate_mbit: float, n: int, message_bytes: int, res: dict, pacing: bool) -> None:
    bound = res["bound_s"]
    print(f"\n== {n} ranks, S = {message_bytes} B, htb {rate_mbit:g} Mbit/s, "
          f"{'paced at the link rate' if pacing else 'no pacing'}: "
          f"bound 2(N-1)/N x S/B = {bound * 1000:.1f} ms")
    print("(iteration 0 includes the agents' start-up skew; steady state = median of "
          "iterations 1..)")
    print(f"{'rank':>4} {'CCT it0 ms':>11} {'CCT steady ms':>14} {'CCT/bound':>10} "
          f"{'goodput Mbit/s':>15} {'of link':>8} {'retx':>5}")
    for r, d in res["ranks"].items():
        c = d["cct_s"]
        steady = statistics.median(c[1:]) if len(c) > 1 else c[0]
        gp = res["sent_bits"] / steady / 1e6
        print(f"{r:>4} {c[0] * 1000:>11.1f} {steady * 1000:>14.1f} {steady / bound:>10.3f} "
              f"{gp:>15.2f} {gp / rate_mbit:>8.1%} {d['retransmits']:>5}")
    j = res["job_cct_s"]
    steady = statistics.median(j[1:]) if len(j) > 1 else j[0]
    print(f" job CCT (first start to last end), steady: {steady * 1000:.1f} ms = "
          f"{steady / bound:.3f} x bound")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m experiments.bench.agents", description=__doc__.split("\n")[0])
    ap.add_argument("--rates", default="20,100", help="link rates in Mbit/s, comma separated")
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--message-bytes", type=int, default=2_000_000)
    ap.add_argument("--iterations", type=int, default=4)
    ap.add_argument("--no-pacing", action="store_true", help="window-limited sender only")
    ap.add_argument("--keep", help="keep job files and agent logs under this directory")
    args = ap.parse_args(argv)
    if os.geteuid() != 0:
        print("experiments.bench.agents: needs root (it creates network namespaces and tc qdiscs); "
              "run it with sudo", file=sys.stderr)
        return 2
    try:
        rates = [float(x) for x in args.rates.split(",") if x.strip()]
    except ValueError:
        print(f"experiments.bench.agents: --rates {args.rates!r}: expected numbers like 20,100", file=sys.stderr)
        return 2
    if args.ranks < 2 or args.message_bytes % 4 or args.message_bytes < 4 * args.ranks \
            or args.iterations < 1:
        print("experiments.bench.agents: need --ranks >= 2, --iterations >= 1 and --message-bytes a "
              "multiple of 4 of at least 4 x ranks", file=sys.stderr)
        return 2
    base = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="symbench-"))
    t0 = time.monotonic()
    for rate in rates:
        res = run_once(rate, args.ranks, args.message_bytes, args.iterations,
                       not args.no_pacing, base / f"{rate:g}mbit")
        report(rate, args.ranks, args.message_bytes, res, not args.no_pacing)
    print(f"\n(logs in {base}; {time.monotonic() - t0:.1f} s in all)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
