"""In the deployment's regime before a run (experiments/config/regime.py):
the ratios a config makes, and the smallest --scale K that puts every job
within a factor 2 of the deployment's."""

from __future__ import annotations

import json

from experiments import config as C
from experiments.config.regime import LADDER, auto_scale, predicted
from experiments.config.scale import Scaling, scale
from tests.harness import REPO

DEMO = C.load(REPO / "experiments" / "configs" / "victim_straggle8.toml")


def test_the_demo_as_configured_is_far_from_the_regime_and_rtt_per_step_is_why():
    jobs = predicted(DEMO)
    assert [j.job for j in jobs] == [1, 2]
    for j in jobs:
        assert j.verdict["in_regime"] is False and j.verdict["off"][0]["ratio"] == "rtt_per_step"
        assert j.ratios["rtt_per_step"] > 0.02          # tens of RTTs per step, not a thousand


def test_auto_picks_the_smallest_k_of_the_ladder_in_regime():
    auto = auto_scale(DEMO)
    assert auto.in_regime and auto.k in LADDER
    below = LADDER[LADDER.index(auto.k) - 1]
    assert not all(j.verdict["in_regime"] for j in predicted(scale(DEMO, Scaling(below))))
    for j in predicted(scale(DEMO, Scaling(auto.k))):
        assert j.verdict["in_regime"] and 0.0005 <= j.ratios["rtt_per_step"] <= 0.002


def test_a_step_the_timers_are_pinned_to_keeps_the_periods_out_whatever_k():
    raw = json.loads(json.dumps(DEMO.as_dict()))
    raw["dcqcn"] = {"preset": "emulation", "step_ms": 800}     # the old demo's: periods that do not grow with K
    for key in ("sweep_point",):
        raw.pop(key, None)
    spec = C.resolve(raw)
    auto = auto_scale(spec)
    assert not auto.in_regime
    assert "step_per_decrease_period" in auto.describe() and "no K up to 1000" in auto.describe()
