"""Emulation fidelity at scale: sudo python3 -m experiments.bench.fidelity
        [--ranks 4,8,16] [--repeats 1] [--message-bytes 400000] [--iterations 3]
        [--udp KEY=VALUE] [--hog K] [--target soft|bmv2] [--host-mbit R]
        [--out DIR] [--json FILE]

For each ring size N, one baseline run on the soft target (or --target
bmv2), as the runner makes it (experiments.runner.Runner): a leaf-spine of
N hosts, max(2, N/4) leaves, one spine, 10 Mbit/s host links (--host-mbit),
a fabric of 4 times that, the ranks
interleaved over the leaves, no jitter.  Prints per run the job's mean CCT
(analysis' definition, every iteration) and its steady state (the
iterations after the first, which also holds the agents' start-up skew)
against the bandwidth bound 2(N-1)/N x S / B and against the oracle's
baseline CCT (the flow-level model on the same config), the fidelity
verdict and its reasons (experiments.fidelity, meta.json's ``fidelity``),
the wall time of the run (network up, agents, teardown), the data packets
per second its agents sent (what `experiments check` holds against the
target's packet budget, experiments.config.regime), and the monitors'
figures.  ``--udp payload_bytes=4096`` runs the job with RoCE's 4 KB MTU
(the network raises the links' MTU to fit).

``--hog K`` starts K processes spinning in a busy loop beside every run (a
run starved of CPU on purpose: its verdict should be degraded).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

from analysis.records import load_run
from analysis.report import analyse_run
from experiments import config as C
from experiments.bench.timers import spin
from experiments.config.regime import data_packets
from experiments.oracle.scenario import predict_repeats
from experiments.plan import run_plan
from experiments.runner import Runner
from experiments.tables import align, fmt
from hosts import ring

HOST_MBIT = 10.0
FABRIC_PER_HOST = 4.0        # the fabric's links at 4 times the hosts': the ranks' N/4 flows per uplink fit


def raw_config(n: int, message_bytes: int, iterations: int, udp: dict | None = None,
               host_mbit: float = HOST_MBIT) -> dict:
    """The benchmark's config for n ranks (a raw TOML dict); udp: the job's [udp] table."""
    job: dict = {"ranks": n, "placement": "interleave", "message_bytes": message_bytes,
                 "iterations": iterations, "transport": "udp"}
    if udp:
        job["udp"] = dict(udp)
    return {"name": f"fidelity{n}", "seed": 1, "repeats": 1, "variants": ["baseline"],
            "topology": {"kind": "leafspine", "hosts": n, "leaves": max(2, n // 4), "spines": 1,
                         "host_rate_mbit": host_mbit, "fabric_rate_mbit": FABRIC_PER_HOST * host_mbit},
            "jobs": [job], "dcqcn": {"preset": "emulation"}}


def oracle_baseline_s(spec: C.ExperimentSpec, target: str) -> float:
    """The flow-level model's baseline CCT of the job (no jitter: one schedule)."""
    plan = run_plan(spec, "baseline", 1, netem_ok=False, target=target)
    pred = predict_repeats(spec, {1: list(plan.schedule)})
    return next(iter(pred.jobs.values())).baseline_cct_s


def run_case(n: int, args, out: Path) -> list[dict]:
    spec = C.resolve(raw_config(n, args.message_bytes, args.iterations, args.udp, args.host_mbit), f"fidelity{n}")
    bound = ring.bandwidth_bound_s(args.message_bytes, n, args.host_mbit * 1e6)
    oracle = oracle_baseline_s(spec, args.target)
    per_iteration = data_packets(spec) / args.iterations
    rows = []
    for rep in range(1, args.repeats + 1):
        load = os.getloadavg()[0]
        hogs = [mp.get_context("fork").Process(target=spin, daemon=True) for _ in range(args.hog)]
        for p in hogs:
            p.start()
        t = time.monotonic()
        try:
            runner = Runner(spec, out / f"n{n}", target=args.target, say=lambda msg: print(f"  {msg}", file=sys.stderr))
            res = runner.run_one("baseline", rep)
        finally:
            for p in hogs:
                p.terminate()
                p.join(5)
        wall = time.monotonic() - t
        meta = json.loads((res.run_dir / "meta.json").read_text())
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            summ = analyse_run(load_run(res.run_dir))["summary"]
        ccts = [c for c in summ["cct_s"] if c is not None]
        cct = statistics.mean(ccts) if ccts else None
        # the first iteration also holds the agents' start-up skew (they start one
        # by one, ~0.1 s each on 2 cores): the steady state is the others'
        steady = statistics.mean(ccts[1:]) if len(ccts) > 1 else cct
        fid = meta.get("fidelity") or {}
        rows.append({"ranks": n, "repeat": rep, "status": res.status, "reason": res.reason, "load_before": load,
                     "cct_s": cct, "steady_s": steady, "cct_by_iter_s": ccts, "bound_s": bound, "oracle_s": oracle,
                     "bound_over_cct": bound / cct if cct else None,
                     "data_pps": per_iteration / cct if cct else None,
                     "bound_over_steady": bound / steady if steady else None,
                     "oracle_over_steady": oracle / steady if steady else None,
                     "verdict": fid.get("verdict"), "reasons": fid.get("reasons", []),
                     "figures": fid.get("figures"), "wall_s": wall, "run_dir": str(res.run_dir)})
    return rows


