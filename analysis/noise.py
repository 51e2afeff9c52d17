"""Whether a job's change is told apart from run-to-run noise (pure).

A batch's change per job is one draw of a noisy quantity: the same
scenario gives a victim's change a few points apart from one repeat to
the next, a large job's one or two (experiments/README.md, "Over their
repeats").  A small change, the kind the oracle predicts when a job has
nothing to gain, means something only against that noise.  The rule here
is the plain one: the mean of the repeats' changes against twice its
standard error (the repeats' standard deviation over the square root of
their count).  With two to four repeats that is looser than a 95 %
interval; it is a reading aid, said as such, not a test.
"""

from __future__ import annotations

import math
from statistics import fmean, stdev

STANDARD_ERRORS = 2     # how many standard errors of the mean a change must lie from zero


def spread(changes: list[float]) -> float | None:
    """The per-repeat changes' standard deviation; None below two repeats."""
    return stdev(changes) if len(changes) > 1 else None


def change_noise(changes: list[float]) -> dict | None:
    """The mean of the per-repeat changes (percent), its half-width of
    ``STANDARD_ERRORS`` standard errors, and whether the mean lies beyond
    it.  None below two repeats: one run says nothing of its own noise."""
    sd = spread(changes)
    if sd is None:
        return None
    mean = fmean(changes)
    half = STANDARD_ERRORS * sd / math.sqrt(len(changes))
    return {"mean_pct": mean, "half_width_pct": half, "repeats": len(changes),
            "beyond_noise": abs(mean) > half}


def describe(noise: dict) -> str:
    """One reading of ``change_noise``, in words."""
    verdict = ("beyond the run-to-run noise" if noise["beyond_noise"]
               else "within the run-to-run noise: not told apart from no change")
    return (f"{noise['mean_pct']:+.1f} % +- {noise['half_width_pct']:.1f} "
            f"({STANDARD_ERRORS} standard errors over {noise['repeats']} repeats): {verdict}")
