"""What `check` says a simulated run will cost is what it costs: the
frames estimated before the run against those the run carried.  At the
deployment's scale (where the cost matters) within 5 %; at a small
config's own rates a quarter more can come of what the estimate leaves
out (ACKs on their timer, retransmissions, CNPs)."""

from __future__ import annotations

import pytest

from experiments import config as C
from experiments.config.scale import deployment_scaling, scale
from experiments.plan import run_plan, wall_deadline_s
from experiments.sim.cost import cost
from experiments.sim.run import SimRun
from tests.harness import REPO


@pytest.mark.parametrize(("deployment", "within"), [(False, 0.25), (True, 0.05)])
def test_the_estimate_is_within_its_bound_of_the_frames_carried(tmp_path, deployment, within):
    spec = C.load(REPO / "experiments" / "configs" / "ci4.toml")
    if deployment:
        spec = scale(spec, deployment_scaling(spec, 64))
    plan = run_plan(spec, "baseline", 1, netem_ok=True, target="sim")
    sim = SimRun(plan, tmp_path, data=not deployment)
    sim.run(wall_deadline_s(spec, plan.jobs))
    sim.close()
    carried, estimated = sim.net.frames_sent(), cost(spec).frames
    assert abs(estimated - carried) <= within * carried, (estimated, carried)
