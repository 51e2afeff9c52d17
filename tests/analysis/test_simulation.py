"""The simulation beside the runs (analysis/simulation.py): its figures per
job, and the line that says where the config's scale and the deployment's
disagree, naming the regime ratio furthest from the deployment's."""

from analysis.regime import job_verdicts
from analysis.simulation import AGREE_POINTS, config_k, job_figures, verdict

DOC = {"schema": "symphony-sim/1", "scales": {
    "config": {"jobs": {"1": {"cct_change_pct": 1.0}, "2": {"cct_change_pct": -30.0}}},
    "deployment": {"jobs": {"1": {"cct_change_pct": 2.5}, "2": {"cct_change_pct": -48.0}}}}}
# job 2 measured an RTT of 4 ms on steps of 100 ms at line rate: 40 times the deployment's RTT per step
REGIME = {"targets": {"rtt_per_step": 0.001, "step_per_decrease_period": 200, "recovery_per_step": 0.022},
          "jobs": {"2": {"line_step_s": 0.1, "at_line_step": {"step_per_decrease_period": 40,
                                                               "recovery_per_step": 0.03}}}}
MEASURED = {"baseline": {"2": {"rtt_min_s": 0.004, "step_s": 0.5}}}


def test_figures_per_job_and_scale():
    figs = job_figures(DOC)
    assert figs["2"]["deployment"]["cct_change_pct"] == -48.0 and figs["1"]["config"]["cct_change_pct"] == 1.0
    assert job_figures(None) == {}


def test_a_disagreement_beyond_five_points_names_the_furthest_ratio():
    verdicts = job_verdicts(MEASURED, REGIME)
    lines = verdict(job_figures(DOC), verdicts)
    assert len(lines) == 1 and lines[0].startswith("job 2:") and "cannot answer for a real cluster" in lines[0]
    assert "rtt_per_step 0.04 (there 0.001)" in lines[0]        # 40x off beats 5x; 1.4x is within the regime
    assert [o["ratio"] for o in verdicts["2"]["off"]] == ["rtt_per_step", "step_per_decrease_period"]


def test_agreement_within_the_bound_says_nothing():
    near = {"3": {"config": {"cct_change_pct": -10.0}, "deployment": {"cct_change_pct": -10.0 - AGREE_POINTS}}}
    assert verdict(near, []) == []


def test_a_scaled_batch_is_not_judged_by_the_unscaled_simulation():
    """The simulation's config figures are the config's own (K = 1): for a
    batch run at K = 30 they say nothing of this batch's emulation."""
    lines = verdict(job_figures(DOC), job_verdicts(MEASURED, REGIME), scale=30.0)
    assert len(lines) == 1 and "unscaled, the emulation could not answer" in lines[0] and "K = 30" in lines[0]
    assert "cannot answer for a real cluster" not in lines[0] and "rtt_per_step" not in lines[0]


def test_a_confirmed_batch_is_judged_by_the_simulation_of_its_own_k():
    """With --confirm, the config figures are of the batch's K: a gap there
    is this batch's, and every ratio in its band does not save it."""
    lines = verdict(job_figures(DOC), {}, scale=50.0, sim_k=50.0)
    assert len(lines) == 1 and lines[0].startswith("job 2: the simulation gives -30.0 % of this batch's network "
                                                   "(K = 50) and -48.0 % at the deployment's scale")
    assert "cannot answer for a real cluster" in lines[0] and "the answer still moves with K" in lines[0]
    near = {"1": {"config": {"cct_change_pct": -20.0}, "deployment": {"cct_change_pct": -24.0}}}
    assert verdict(near, {}, scale=50.0, sim_k=50.0) == [
        "the simulation of this batch's network (K = 50) agrees with the deployment's within 5 points on every job:"
        " the batch answers for the deployment as far as the simulation can say"]
    assert verdict(near, {}, scale=50.0) == []          # K = 1's figures confirm nothing of K = 50


def test_the_document_says_which_k_its_config_figures_are_of():
    assert config_k(DOC) == 1.0 and config_k(None) == 1.0
    assert config_k({"scales": {"config": {"k": 50.0, "jobs": {}}}}) == 50.0
