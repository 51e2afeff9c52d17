"""How fast the simulation runs, on one core:

    python3 -m experiments.bench.sim_speed [--config PATH] [--deployment] [--coarse C] [--variant V]
                                           [--ring64] [--json FILE]

One run (one variant, repeat 1) of a config (default: the demo's,
victim_straggle8), at its own rates or at the deployment's scale with C
packets as one; --ring64: a 64-rank ring on a 128-host leaf-spine (16
leaves, 4 spines, interleaved, one iteration, a straggler) instead.  Prints
the wall and CPU time, the virtual time simulated, the frames (a frame
leaving a NIC or a switch port: every packet hop) and events, each per
second of CPU, and a progress line every 10 s of wall time.  Targets
(issue 21): the demo at the deployment's scale in at most 2 minutes, the
64-rank ring in at most 10.  Figures, not a timed test.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from experiments import config as C
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


def measure(spec: C.ExperimentSpec, variant: str, data: bool, say=print, engine: str = DEFAULT_ENGINE) -> dict:
    plan = run_plan(spec, variant, 1, netem_ok=True, target="sim")
    with tempfile.TemporaryDirectory() as d:
        sim = SimRun(plan, Path(d), data=data, engine=engine)
        wall0, cpu0 = time.perf_counter(), time.process_time()
        sim.run(wall_deadline_s(spec, plan.jobs), progress=lambda line: say(f"  {line}"))
        wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
        sim.close()
        frames, events = sim.net.frames_sent(), sim.engine.events
        return {"config": spec.name, "variant": variant, "engine": engine, "wall_s": wall, "cpu_s": cpu,
                "virtual_s": sim.engine.now,
                "frames": frames, "events": events, "frames_per_cpu_s": frames / cpu, "events_per_cpu_s": events / cpu,
                "agents_ok": all(r.code == 0 for r in sim.ranks)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m experiments.bench.sim_speed", description=__doc__.split("\n")[0])
    ap.add_argument("--config", type=Path, default=DEMO)
    ap.add_argument("--deployment", action="store_true")
    ap.add_argument("--coarse", type=int, default=1, metavar="C")
    ap.add_argument("--variant", default="symphony", choices=("baseline", "symphony"))
    ap.add_argument("--ring64", action="store_true")
    ap.add_argument("--engine", default=DEFAULT_ENGINE, choices=ENGINES)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    spec = C.resolve(json.loads(json.dumps(RING64))) if args.ring64 else C.load(args.config)
    if args.deployment:
        spec = scale(spec, deployment_scaling(spec, args.coarse))
    r = measure(spec, args.variant, data=not args.deployment, engine=args.engine)
    print(f"{r['config']} {r['variant']} ({r['engine']} engine){' at the deployment scale' if args.deployment else ''}"
          f"{f', {args.coarse} packets as one' if args.coarse > 1 else ''}: {r['wall_s']:.1f} s wall, "
          f"{r['cpu_s']:.1f} s CPU for {r['virtual_s']:.4f} s simulated; {r['frames']} frames "
          f"({r['frames_per_cpu_s']:.0f} per CPU second), {r['events']} events ({r['events_per_cpu_s']:.0f} per CPU "
          f"second); every agent ok: {r['agents_ok']}")
    if args.json:
        args.json.write_text(json.dumps(r, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
