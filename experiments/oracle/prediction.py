"""Both variants of one scenario side by side: what `experiments model`
prints per job (means over iterations; the names are the ones the issue
fixes for `--json`)."""

from __future__ import annotations

from dataclasses import dataclass

from .flowmodel import simulate
from .inputs import ModelInput
from .results import ModelResult


@dataclass(frozen=True)
class JobPrediction:
    job: int
    baseline_cct_s: float       # mean CCT over the job's iterations
    symphony_cct_s: float
    cct_change_pct: float       # (symphony - baseline) / baseline x 100: below 0 when Symphony is faster
    bound_s: float              # bandwidth bound of one iteration

    def as_dict(self) -> dict[str, float]:
        return {"baseline_cct_s": self.baseline_cct_s, "symphony_cct_s": self.symphony_cct_s,
                "cct_change_pct": self.cct_change_pct, "bound_s": self.bound_s}


@dataclass(frozen=True)
class Prediction:
    jobs: dict[int, JobPrediction]
    baseline: ModelResult
    symphony: ModelResult


def change_pct(baseline: float, symphony: float) -> float:
    return (symphony - baseline) / baseline * 100 if baseline > 0 else 0.0


def predict(mi: ModelInput, threshold: int = 1) -> Prediction:
    """Run the baseline and Symphony on the same input."""
    base = simulate(mi, "baseline", threshold)
    sym = simulate(mi, "symphony", threshold)
    jobs = {}
    for job_id, b in base.jobs.items():
        s = sym.jobs[job_id]
        jobs[job_id] = JobPrediction(job_id, b.mean_cct_s, s.mean_cct_s,
                                     change_pct(b.mean_cct_s, s.mean_cct_s), b.bound_s)
    return Prediction(jobs, base, sym)
