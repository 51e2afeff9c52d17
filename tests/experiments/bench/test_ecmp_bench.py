"""experiments.bench.ecmp's frontier walk: a spine's step_count and frontier
over a job's steps, from the arrivals its routes give it; its options and
its report of spines that track nothing."""

import pytest

from experiments.bench.ecmp import (
    arrivals,
    frontier_walk,
    job_rows,
    oracle_changes,
    parse_args,
    print_scenario,
    spec_of,
    spine_rows,
    spines_of,
)
from experiments.oracle.scenario import predict_repeats
from experiments.sim.predict import schedule
from topologies.network.links import VIA_TWIN
from topologies.switch import controlplane as cp


def test_every_flow_every_step_completes_each():
    assert frontier_walk([(3, 3)] * 10) == {"completed": 10, "stalled": 0, "jumps": 0}


def test_fewer_arrivals_than_n_local_stall_until_the_slot_is_reused():
    walk = frontier_walk([(1, 3)] * 130)        # a slot of W = 64 reused: steps k, k+64, k+128 fill it
    assert walk["completed"] == 2 and walk["stalled"] == 128 and walk["jumps"] == 1   # -1 -> 128, then 129


@pytest.mark.parametrize("track, every_step_completes", [("groups", True), ("path", False)])
def test_under_track_groups_every_spine_a_step_reaches_completes_it(track, every_step_completes):
    spec = spec_of("ecmp_leaves4", "ecmp", track)
    plans = cp.plan(spec.topo, [j.placed for j in spec.jobs], spec.symphony)
    steps = [(a, n) for j in spec.jobs for sw in spines_of(spec) for a, n in arrivals(spec, j, sw, 12, plans[sw].flows)
             if a]
    assert steps and all(a == n for a, n in steps) == every_step_completes


def test_track_and_routing_options():
    args = parse_args(["--track", "leaves", "--routing", "ecmp", "--routing", "ecmp-flow", "--routing", "ecmp"])
    assert (args.track, args.routing) == ("leaves", ("ecmp", "ecmp-flow"))
    args = parse_args([])
    assert (args.track, args.routing) == ("path", ("destination", "ecmp", "ecmp-flow"))
    with pytest.raises(SystemExit):
        parse_args(["--track", "spines"])
    assert (parse_args([]).plot_job, parse_args(["--plot-job", "3"]).plot_job) == (1, 3)
    with pytest.raises(SystemExit):
        parse_args(["--plot-job", "0"])


def test_a_spine_that_tracks_nothing_says_untracked(capsys):
    leaves = spine_rows(spec_of("ecmp_spines2", "ecmp", "leaves"), {})
    assert leaves and all(r.get("untracked") and r["n_local"] == 0 for r in leaves)
    path = spine_rows(spec_of("ecmp_spines2", "ecmp"), {})
    assert path and not any(r.get("untracked") for r in path)
    res = {"ecmp": {"jobs": {}, "spines": leaves, "marks": {"spines": 0, "leaves": 0}, "errors": {}}}
    print_scenario("ecmp_spines2", res, "leaves")
    out = capsys.readouterr().out
    assert "(symphony.track leaves)" in out and out.count("untracked") == len(leaves)


def test_the_oracle_column_is_the_models_change_on_the_runs_jitter():
    dest = oracle_changes(spec_of("victim_straggle16.2spines", "destination"))
    assert set(dest) == {"1", "2"} and dest["2"] < -5      # the victim gains, the straggling job does not
    assert abs(dest["1"]) < 1
    runs = {"baseline": {"cct": {"1": 2.0, "2": 1.0}}, "symphony": {"cct": {"1": 2.0, "2": 0.8}}}
    rows = job_rows({1: runs}, dest)
    assert rows["2"]["change_pct"] == -20.0 and rows["2"]["oracle_pct"] == dest["2"]


def test_repeats_are_the_runners_draws_and_their_means_give_the_change():
    spec = spec_of("victim_straggle16.2spines", "ecmp")
    # the bench draws a batch's repeats (1, 2, ...), not a repeat 0 that no batch runs
    def oracle_of(*reps):
        return round(predict_repeats(spec, {r: schedule(spec, r, VIA_TWIN) for r in reps}).jobs[2].cct_change_pct, 1)
    assert oracle_changes(spec)["2"] == oracle_of(1) != oracle_of(0)
    assert oracle_changes(spec, 3)["2"] == oracle_of(1, 2, 3) != oracle_of(1)
    reps = {1: {"baseline": {"cct": {"1": 2.0}}, "symphony": {"cct": {"1": 1.0}}},
            2: {"baseline": {"cct": {"1": 4.0}}, "symphony": {"error": "deadline"}},      # a failed run: left out
            3: {"baseline": {"cct": {"1": 2.0}}, "symphony": {"cct": {"1": 3.0}}}}
    row = job_rows(reps, {})["1"]
    assert row["repeat_changes_pct"] == [-50.0, 50.0] and row["baseline_s"] == 2.0 and row["change_pct"] == 0.0


def test_repeats_and_jobs_take_whole_numbers_from_one():
    assert (parse_args(["--repeats", "3", "--jobs", "2"]).repeats, parse_args([]).repeats) == (3, 1)
    for bad in ("0", "-1", "two"):
        with pytest.raises(SystemExit):
            parse_args(["--repeats", bad])
