"""The simulation beside the measured runs: reading the simulation file the
runner writes (``<experiment dir>/<stamp>-sim.json``, schema
``symphony-sim/1``, written by experiments/summary.py from
experiments/sim/predict.py), and what it says of the batch.

    {"schema", "experiment", "stamp",
     "scales": {"config" | "deployment": {"jobs": {"<id>": {"baseline_cct_s",
                "symphony_cct_s", "cct_change_pct"}}, ["coarse"]}},
     "runs": [{"scale", "repeat", "variant", "cached", "wall_s", "frames",
               "events", ["error"]}]}

``config``: the simulation at the config's own rates (the network the
emulation emulates, without its artefacts); ``deployment``: the same
scenario as the declared deployment would run it (docs/design.md,
"Scaling").  Times are in the config's own units.

``verdict``: where the two disagree on a job's change by more than
AGREE_POINTS, the emulation at this scale cannot answer for a real cluster;
the regime ratio furthest from the deployment's (analysis.regime's table,
the runs' measured value where there is one, else the parameters' own) is
named as the likely reason.  Pure but for ``find_sim`` and ``load_sim``.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from analysis.records import batch_file, read_document

SCHEMA = "symphony-sim/1"
FILE_SUFFIX = "-sim.json"
CONFIG_SCALE, DEPLOYMENT_SCALE = "config", "deployment"
SCALES = (CONFIG_SCALE, DEPLOYMENT_SCALE)
AGREE_POINTS = 5.0           # the two scales agree on a job's change within this many points


def find_sim(run_dirs: Iterable[Path]) -> Path | None:
    return batch_file(run_dirs, FILE_SUFFIX)


def load_sim(path: Path, sink: list[str]) -> dict[str, Any] | None:
    return read_document(path, sink, SCHEMA, "a simulation", "scales")


def job_figures(doc: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    """job -> {scale: {baseline_cct_s, symphony_cct_s, cct_change_pct}}."""
    out: dict[str, dict[str, Any]] = {}
    for scale in SCALES:
        for job, row in (((doc or {}).get("scales") or {}).get(scale) or {}).get("jobs", {}).items():
            out.setdefault(job, {})[scale] = row
    return out


def verdict(jobs: dict[str, dict[str, Any]], regime_verdicts: dict[str, dict[str, Any]],
            scale: float = 1.0) -> list[str]:
    """One line per job whose change differs by more than AGREE_POINTS
    between the config's scale and the deployment's (module docstring),
    naming the regime ratio furthest from the deployment's
    (analysis.regime.job_verdicts' first ratio off).  ``scale``: the
    emulation's --scale K of the batch; the simulation's ``config`` figures
    are the config's own, unscaled, so for a scaled batch the line says
    that of the config and leaves this batch to its regime verdict."""
    lines = []
    for job, scales in jobs.items():
        here = (scales.get(CONFIG_SCALE) or {}).get("cct_change_pct")
        there = (scales.get(DEPLOYMENT_SCALE) or {}).get("cct_change_pct")
        if here is None or there is None or abs(here - there) <= AGREE_POINTS:
            continue
        if scale != 1.0:
            lines.append(f"job {job}: the simulation gives {here:+.1f} % at the config's own scale and "
                         f"{there:+.1f} % at the deployment's: unscaled, the emulation could not answer for a "
                         f"real cluster; this batch ran at K = {scale:g} (its regime verdict says whether that "
                         f"is in the deployment's regime by its ratios; `experiments check CONFIG --confirm` "
                         f"simulates that K against the deployment's scale)")
            continue
        line = (f"job {job}: the simulation gives {here:+.1f} % at the config's rates and {there:+.1f} % at the "
                f"deployment's scale: the emulation at this scale cannot answer for a real cluster")
        off = (regime_verdicts.get(job) or {}).get("off") or []
        if off:
            o = off[0]
            line += (f"; the regime ratio furthest from the deployment's: {o['ratio']} {o['value']:.3g} "
                     f"(there {o['target']:.3g})")
        lines.append(line)
    return lines
