"""In the deployment's regime before a run (experiments/config/regime.py):
the ratios a config makes, and the smallest --scale K that puts every job
within a factor 2 of its own ratios in the deployment."""

from __future__ import annotations

import json

import pytest

from experiments import config as C
from experiments.config.budget import packet_budget
from experiments.config.regime import LADDER, auto_scale, budget_words, predicted
from experiments.config.scale import Scaling, scale
from experiments.config.spec import job_specs, scenario_step_s
from hosts import dcqcn
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
    scaled = scale(DEMO, Scaling(auto.k))
    for j in predicted(scaled):
        own = dcqcn.regime_targets(step_fraction=j.line_step_s / scenario_step_s(scaled))["rtt_per_step"]
        assert j.verdict["in_regime"] and own / 2 <= j.ratios["rtt_per_step"] <= own * 2


def test_a_job_with_shorter_steps_is_held_to_its_own_ratios_in_the_deployment():
    """The victim's step is 3/4 of the large job's: in the deployment it runs
    over as many more RTTs per step and as many fewer timer periods."""
    large, victim = predicted(DEMO)
    fraction = victim.line_step_s / large.line_step_s
    assert 0.7 < fraction < 0.8
    for name, power in (("rtt_per_step", -1), ("step_per_decrease_period", 1), ("kmin_per_bdp", 0)):
        off = {o["ratio"]: o["target"] for o in victim.verdict["off"]}
        if name in off:
            assert off[name] == pytest.approx(dcqcn.regime_targets()[name] * fraction ** power)


def test_jobs_of_different_sizes_find_a_k_in_regime_and_share_the_scenarios_timers():
    """fam_sizes: a 2.4 MB job beside a 200 kB one, steps 4 x apart.  Held to
    the deployment's one set of targets, no K put both in regime; held each to
    its own, one does, and both jobs' timers derive from the scenario's step."""
    spec = C.load(REPO / "experiments" / "bench" / "family" / "fam_sizes.toml")
    auto = auto_scale(spec)
    assert auto.in_regime
    large, small = job_specs(scale(spec, Scaling(auto.k)), {})
    assert small.dcqcn_params.decrease_period_s == pytest.approx(large.dcqcn_params.decrease_period_s)
    assert small.regime_step_s == pytest.approx(scenario_step_s(scale(spec, Scaling(auto.k))))


def test_a_step_the_timers_are_pinned_to_keeps_the_periods_out_whatever_k():
    raw = json.loads(json.dumps(DEMO.as_dict()))
    raw["dcqcn"] = {"preset": "emulation", "step_ms": 800}     # the old demo's: periods that do not grow with K
    for key in ("sweep_point",):
        raw.pop(key, None)
    spec = C.resolve(raw)
    auto = auto_scale(spec)
    assert not auto.in_regime
    assert "step_per_decrease_period" in auto.describe() and "no K up to 1000" in auto.describe()


def test_a_packet_rate_is_judged_against_each_emulation_targets_budget():
    soft, bmv2 = packet_budget("soft"), packet_budget("bmv2")
    assert bmv2 < soft
    assert budget_words(bmv2) == f"within the soft target's {soft:,}, within BMv2's {bmv2:,}"
    assert budget_words((bmv2 + soft) / 2) == f"within the soft target's {soft:,}, over BMv2's {bmv2:,}"
    assert budget_words(soft + 1) == f"over the soft target's {soft:,}, over BMv2's {bmv2:,}"


def test_auto_names_the_ratios_no_k_moves_and_the_keys_that_set_them():
    """A config's own ECN thresholds keep kmin/kmax per BDP where they are at
    every K: the message says so and names [ecn], not only the ratio."""
    auto = auto_scale(C.load(REPO / "experiments" / "configs" / "nohelp_straggler.toml"))
    assert not auto.in_regime
    assert set(auto.fixed) == {"kmin_per_bdp", "kmax_per_bdp"}
    assert "no K moves kmin_per_bdp, kmax_per_bdp: set by the config's [ecn] kmax; [ecn] kmin" in auto.describe()


def test_auto_names_pinned_timers_and_nothing_where_every_ratio_moves_with_k():
    raw = json.loads(json.dumps(DEMO.as_dict()))
    raw["dcqcn"] = {"preset": "emulation", "step_ms": 800}
    raw.pop("sweep_point", None)
    auto = auto_scale(C.resolve(raw))
    assert {"step_per_decrease_period", "recovery_per_step"} <= set(auto.fixed)
    assert "rtt_per_step" not in auto.fixed
    assert "set by the config's [dcqcn] step_ms or timer_floor_ms, which --scale keeps" in auto.describe()
    assert auto_scale(DEMO).fixed == ()
