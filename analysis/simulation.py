"""The simulation beside the measured runs: reading the simulation file the
runner writes (``<experiment dir>/<stamp>-sim.json``, schema
``symphony-sim/1``, written by experiments/summary.py from
experiments/sim/predict.py), and what it says of the batch.

    {"schema", "experiment", "stamp",
     "scales": {"config" | "deployment": {"jobs": {"<id>": {"baseline_cct_s",
                "symphony_cct_s", "cct_change_pct"}}, ["k"], ["coarse"]}},
     ["confirmation": {"k", "agrees", "up_to", "deployment", "rungs", "errors"}],
     "runs": [{"scale", "repeat", "variant", "cached", "wall_s", "frames",
               "events", ["error"]}]}

``config``: the simulation at the config's own rates (the network the
emulation emulates, without its artefacts), unscaled or, for a batch run
with ``--confirm``, at the batch's --scale K (its ``k``; the document then
keeps the confirmation's record under ``confirmation``); ``deployment``: the same
scenario as the declared deployment would run it (docs/design.md,
"Scaling").  Times are in the config's own units.

``verdict``: where the two disagree on a job's change by more than
AGREE_POINTS, the emulation at this scale cannot answer for a real cluster;
the regime ratio furthest from the deployment's (analysis.regime's table,
the runs' measured value where there is one, else the parameters' own) is
named as the likely reason.  Pure but for ``find_sim`` and ``load_sim``.
"""

from __future__ import annotations

import math
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
            scale: float = 1.0, sim_k: float = 1.0) -> list[str]:
    """One line per job whose change differs by more than AGREE_POINTS
    between the config's scale and the deployment's (module docstring),
    naming the regime ratio furthest from the deployment's
    (analysis.regime.job_verdicts' first ratio off).  ``scale``: the
    emulation's --scale K of the batch; ``sim_k``: the K the simulation's
    ``config`` figures are of (1: the config's own, unscaled; a --confirm
    batch's: its K).  Where the two differ, the line says that of the
    config and leaves this batch to its regime verdict; where they are the
    same K and every job agrees, one line says the batch answers for the
    deployment as far as the simulation can say."""
    same = math.isclose(scale, sim_k)
    lines = [_disagree(job, here, there, (regime_verdicts.get(job) or {}).get("off") or [], scale, same)
             for job, here, there in _pairs(jobs) if abs(here - there) > AGREE_POINTS]
    if confirmed(jobs, scale, sim_k):
        lines.append(f"the simulation of this batch's network (K = {scale:g}) agrees with the deployment's within "
                     f"{AGREE_POINTS:g} points on every job: the batch answers for the deployment as far as the "
                     "simulation can say")
    return lines


# what an out-of-regime job of a confirmed batch (``confirmed``) is told
CONFIRMED_NOTE = (f"but the simulation of this batch's K agrees with the deployment's within {AGREE_POINTS:g} points "
                  "on every job (the regime's second criterion): its measured change stands for the deployment as "
                  "far as the simulation can say")


def confirmed(jobs: dict[str, dict[str, Any]], scale: float, sim_k: float) -> bool:
    """A scaled batch whose simulated network (its own K) agrees with the
    deployment's within AGREE_POINTS on every job: the regime's second
    criterion (docs/design.md, "Scaling"), whatever its ratios say."""
    pairs = list(_pairs(jobs))
    return (scale != 1.0 and math.isclose(scale, sim_k) and bool(pairs)
            and all(abs(here - there) <= AGREE_POINTS for _, here, there in pairs))


def _pairs(jobs: dict[str, dict[str, Any]]) -> Iterable[tuple[str, float, float]]:
    """(job, change at the config's scale, change at the deployment's) where both are known."""
    for job, scales in jobs.items():
        here = (scales.get(CONFIG_SCALE) or {}).get("cct_change_pct")
        there = (scales.get(DEPLOYMENT_SCALE) or {}).get("cct_change_pct")
        if here is not None and there is not None:
            yield job, here, there


def _disagree(job: str, here: float, there: float, off: list[dict[str, Any]], scale: float, same: bool) -> str:
    if not same:
        return (f"job {job}: the simulation gives {here:+.1f} % at the config's own scale and "
                f"{there:+.1f} % at the deployment's: unscaled, the emulation could not answer for a "
                f"real cluster; this batch ran at K = {scale:g} (its regime verdict says whether that "
                f"is in the deployment's regime by its ratios; `experiments check CONFIG --confirm` "
                f"simulates that K against the deployment's scale)")
    where = "at the config's rates" if scale == 1.0 else f"of this batch's network (K = {scale:g})"
    line = (f"job {job}: the simulation gives {here:+.1f} % {where} and {there:+.1f} % at the "
            f"deployment's scale: the emulation at this scale cannot answer for a real cluster")
    if off:
        o = off[0]
        return line + (f"; the regime ratio furthest from the deployment's: {o['ratio']} {o['value']:.3g} "
                       f"(there {o['target']:.3g})")
    if scale != 1.0:
        return line + ("; every regime ratio is within its band, and the answer still moves with K (a larger "
                       "--confirm-up-to climbs further)")
    return line


def _config_factor(doc: dict[str, Any] | None, key: str) -> float:
    """A factor the document's ``config`` figures are of (1 where it does not say)."""
    return float(((((doc or {}).get("scales") or {}).get(CONFIG_SCALE) or {}).get(key)) or 1.0)


def config_k(doc: dict[str, Any] | None) -> float:
    """The K the document's ``config`` figures are of (1 where it does not say)."""
    return _config_factor(doc, "k")


def config_rate(doc: dict[str, Any] | None) -> float:
    """The --rate the document's ``config`` figures are of (1 where it does not say)."""
    return _config_factor(doc, "rate")
