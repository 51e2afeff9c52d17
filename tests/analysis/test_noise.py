"""A change against its own run-to-run noise: the mean of the repeats'
changes against two standard errors."""

import statistics

import pytest

from analysis.noise import change_noise, describe


def test_a_steady_small_cost_is_beyond_the_noise():
    # two spines' large job simulated at K = 20, its four repeats
    n = change_noise([2.2, 1.9, -0.2, 1.4])
    assert n["mean_pct"] == pytest.approx(1.325)
    assert n["half_width_pct"] == pytest.approx(statistics.stdev([2.2, 1.9, -0.2, 1.4]))   # 2 / sqrt(4) = 1
    assert n["beyond_noise"] is True and n["repeats"] == 4


def test_changes_either_side_of_zero_are_within_it():
    n = change_noise([1.5, -1.0, 0.5])
    assert n["beyond_noise"] is False
    assert describe(n) == ("+0.3 % +- 1.5 (2 standard errors over 3 repeats): within the run-to-run noise: "
                           "not told apart from no change")


def test_the_same_mean_with_less_spread_is_told_apart():
    assert change_noise([3.0, -1.0])["beyond_noise"] is False
    assert change_noise([1.2, 0.8])["beyond_noise"] is True


def test_one_repeat_says_nothing_of_its_noise():
    assert change_noise([4.0]) is None and change_noise([]) is None
