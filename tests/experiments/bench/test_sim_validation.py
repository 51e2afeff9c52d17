"""experiments/bench/sim_validation.py's arithmetic: the change repeat by
repeat and the emulation against the simulation on the same schedules
(the bench itself runs batches and prints; it asserts nothing)."""

from __future__ import annotations

import math

import pytest

from experiments.bench.sim_validation import paired, repeat_changes


def test_a_repeats_change_is_its_own_symphony_run_against_its_own_baseline():
    ccts = {(1, "baseline"): {"1": 2.0, "2": 1.0}, (1, "symphony"): {"1": 2.2, "2": 0.5},
            (2, "baseline"): {"1": 2.0, "2": None}, (2, "symphony"): {"1": 1.0, "2": 0.4},
            (3, "baseline"): {"1": 4.0}}                     # its Symphony run was not ok: no change
    assert repeat_changes(ccts) == {"1": {1: pytest.approx(10.0), 2: pytest.approx(-50.0)},
                                    "2": {1: pytest.approx(-50.0)}}


def test_paired_differences_over_the_repeats_both_have():
    p = paired({1: 10.0, 2: -20.0, 3: 5.0, 4: 0.0}, {1: 4.0, 2: -30.0, 3: 1.0})
    assert p["repeats"] == [1, 2, 3] and p["diff_points"] == [6.0, 10.0, 4.0]
    assert p["diff_mean_points"] == pytest.approx(20 / 3)
    assert p["diff_se_points"] == pytest.approx(math.sqrt(((6 - 20 / 3) ** 2 + (10 - 20 / 3) ** 2
                                                           + (4 - 20 / 3) ** 2) / 2) / math.sqrt(3))
    assert p["sim_change_std_points"] == pytest.approx(18.8237, abs=1e-3)         # std of 4, -30, 1
    one = paired({1: 10.0}, {1: 4.0})
    assert one["diff_mean_points"] == 6.0 and one["diff_se_points"] is None
