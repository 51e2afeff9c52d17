"""How late the agent's loop serves DCQCN timers and pacing, under load:

    python3 -m experiments.bench.timers [--agents 8,16] [--busy 0,2] [--seconds 20]
                                        [--rate-mbit 10] [--period-ms 1] [--mark 0.02]

For each (agents, busy loops) case: that many real agents (hosts.agent's
Agent over the UDP transport) run one ring AllReduce job on loopback
addresses 127.77.<case>.<rank+1>, beside that many processes spinning in a
busy loop (stand-ins for the switch processes and whatever else shares the
cores).  Each data packet a receiver sees counts as CE-marked with
probability --mark, so CNPs flow and every sender's DCQCN timers run
(periods --period-ms, the paper preset otherwise, a minimum rate of 10 % of
line so no flow stalls).  Each agent records, without changing hosts/:

- timer lateness: when the loop ran a reaction-point call that found a
  timer event due, how long after that event's time it ran (what the
  sender's pacer sees late: the reaction point's state itself is exact);
- pacing lateness: when the pacer held a packet until time T (the window was
  open, only the rate held it), how long after T the loop sent it.

Prints the distribution (median, p90, p99, max, in ms) per case, after the
first second (start-up).  Notes the load average before each case: the
machine is shared.  Needs no root (loopback only).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import random
import signal
import sys
import tempfile
import time
from itertools import product
from pathlib import Path

from analysis.metrics import quantile
from contract.events import EventLog
from hosts.agent import Agent
from hosts.job import parse_job

WARMUP_S = 1.0          # samples from the first second (agents still starting) are dropped
DATA_PORT = 46000       # + the case index; the control port is one above


class _Stop(BaseException):
    """The worker's time is up (raised by its alarm, through the agent's loop)."""


def _stop(signum, frame):
    raise _Stop()


class TimedReactionPoint:
    """A reaction point that records how late each call ran a due timer event."""

    def __init__(self, rp, t0: float, out: list):
        self._rp, self._t0, self._out = rp, t0, out

    def __getattr__(self, name):
        return getattr(self._rp, name)

    def _record(self, now: float) -> None:
        due = self._rp.next_event_time()
        if due <= now and now - self._t0 >= WARMUP_S:
            self._out.append(now - due)

    def advance(self, now: float) -> bool:
        self._record(now)
        return self._rp.advance(now)

    def on_cnp(self, now: float) -> bool:
        self._record(now)
        return self._rp.on_cnp(now)

    def on_bytes_sent(self, n: int, now: float) -> bool:
        self._record(now)
        return self._rp.on_bytes_sent(n, now)


class MarkingNotificationPoint:
    """A notification point that sees each data packet CE-marked with probability p."""

    def __init__(self, np_, p: float, seed: int):
        self._np, self._p, self._rng = np_, p, random.Random(seed)

    def __getattr__(self, name):
        return getattr(self._np, name)

    def on_data(self, flow_key, ce: bool, now: float) -> bool:
        return self._np.on_data(flow_key, ce or self._rng.random() < self._p, now)


def probe_pacing(sender, t0: float, out: list) -> None:
    """Wrap sender.poll_tx: when the previous call left a packet held by the
    pacer alone (window open, rate set), record how late past its release
    time the next call came."""
    orig = sender.poll_tx
    held = [None]

    def poll_tx(now: float) -> None:
        due = held[0]
        if due is not None and now >= due:
            if now - t0 >= WARMUP_S:
                out.append(now - due)
            held[0] = None
        orig(now)
        if sender.rp.rate_bps and sender._sendable() and now < sender._next_tx:
            held[0] = sender._next_tx
    sender.poll_tx = poll_tx


def job_doc(case: int, n: int, rate_mbit: float, period_ms: float, message_bytes: int) -> dict:
    return {"job": 1, "data_port": DATA_PORT + 2 * case, "message_bytes": message_bytes,
            "iterations": 100000, "seed": 1,
            "ranks": [{"rank": r, "ip": f"127.77.{case}.{r + 1}"} for r in range(n)],
            "deadlines": {"step_s": 600.0, "run_s": 3600.0},
            "dcqcn": {"preset": "paper", "line_rate_mbit": rate_mbit,
                      "alpha_period_ms": period_ms, "decrease_period_ms": period_ms,
                      "increase_period_ms": 1.1 * period_ms, "cnp_interval_ms": period_ms,
                      "min_rate_mbit": 0.1 * rate_mbit, "r_hai_mbit": 0.02 * rate_mbit}}


def worker(doc: dict, rank: int, mark_p: float, seconds: float, out: str, log_dir: str) -> None:
    signal.signal(signal.SIGALRM, _stop)
    spec = parse_job(doc)
    timers: list[float] = []
    pacing: list[float] = []
    with EventLog(Path(log_dir) / f"rank{rank}.jsonl", spec.job, rank) as log:
        agent = Agent(spec, rank, log)
        t0 = time.monotonic()
        sender = agent.tr.ep.sender
        sender.rp = TimedReactionPoint(sender.rp, t0, timers)
        recv = agent.tr.ep.receiver
        recv.np = MarkingNotificationPoint(recv.np, mark_p, seed=rank)
        probe_pacing(sender, t0, pacing)
        agent.tr.open()
        signal.setitimer(signal.ITIMER_REAL, seconds)
        try:
            agent.run()
        except _Stop:
            pass
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            agent.tr.close()
    Path(out).write_text(json.dumps({"timers": timers, "pacing": pacing,
                                     "counters": dict(agent.tr.counters)}))


def spin() -> None:
    while True:
        pass


def summary(xs: list[float]) -> dict:
    xs = sorted(xs)
    if not xs:
        return {"n": 0}
    return {"n": len(xs), "median": quantile(xs, 0.5), "p90": quantile(xs, 0.9),
            "p99": quantile(xs, 0.99), "max": xs[-1]}


def run_case(case: int, n: int, busy: int, args, work: Path) -> dict:
    work.mkdir(parents=True, exist_ok=True)
    doc = job_doc(case, n, args.rate_mbit, args.period_ms, args.message_bytes)
    ctx = mp.get_context("fork")
    load = os.getloadavg()
    spinners = [ctx.Process(target=spin, daemon=True) for _ in range(busy)]
    for p in spinners:
        p.start()
    outs = [work / f"rank{r}.json" for r in range(n)]
    procs = [ctx.Process(target=worker, args=(doc, r, args.mark, args.seconds, str(outs[r]), str(work)))
             for r in range(n)]
    try:
        for p in procs:
            p.start()
        for p in procs:
            p.join(args.seconds + 60)
    finally:
        for p in spinners + procs:
            if p.is_alive():
                p.terminate()
                p.join(5)
    timers, pacing, cnps, ranks_ok = [], [], 0, 0
    for o in outs:
        if o.exists():
            d = json.loads(o.read_text())
            timers += d["timers"]
            pacing += d["pacing"]
            cnps += d["counters"].get("rx_cnp", 0)
            ranks_ok += 1
    return {"agents": n, "busy": busy, "load_before": load, "ranks_reported": ranks_ok,
            "rx_cnp": cnps, "timers": summary(timers), "pacing": summary(pacing)}


def fmt(s: dict) -> str:
    if not s["n"]:
        return f"{'-':>7} {'-':>7} {'-':>7} {'-':>7} {0:>8}"
    return (f"{s['median'] * 1e3:>7.3f} {s['p90'] * 1e3:>7.3f} {s['p99'] * 1e3:>7.3f} "
            f"{s['max'] * 1e3:>7.1f} {s['n']:>8}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m experiments.bench.timers",
                                 description=__doc__.split("\n")[0])
    ap.add_argument("--agents", default="8,16", help="agents per case, comma separated")
    ap.add_argument("--busy", default="0,2", help="busy-loop processes per case, comma separated")
    ap.add_argument("--seconds", type=float, default=20.0, help="length of each case")
    ap.add_argument("--rate-mbit", type=float, default=10.0, help="line rate the senders pace at")
    ap.add_argument("--period-ms", type=float, default=1.0, help="DCQCN alpha/decrease/CNP period "
                                                                 "(increase: 1.1 x)")
    ap.add_argument("--mark", type=float, default=0.02, help="probability a data packet counts as marked")
    ap.add_argument("--message-bytes", type=int, default=200_000, help="per rank (the demo's)")
    ap.add_argument("--json", help="also write the results to this file")
    args = ap.parse_args(argv)
    try:
        agents = [int(x) for x in args.agents.split(",") if x.strip()]
        busy = [int(x) for x in args.busy.split(",") if x.strip()]
    except ValueError:
        print("experiments.bench.timers: --agents and --busy take integers like 8,16", file=sys.stderr)
        return 2
    if not agents or min(agents) < 2 or max(agents) > 250 or min(busy, default=0) < 0 \
            or args.seconds <= WARMUP_S or not 0 <= args.mark <= 1:
        print("experiments.bench.timers: need 2..250 agents, busy >= 0, --seconds > 1 and "
              "--mark in [0, 1]", file=sys.stderr)
        return 2
    base = Path(tempfile.mkdtemp(prefix="symtimers-"))
    print(f"{os.cpu_count()} cores; line {args.rate_mbit:g} Mbit/s, DCQCN periods "
          f"{args.period_ms:g} ms, marks p = {args.mark:g}, {args.seconds:g} s a case; lateness in ms")
    print(f"{'agents':>6} {'busy':>4} {'load1':>5} | {'timer lateness: median':>22} {'p90':>7} "
          f"{'p99':>7} {'max':>7} {'samples':>8} | {'pacing lateness: median':>23} {'p90':>7} "
          f"{'p99':>7} {'max':>7} {'samples':>8} | {'CNPs':>6}")
    results = []
    for case, (n, b) in enumerate(product(agents, busy)):
        r = run_case(case, n, b, args, base / f"case{case}")
        results.append(r)
        print(f"{n:>6} {b:>4} {r['load_before'][0]:>5.2f} | {'':>15}{fmt(r['timers'])} | "
              f"{'':>16}{fmt(r['pacing'])} | {r['rx_cnp']:>6}", flush=True)
        if r["ranks_reported"] < n:
            print(f"       ({n - r['ranks_reported']} agents reported nothing: see {base}/case{case})")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
