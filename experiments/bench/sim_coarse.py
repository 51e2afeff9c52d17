"""Coarse packets against finer ones: what simulating C of the deployment's
packets as one (experiments run --target sim --deployment --coarse C) does
to Symphony's change per job, and what it saves:

    python3 -m experiments.bench.sim_coarse [--config PATH ...] [--coarse 1 8 32] [--repeat N]
                                            [--cache DIR] [--json FILE]

For each config (default: every shipped config with UDP jobs only), each
coarse factor and each repeat, both variants at the deployment's scale
(experiments.sim.predict's runs, cached in --cache, default
results/.sim-cache); prints per job the change at each factor, its
difference from the finest factor's (the error, in points; target: under 2
points for the factor a batch's prediction uses), and the CPU and frames
each factor took, and a line on stderr as each run ends.  Figures, not a
timed test.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from analysis.simulation import DEPLOYMENT_SCALE
from experiments import config as C
from experiments.config.scale import deployment_scaling, scale
from experiments.sim.predict import SIM_CACHE, Task, run_cached
from experiments.sim.run import refusal
from topologies.network.links import VIA_TWIN

CONFIGS = Path(__file__).resolve().parents[1] / "configs"
TARGET_POINTS = 2.0


def shipped() -> list[Path]:
    out = []
    for p in sorted(CONFIGS.glob("*.toml")):
        spec = C.load(p)
        if not refusal(spec) and not spec.sweep:
            out.append(p)
    return out


def changes(spec: C.ExperimentSpec, coarse: int, repeats: int, cache: Path) -> tuple[dict[str, float], dict]:
    """Per job the mean change over the repeats at one coarse factor, and the
    work it took (CPU seconds, frames)."""
    sc = deployment_scaling(spec, coarse)
    scaled = scale(spec, sc)
    per: dict[str, dict[str, list[float]]] = {}
    work = {"cpu_s": 0.0, "frames": 0, "cached": 0}
    for rep in range(1, repeats + 1):
        for variant in ("baseline", "symphony"):
            t = time.process_time()
            r = run_cached(Task(DEPLOYMENT_SCALE, rep, variant, scaled, sc, VIA_TWIN), cache)
            cpu = time.process_time() - t
            work["cpu_s"] += cpu
            work["cached"] += bool(r.get("cached"))
            work["frames"] += (r.get("sim") or {}).get("frames") or 0
            # A run at 32 as one can take a quarter of an hour of one core:
            # say each as it ends, so a long bench is not silent.
            print(f"  {spec.name} coarse {coarse} {variant} repeat {rep}: "
                  + ("cached" if r.get("cached") else f"{cpu:.0f} s CPU"),
                  file=sys.stderr, flush=True)
            for job, row in r.get("jobs", {}).items():
                per.setdefault(job, {}).setdefault(variant, []).append(row["cct_mean_s"])
    out = {}
    for job, v in per.items():
        b, s = sum(v["baseline"]) / len(v["baseline"]), sum(v["symphony"]) / len(v["symphony"])
        out[job] = (s - b) / b * 100
    return out, work


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m experiments.bench.sim_coarse", description=__doc__.split("\n")[0])
    ap.add_argument("--config", type=Path, action="append", default=None, metavar="PATH")
    ap.add_argument("--coarse", type=int, nargs="+", default=[8, 32], metavar="C")
    ap.add_argument("--repeat", type=int, default=1, metavar="N")
    ap.add_argument("--cache", type=Path, default=Path("results") / SIM_CACHE, metavar="DIR")
    ap.add_argument("--json", type=Path, default=None, metavar="FILE")
    args = ap.parse_args(argv)
    args.cache.mkdir(parents=True, exist_ok=True)
    factors = sorted(set(args.coarse))
    rows = []
    for path in args.config or shipped():
        spec = C.load(path)
        by_c = {}
        for c in factors:
            by_c[c] = changes(spec, c, args.repeat, args.cache)
            print(f"{spec.name}: coarse {c}: " + ", ".join(f"job {j} {v:+.1f} %" for j, v in by_c[c][0].items())
                  + f" ({by_c[c][1]['cpu_s']:.0f} s CPU, {by_c[c][1]['frames']} frames"
                  + (f", {by_c[c][1]['cached']} cached" if by_c[c][1]["cached"] else "") + ")", flush=True)
        finest = by_c[factors[0]][0]
        for c in factors[1:]:
            err = {j: by_c[c][0][j] - finest[j] for j in finest if j in by_c[c][0]}
            worst = max((abs(e) for e in err.values()), default=0.0)
            print(f"  coarse {c} against {factors[0]}: " + ", ".join(f"job {j} {e:+.2f} points" for j, e in err.items())
                  + f" (worst {worst:.2f}; target under {TARGET_POINTS:g})", flush=True)
        rows.append({"config": str(path), "by_coarse": {str(c): {"changes": v[0], **v[1]} for c, v in by_c.items()}})
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