FIGURES = (("saturated", ("cpu", "saturated_share"), "{:.2f}"), ("busy", ("cpu", "machine_busy"), "{:.2f}"),
           ("run cores", ("cpu", "run_cores"), "{:.2f}"), ("wait share", ("cpu", "run_wait_share"), "{:.2f}"),
           ("wait/slice ms", ("cpu", "run_wait_per_slice_ms"), "{:.3f}"),
           ("port ratio", ("ports", "rate_ratio_min"), "{:.3f}"),
           ("twin p99 ms", ("ports", "lateness", "p99_ms"), "{:.2f}"),
           ("pacing p99 ms", ("agents", "pacing", "p99_ms"), "{:.2f}"),
           ("timer p90 ms", ("agents", "dcqcn_timer", "p90_ms"), "{:.2f}"))


def _dig(d, path):
    for k in path:
        d = (d or {}).get(k)
    return d


def figure_rows(rows: list[dict]) -> list[tuple[str, ...]]:
    """The monitors' figures of each run (experiments/fidelity.py)."""
    out = [("ranks", "rep", *(name for name, _, _ in FIGURES))]
    for r in rows:
        out.append((str(r["ranks"]), str(r["repeat"]),
                    *(fmt(_dig(r["figures"], path), spec) for _, path, spec in FIGURES)))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m experiments.bench.fidelity", description=__doc__.split("\n")[0])
    ap.add_argument("--ranks", default="4,8,16", help="ring sizes, comma separated")
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--message-bytes", type=int, default=400_000)
    ap.add_argument("--iterations", type=int, default=3)
    ap.add_argument("--udp", action="append", default=[], metavar="KEY=VALUE",
                    help="a key of the job's [udp] table (payload_bytes, ack_delay_ms, ...), repeatable")
    ap.add_argument("--hog", type=int, default=0, help="busy-loop processes beside every run")
    ap.add_argument("--target", choices=("soft", "bmv2"), default="soft")
    ap.add_argument("--host-mbit", type=float, default=HOST_MBIT, help="the host links' rate (the fabric's: 4 x)")
    ap.add_argument("--out", help="where the run directories go (default: a temporary directory)")
    ap.add_argument("--json", help="also write the rows to this file")
    args = ap.parse_args(argv)
    if os.geteuid() != 0:
        print("experiments.bench.fidelity: needs root (Mininet, raw sockets): run it with sudo", file=sys.stderr)
        return 2
    try:
        sizes = [int(x) for x in args.ranks.split(",") if x.strip()]
        args.udp = {k: float(v) if "." in v else int(v) for k, _, v in (u.partition("=") for u in args.udp)}
    except ValueError:
        ap.error("--ranks takes integers like 4,8,16, --udp KEY=NUMBER")
    if not sizes or min(sizes) < 2 or args.repeats < 1 or args.hog < 0 or args.host_mbit <= 0:
        ap.error("need ring sizes >= 2, --repeats >= 1, --hog >= 0, --host-mbit > 0")
    out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="symfidelity-"))
    print(f"{os.cpu_count()} cores, target {args.target}; leaf-spine, {args.host_mbit:g} Mbit/s host links, "
          f"{FABRIC_PER_HOST * args.host_mbit:g} Mbit/s fabric, "
          f"interleaved, no jitter, {args.message_bytes} B x {args.iterations} iterations"
          + (f", {args.hog} busy loop(s) beside each run" if args.hog else ""), flush=True)
    rows = []
    table = [("ranks", "rep", "load", "CCT s", "steady s", "bound s", "bound/CCT", "bound/steady", "oracle s",
              "oracle/steady", "data pkt/s", "fidelity", "wall s")]
    for n in sizes:
        for r in run_case(n, args, out):
            rows.append(r)
            table.append((str(n), str(r["repeat"]), f"{r['load_before']:.2f}", fmt(r["cct_s"]), fmt(r["steady_s"]),
                          fmt(r["bound_s"]), fmt(r["bound_over_cct"], "{:.2f}"), fmt(r["bound_over_steady"], "{:.2f}"),
                          fmt(r["oracle_s"]), fmt(r["oracle_over_steady"], "{:.2f}"), fmt(r["data_pps"], "{:,.0f}"),
                          r["verdict"] or r["status"],
                          f"{r['wall_s']:.1f}"))
            print(f"  {n} ranks rep {r['repeat']}: {r['status']}, verdict {r['verdict']}"
                  + (f" ({'; '.join(r['reasons'])})" if r["reasons"] else ""), flush=True)
    print(align(table))
    print(align(figure_rows(rows)))
    print(f"(run directories in {out})")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
