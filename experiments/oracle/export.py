"""The oracle file the runner writes beside an experiment's runs,
``<experiment dir>/<stamp>-oracle.json`` (pure: this builds the document;
the runner writes it).  analysis/oracle.py reads it (analysis does not
import experiments, so the schema is stated here and there, and a test runs
this writer's output through that reader).

Schema ``symphony-oracle/1``:

    {"schema": "symphony-oracle/1", "experiment": name, "stamp": stamp,
     "sweep_point": {...} | null, "threshold": int,
     "time_origin": "...",                       # t = 0: every agent up (meta.json t0_ns)
     "step_fields": ["job", "rank", "iter", "k", "step", "phase", "start_s", "end_s", "bytes"],
     "jobs": {"<job>": {"baseline_cct_s", "symphony_cct_s", "cct_change_pct", "bound_s"}},  # mean over repeats
     "repeats": {"<repeat>": {
         "notes": [...],                         # what of the schedule the model left out
         "variants": {"baseline" | "symphony": {
             "end_s": float,
             "jobs": {"<job>": {"cct_s": [per iteration], "mean_cct_s": float, "bound_s": float}},
             "steps": [[job, rank, iter, k, step, phase, start_s, end_s, bytes], ...]}}}}}

Times are seconds after the run's t0 (every agent up, the jitter clock's
zero); a step record is one rank's step as the agent logs step_start and
step_end.
"""

from __future__ import annotations

from typing import Any

from experiments.config import ExperimentSpec

from .results import ModelResult
from .scenario import RepeatsPrediction

SCHEMA = "symphony-oracle/1"
STEP_FIELDS = ("job", "rank", "iter", "k", "step", "phase", "start_s", "end_s", "bytes")
TIME_ORIGIN = "seconds after every agent is up (meta.json t0_ns, the jitter clock's zero)"


def _variant(res: ModelResult) -> dict[str, Any]:
    return {
        "end_s": res.end_s,
        "jobs": {str(j): {"cct_s": list(r.cct_s), "mean_cct_s": r.mean_cct_s, "bound_s": r.bound_s}
                 for j, r in res.jobs.items()},
        "steps": [[s.job, s.rank, s.iteration, s.k, s.step, s.phase, s.start_s, s.end_s, s.bytes]
                  for s in res.steps],
    }


def document(spec: ExperimentSpec, pred: RepeatsPrediction, stamp: str) -> dict[str, Any]:
    """The oracle file's content for one experiment (or sweep point)."""
    return {
        "schema": SCHEMA, "experiment": spec.name, "stamp": stamp, "sweep_point": spec.sweep_point,
        "threshold": spec.symphony.threshold, "time_origin": TIME_ORIGIN, "step_fields": list(STEP_FIELDS),
        "jobs": {str(j): p.as_dict() for j, p in pred.jobs.items()},
        "repeats": {str(rep): {"notes": list(pred.notes[rep]),
                               "variants": {p.baseline.variant: _variant(p.baseline),
                                            p.symphony.variant: _variant(p.symphony)}}
                    for rep, p in pred.repeats.items()},
    }
