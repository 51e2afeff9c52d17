"""How fast the simulation runs, on one core:

    python3 -m experiments.bench.sim_speed [--config PATH] [--deployment] [--coarse C] [--variant V]
                                           [--ring64 | --cluster N | --sweep-hosts] [--until S] [--engine E]
                                           [--json FILE]

One run (one variant, repeat 1) of a config (default: the demo's,
victim_straggle8), at its own rates or at the deployment's scale with C
packets as one; --ring64: a 64-rank ring on a 128-host leaf-spine (16
leaves, 4 spines, interleaved, one iteration, a straggler) instead;
--cluster N: the busy cluster of N hosts (experiments/bench/cluster.py:
16 jobs of 16 to 64 ranks, stragglers); --sweep-hosts: that cluster at
16 to 1,024 hosts, each in a process of its own, a table of frames per
CPU second and peak memory, so the cost's growth shows; --until S: only
the first S seconds of virtual time, the same frames and events every
time, so two builds of the engine compare on a few seconds of CPU rather
than on a whole run (the rate changes as a run goes on).  Prints
the wall and CPU time, the virtual time simulated, the frames (a frame
leaving a NIC or a switch port: every packet hop) and events, each per
second of CPU, and a progress line every 10 s of wall time.  Targets
(issue 52), full packets at the deployment's scale on one core: the demo
in at most 60 s and at 1,000,000 frames a CPU second or more, the 64-rank
ring in at most 10 minutes; the 1,024-host cluster at 32 as one in at
most 60 minutes and 4 GB.  Figures, not a timed test.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from experiments import config as C
from experiments.bench.cluster import cluster
from experiments.cli import positive_seconds
from experiments.config.scale import deployment_scaling, scale
from experiments.plan import run_plan, wall_deadline_s
from experiments.sim.compiled import DEFAULT_ENGINE, ENGINES
from experiments.sim.run import SimRun

DEMO = Path(__file__).resolve().parents[1] / "configs" / "victim_straggle8.toml"
RING64 = {
    "name": "ring64", "seed": 1, "repeats": 1,
    "topology": {"kind": "leafspine", "hosts": 128, "leaves": 16, "spines": 4, "host_rate_mbit": 100,
                 "fabric_rate_mbit": 200},
    "jobs": [{"ranks": 64, "placement": "interleave", "message_bytes": 6_400_000, "iterations": 1}],
    "jitter": [{"kind": "compute", "job": 1, "rank": "random", "iter": 0, "delay_s": 0.5}],
}


def measure(spec: C.ExperimentSpec, variant: str, data: bool, say=print, engine: str = DEFAULT_ENGINE,
            until_s: float | None = None) -> dict:
    plan = run_plan(spec, variant, 1, netem_ok=True, target="sim")
    deadline = wall_deadline_s(spec, plan.jobs)
    with tempfile.TemporaryDirectory() as d:
        sim = SimRun(plan, Path(d), data=data, engine=engine)
        wall0, cpu0 = time.perf_counter(), time.process_time()
        sim.run(deadline if until_s is None else min(until_s, deadline), progress=lambda line: say(f"  {line}"))
        wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
        sim.close()
        frames, events = sim.net.frames_sent(), sim.engine.events
        return {"config": spec.name, "variant": variant, "engine": engine, "wall_s": wall, "cpu_s": cpu,
                "virtual_s": sim.engine.now,
                "frames": frames, "events": events, "frames_per_cpu_s": frames / cpu, "events_per_cpu_s": events / cpu,
                "agents_ok": all(r.code == 0 for r in sim.ranks)}


SWEEP_HOSTS = (16, 64, 256, 1024)


def spec_of(args) -> C.ExperimentSpec:
    if args.cluster:
        spec = C.resolve(cluster(args.cluster))
    else:
        spec = C.resolve(json.loads(json.dumps(RING64))) if args.ring64 else C.load(args.config)
    return scale(spec, deployment_scaling(spec, args.coarse)) if args.deployment else spec


def line(r: dict, args) -> str:
    where = " at the deployment scale" if args.deployment else ""
    return (f"{r['config']} {r['variant']} ({r['engine']} engine){where}"
            f"{f', {args.coarse} packets as one' if args.coarse > 1 else ''}: {r['wall_s']:.1f} s wall, "
            f"{r['cpu_s']:.1f} s CPU for {r['virtual_s']:.4f} s simulated; {r['frames']} frames "
            f"({r['frames_per_cpu_s']:.0f} per CPU second), {r['events']} events ({r['events_per_cpu_s']:.0f} per CPU "
            f"second); peak memory {r['peak_mib']:.0f} MiB; every agent ok: {r['agents_ok']}")


def sweep_hosts(args) -> list[dict]:
    """The busy cluster at each size, each in a process of its own, so each
    peak memory is that size's alone."""
    rows = []
    for n in SWEEP_HOSTS:
        with tempfile.NamedTemporaryFile(suffix=".json") as out:
            cmd = [sys.executable, "-m", "experiments.bench.sim_speed", "--cluster", str(n), "--coarse",
                   str(args.coarse), "--variant", args.variant, "--engine", args.engine, "--json", out.name]
            subprocess.run(cmd + (["--deployment"] if args.deployment else []), check=True)
            rows.append({"hosts": n, **json.loads(Path(out.name).read_text())})
    print("hosts  ranks  frames        CPU s   frames/CPU s  peak MiB")
    for r in rows:
        print(f"{r['hosts']:>5}  {r['ranks']:>5}  {r['frames']:>12}  {r['cpu_s']:>6.1f}  {r['frames_per_cpu_s']:>12.0f}"
              f"  {r['peak_mib']:>8.0f}")
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m experiments.bench.sim_speed", description=__doc__.split("\n")[0])
    ap.add_argument("--config", type=Path, default=DEMO)
    ap.add_argument("--deployment", action="store_true")
    ap.add_argument("--coarse", type=int, default=1, metavar="C")
    ap.add_argument("--variant", default="symphony", choices=("baseline", "symphony"))
    which = ap.add_mutually_exclusive_group()
    which.add_argument("--ring64", action="store_true")
    which.add_argument("--cluster", type=int, metavar="N", help="the busy cluster of N hosts (bench/cluster.py)")
    which.add_argument("--sweep-hosts", action="store_true", help=f"the busy cluster at {SWEEP_HOSTS} hosts")
    ap.add_argument("--until", type=positive_seconds("the virtual time to simulate"), default=None, metavar="S",
                    help="only the first S seconds of virtual time (to compare two builds)")
    ap.add_argument("--engine", default=DEFAULT_ENGINE, choices=ENGINES)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    if args.sweep_hosts:
        rows = sweep_hosts(args)
        if args.json:
            args.json.write_text(json.dumps(rows, indent=1))
        return 0
    spec = spec_of(args)
    r = measure(spec, args.variant, data=not args.deployment, engine=args.engine, until_s=args.until)
    r["ranks"] = sum(j.ranks for j in spec.jobs)
    r["peak_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(line(r, args))
    if args.json:
        args.json.write_text(json.dumps(r, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
