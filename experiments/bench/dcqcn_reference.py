"""The simulation's DCQCN against code nobody here wrote: HPCC's ns-3
(alibaba-edu/High-Precision-Congestion-Control, rdma-hw.cc's "Mellanox"
DCQCN, the one Astra-Sim's ns-3 backend carries), on DCQCN-only cases both
can express:

    python3 -m experiments.bench.dcqcn_reference --reference DIR [--json FILE] [--seeds K] [--engine compiled|python]

N senders (2, 4, 8) into one 100 Gbit/s bottleneck through one switch,
2.5 us per link, one 10 MB flow each, all from t = 0 ("sync") or the last
from 1 ms ("late"), DCQCN with the deployment's published values
(hosts.dcqcn_regime.DEPLOYMENT: 50/50/55 us, g 1/256, F 5, R_AI 20 Mbit/s,
R_HAI 200 Mbit/s, min 100 Mbit/s), ECN Kmin 400 KB, Kmax 1600 KB, Pmax
0.2, 1000-byte payloads, a buffer that drops nothing (ns-3: 32 MB with PFC;
here 32 MB of queue) and no in-flight limit.

DIR holds ns-3's traces, one folder per case (N2_sync ... N8_late) with
fct.csv (flow, start_us, end_us, fct_us) and rates_10us.csv (time_us,
flow, rate_gbps: Rc every 10 us), and optionally seed_sweep/fct_stats.csv
(mean and spread over ns-3's seeds).  How they were made (commit, build,
what was logged) is in experiments/README.md ("DCQCN against HPCC's
ns-3").  The simulation runs each case with K seeds of its switch's ECN
draws and prints, per case: the mean FCT over flows, the last completion
and each flow's mean Rc over its life, both sides, and their differences
(target: within 10 %).  On the compiled engine by default (the Python one,
the reference, gives the same figures: tests/experiments/sim/test_engines.py).
Figures, not a timed test.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path
from statistics import mean

from experiments.sim.compiled import DEFAULT_ENGINE, ENGINES
from experiments.sim.flows import Incast, run
from hosts.dcqcn_regime import DEPLOYMENT
from hosts.udp.params import UdpParams
from topologies.switch.params import EcnParams

CASES = [(n, mode) for n in (2, 4, 8) for mode in ("sync", "late")]
FLOW_BYTES = 10_000_000
LATE_S = 1e-3
LINK_DELAY_MS = 0.0025
BUFFER_PKTS = 32_000               # 32 MB of 1000-byte packets: no drop
UNBOUNDED_WINDOW = 8192            # the SACK's reach: far above any flow's in-flight here
TARGET_PCT = 10.0


def network(n: int, seed: int) -> Incast:
    d = DEPLOYMENT
    udp = UdpParams(payload_bytes=d.packet_bytes, rto_ms=1.0, window_packets=UNBOUNDED_WINDOW, ack_every=1,
                    ack_delay_ms=d.base_rtt_s * 1e3, rto_max_ms=100.0)
    ecn = EcnParams(kmin=round(d.kmin_bytes / d.packet_bytes), kmax=round(d.kmax_bytes / d.packet_bytes),
                    pmax=d.pmax)
    return Incast(n, d.line_rate_bps / 1e6, LINK_DELAY_MS, BUFFER_PKTS, ecn, udp, d.dcqcn, seed=seed)


def simulate(n: int, mode: str, seed: int, engine: str = DEFAULT_ENGINE) -> dict:
    starts = [0.0] * n if mode == "sync" else [0.0] * (n - 1) + [LATE_S]
    flows = run(network(n, seed), [FLOW_BYTES] * n, starts, until=0.2, engine=engine)
    return {"fct_us": [f.fct_s * 1e6 if f.fct_s is not None else None for f in flows],
            "end_us": max(f.end_s or 0.0 for f in flows) * 1e6,
            "mean_rc_gbps": [mean_rate(f.rates, f.start_s, f.end_s) for f in flows]}


def mean_rate(changes: list[tuple[float, float, float]], start: float, end: float | None) -> float | None:
    """Rc's time average over the flow's life (line rate until its first change)."""
    if end is None:
        return None
    line = DEPLOYMENT.line_rate_bps
    t, rc, area = start, line, 0.0
    for when, r, _ in changes:
        if when > end:
            break
        area += rc * (max(when, start) - t)
        t, rc = max(when, start), r
    area += rc * (end - t)
    return area / (end - start) / 1e9


def reference(folder: Path) -> dict:
    fct = {int(r["flow"]): r for r in csv.DictReader((folder / "fct.csv").open())}
    by_flow: dict[int, list[tuple[float, float]]] = {}
    for r in csv.DictReader((folder / "rates_10us.csv").open()):
        by_flow.setdefault(int(r["flow"]), []).append((float(r["time_us"]), float(r["rate_gbps"])))
    return {"fct_us": [float(fct[k]["fct_us"]) for k in sorted(fct)],
            "end_us": max(float(fct[k]["end_us"]) for k in fct),
            "mean_rc_gbps": [mean(v for _, v in by_flow[k]) for k in sorted(by_flow)]}


def seed_sweep(ref_dir: Path) -> dict[str, dict]:
    path = ref_dir / "seed_sweep" / "fct_stats.csv"
    if not path.is_file():
        return {}
    out: dict[str, dict] = {}
    for r in csv.DictReader(path.open()):
        stats = {k: float(r[k]) for k in ("fct_mean_us", "fct_min_us", "fct_max_us")}
        out.setdefault(r["case"], {})[r["flow"]] = stats
    return out


def pct(ours: float, theirs: float) -> float:
    return (ours - theirs) / theirs * 100.0


def compare(n: int, mode: str, ours: list[dict], ref: dict, sweep: dict) -> dict:
    def avg(key):
        return mean(mean(x for x in o[key] if x is not None) for o in ours)
    fct, rc = avg("fct_us"), avg("mean_rc_gbps")
    end = mean(o["end_us"] for o in ours)
    ref_fct, ref_rc = mean(ref["fct_us"]), mean(ref["mean_rc_gbps"])
    case = f"N{n}_{mode}"
    sweep_flows = [v["fct_mean_us"] for k, v in sweep.get(case, {}).items() if k != "last_completion"]
    ref_fct_seeds = mean(sweep_flows) if sweep_flows else None
    ref_end_seeds = sweep.get(case, {}).get("last_completion", {}).get("fct_mean_us")
    return {"case": case, "sim_mean_fct_us": fct, "ns3_mean_fct_us": ref_fct, "ns3_seeds_mean_fct_us": ref_fct_seeds,
            "fct_diff_pct": pct(fct, ref_fct_seeds or ref_fct), "sim_end_us": end,
            "ns3_end_us": ref["end_us"], "ns3_seeds_end_us": ref_end_seeds,
            "end_diff_pct": pct(end, ref_end_seeds or ref["end_us"]),
            "sim_mean_rc_gbps": rc, "ns3_mean_rc_gbps": ref_rc, "rc_diff_pct": pct(rc, ref_rc),
            "sim_fct_us": [o["fct_us"] for o in ours], "ns3_fct_us": ref["fct_us"]}


def line(r: dict) -> str:
    ns3_fct = r["ns3_seeds_mean_fct_us"] or r["ns3_mean_fct_us"]
    ns3_end = r["ns3_seeds_end_us"] or r["ns3_end_us"]
    return (f"{r['case']:8}  mean FCT {r['sim_mean_fct_us']:7.0f} us (ns-3 {ns3_fct:7.0f}) {r['fct_diff_pct']:+5.1f} %"
            f"   last {r['sim_end_us']:7.0f} us (ns-3 {ns3_end:7.0f}) {r['end_diff_pct']:+5.1f} %"
            f"   mean Rc {r['sim_mean_rc_gbps']:5.1f} Gbit/s (ns-3 {r['ns3_mean_rc_gbps']:5.1f})"
            f" {r['rc_diff_pct']:+5.1f} %")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m experiments.bench.dcqcn_reference",
                                 description=__doc__.split("\n")[0])
    ap.add_argument("--reference", type=Path, required=True, metavar="DIR", help="ns-3's traces, one folder per case")
    ap.add_argument("--seeds", type=int, default=3, metavar="K", help="the simulation's seeds per case (default 3)")
    ap.add_argument("--json", type=Path, default=None, metavar="FILE", help="write the figures here too")
    ap.add_argument("--engine", choices=ENGINES, default=DEFAULT_ENGINE,
                    help=f"the simulation's engine (default {DEFAULT_ENGINE})")
    args = ap.parse_args(argv)
    missing = [f"N{n}_{m}" for n, m in CASES if not (args.reference / f"N{n}_{m}" / "fct.csv").is_file()]
    if missing:
        print(f"dcqcn_reference: {args.reference} lacks {', '.join(missing)} (fct.csv)", file=sys.stderr)
        return 2
    sweep = seed_sweep(args.reference)
    rows = []
    for n, mode in CASES:
        ours = [simulate(n, mode, seed, args.engine) for seed in range(1, args.seeds + 1)]
        rows.append(compare(n, mode, ours, reference(args.reference / f"N{n}_{mode}"), sweep))
        print(line(rows[-1]), flush=True)
    worst = max(max(abs(r[k]) for k in ("fct_diff_pct", "end_diff_pct", "rc_diff_pct")) for r in rows)
    print(f"largest difference {worst:.1f} % (target: within {TARGET_PCT:g} %)")
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "seeds": args.seeds, "engine": args.engine}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
