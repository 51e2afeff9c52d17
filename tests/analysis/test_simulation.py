"""The simulation beside the runs (analysis/simulation.py): its figures per
job, and the line that says where the config's scale and the deployment's
disagree, naming the regime ratio furthest from the deployment's."""

from analysis.simulation import AGREE_POINTS, furthest_ratio, job_figures, verdict

DOC = {"schema": "symphony-sim/1", "scales": {
    "config": {"jobs": {"1": {"cct_change_pct": 1.0}, "2": {"cct_change_pct": -30.0}}},
    "deployment": {"jobs": {"1": {"cct_change_pct": 2.5}, "2": {"cct_change_pct": -48.0}}}}}
ROWS = [
    {"job": "2", "quantity": "rtt_per_step", "unit": "ratio", "measured": {"baseline": 0.04}, "design": None,
     "target": 0.001},
    {"job": "2", "quantity": "climb_per_step", "unit": "ratio", "measured": {"baseline": 1.5}, "design": 1.4,
     "target": 1.28},
    {"job": "2", "quantity": "step time", "unit": "ms", "measured": {"baseline": 0.5}, "design": 0.8, "target": 0.01},
    {"job": "2", "quantity": "step_per_decrease_period", "unit": "ratio", "measured": {}, "design": 40, "target": 200},
]


def test_figures_per_job_and_scale():
    figs = job_figures(DOC)
    assert figs["2"]["deployment"]["cct_change_pct"] == -48.0 and figs["1"]["config"]["cct_change_pct"] == 1.0
    assert job_figures(None) == {}


def test_a_disagreement_beyond_five_points_names_the_furthest_ratio():
    lines = verdict(job_figures(DOC), ROWS)
    assert len(lines) == 1 and lines[0].startswith("job 2:") and "cannot answer for a real cluster" in lines[0]
    assert "rtt_per_step 0.04 (there 0.001)" in lines[0]        # 40x off beats 5x and 1.2x; ms rows are not ratios
    assert furthest_ratio(ROWS, "2")[0] == "rtt_per_step" and furthest_ratio(ROWS, "1") is None


def test_agreement_within_the_bound_says_nothing():
    near = {"3": {"config": {"cct_change_pct": -10.0}, "deployment": {"cct_change_pct": -10.0 - AGREE_POINTS}}}
    assert verdict(near, []) == []
