"""The adapter (experiments/oracle/scenario.py) on small configs, against
paths, capacities and delays worked out by hand from the topology.

The leaf-spine used here: 4 hosts on 2 leaves (h1 h2 on l1, h3 h4 on l2),
one spine p1; interleaved placement gives the ring h1 h3 h2 h4, so every
ring edge crosses the spine.  Host links 10 Mbit/s and 1 ms, fabric links
5 Mbit/s and 2 ms.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from experiments import config as C
from experiments.jitter import schedule as J
from experiments.oracle import CapacityChange, CrossDemand, ModelError, Straggle, predict
from experiments.oracle.scenario import predict_repeats, scenario

MBIT = 1e6


def leafspine(*jitter: dict, **topology) -> C.ExperimentSpec:
    return C.resolve({
        "topology": {"kind": "leafspine", "hosts": 4, "leaves": 2, "spines": 1, "host_rate_mbit": 10,
                     "fabric_rate_mbit": 5, "host_delay_ms": 1, "fabric_delay_ms": 2, **topology},
        "jobs": [{"ranks": 4, "message_bytes": 40000, "iterations": 2}],
        "symphony": {"threshold": 2},
        "jitter": list(jitter),
    })


def events_of(spec: C.ExperimentSpec, repeat: int = 1) -> list[dict]:
    return J.make_schedule(spec, repeat)


def test_links_both_directions_with_rate_delay_and_the_switch_they_leave():
    sc = scenario(leafspine(), [])
    links = {link.id: link for link in sc.input.links}
    assert len(links) == 2 * 6         # 4 host links and 2 fabric links, each both ways
    assert (links["h1>l1"].rate_bps, links["h1>l1"].delay_s, links["h1>l1"].leaves_switch) == (10 * MBIT, 0.001, None)
    assert (links["l1>h1"].rate_bps, links["l1>h1"].leaves_switch) == (10 * MBIT, "l1")
    assert (links["l1>p1"].rate_bps, links["l1>p1"].delay_s, links["l1>p1"].leaves_switch) == (5 * MBIT, 0.002, "l1")
    assert links["p1>l2"].leaves_switch == "p1"
    assert sc.threshold == 2 and sc.notes == ()


def test_ring_paths_follow_the_routes():
    (job,) = scenario(leafspine(), []).input.jobs
    assert job.hosts == ("h1", "h3", "h2", "h4")
    assert job.paths == (
        ("h1>l1", "l1>p1", "p1>l2", "l2>h3"),
        ("h3>l2", "l2>p1", "p1>l1", "l1>h2"),
        ("h2>l1", "l1>p1", "p1>l2", "l2>h4"),
        ("h4>l2", "l2>p1", "p1>l1", "l1>h1"),
    )
    assert (job.message_bytes, job.iterations) == (40000, 2)


def test_the_switches_that_track_a_ring_edge_are_the_control_planes():
    (job,) = scenario(leafspine(), []).input.jobs
    assert job.trackers == (frozenset({"l1", "p1", "l2"}),) * 4
    spec = leafspine(spines=2, routing="ecmp")
    (job,) = scenario(replace(spec, symphony=replace(spec.symphony, track="leaves")), []).input.jobs
    assert job.trackers == (frozenset({"l1", "l2"}),) * 4 and not job.verdict
    (job,) = scenario(replace(spec, symphony=replace(spec.symphony, track="verdict")), []).input.jobs
    assert job.trackers == (frozenset({"l1", "l2"}),) * 4 and job.verdict


def test_a_star_path_is_two_links():
    spec = C.resolve({"topology": {"kind": "star", "hosts": 3, "host_rate_mbit": 1},
                      "jobs": [{"ranks": 3, "message_bytes": 300, "iterations": 1}]})
    (job,) = scenario(spec, []).input.jobs
    assert job.paths == (("h1>s1", "s1>h2"), ("h2>s1", "s1>h3"), ("h3>s1", "s1>h1"))


def test_a_squeeze_is_a_change_per_direction_at_its_start_and_at_its_end():
    # rank 1 runs on h3: its access link h3-l2 at 30 % (3 Mbit/s) from 0.2 to 0.7 s
    spec = leafspine({"kind": "rate", "rank": 1, "start_s": 0.2, "duration_s": 0.5, "fraction": 0.3})
    sc = scenario(spec, events_of(spec))
    assert sorted(sc.input.capacity_changes, key=lambda c: (c.t_s, c.link)) == [
        CapacityChange(0.2, "h3>l2", 3 * MBIT), CapacityChange(0.2, "l2>h3", 3 * MBIT),
        CapacityChange(0.7, "h3>l2", 10 * MBIT), CapacityChange(0.7, "l2>h3", 10 * MBIT)]


def test_overlapping_squeezes_the_lowest_rate_holds():
    # 3 Mbit/s from 0.2 to 0.7 s, 1 Mbit/s from 0.5 to 1.0 s on the same link:
    # 3 from 0.2, 1 from 0.5 (the first ending at 0.7 changes nothing), 10 from 1.0
    spec = leafspine({"kind": "rate", "link": "l1-p1", "start_s": 0.2, "duration_s": 0.5, "rate_mbit": 3},
                     {"kind": "rate", "link": "l1-p1", "start_s": 0.5, "duration_s": 0.5, "rate_mbit": 1})
    changes = scenario(spec, events_of(spec)).input.capacity_changes
    assert [(c.t_s, c.rate_bps / MBIT) for c in changes if c.link == "l1>p1"] == [(0.2, 3), (0.5, 1), (1.0, 5)]
    assert [(c.t_s, c.rate_bps / MBIT) for c in changes if c.link == "p1>l1"] == [(0.2, 3), (0.5, 1), (1.0, 5)]


def test_cross_traffic_is_demand_on_its_directed_path_for_its_period():
    spec = leafspine({"kind": "cross", "src": "h4", "dst": "h1", "start_s": 0.1, "duration_s": 0.3, "rate_mbit": 2})
    (cross,) = scenario(spec, events_of(spec)).input.cross
    assert cross == CrossDemand(0.1, 0.4, ("h4>l2", "l2>p1", "p1>l1", "l1>h1"), 2 * MBIT)


def test_compute_stragglers_and_their_sum_on_one_rank_and_iteration():
    spec = leafspine({"kind": "compute", "rank": 2, "iter": 1, "delay_s": 0.3},
                     {"kind": "compute", "rank": 2, "iter": 1, "delay_s": 0.1},
                     {"kind": "compute", "rank": 0, "iter": 0, "delay_s": 0.05})
    assert sorted(scenario(spec, events_of(spec)).input.straggles, key=lambda s: s.rank) == [
        Straggle(1, 0, 0, 0.05), Straggle(1, 2, 1, 0.4)]


def test_netem_as_its_fallback_squeeze_and_as_netem():
    spec = leafspine({"kind": "netem", "link": "l1-p1", "start_s": 0.4, "duration_s": 0.2, "delay_ms": 5})
    (ev,) = events_of(spec)
    # as apply_fallbacks turns it into a squeeze to fallback_fraction (0.5) of the link's rate
    fallback = {**ev, "applied_as": "rate", "params": {**ev["params"], "rate_mbit": 2.5}}
    sc = scenario(spec, [fallback])
    assert [(c.t_s, c.link, c.rate_bps / MBIT) for c in sc.input.capacity_changes] == [
        (0.4, "l1>p1", 2.5), (0.4, "p1>l1", 2.5), (0.6, "l1>p1", 5), (0.6, "p1>l1", 5)]
    assert sc.notes == ()
    # applied as netem (tc or the twin): the model has no delay or loss over time, and says so
    sc = scenario(spec, [ev])
    assert sc.input.capacity_changes == () and len(sc.notes) == 1 and "l1-p1" in sc.notes[0]


def test_a_link_without_a_rate_cannot_be_modelled():
    # a config always has rates (topology.host_rate_mbit is required); a
    # TopoSpec need not (None: unlimited)
    spec = leafspine()
    spec.topo.links[0] = replace(spec.topo.links[0], rate_mbit=None)
    with pytest.raises(ModelError, match="h1-l1 has no rate"):
        scenario(spec, [])


def test_a_straggler_through_the_adapter_gives_the_hand_computed_cct():
    # 2 ranks on a star at 1 Mbit/s, 8000 bytes: chunks of 4000 bytes, 32 ms a
    # step.  Rank 0 starts 100 ms late: rank 1 sends step 0 at 0..32 ms; rank
    # 0 sends step 0 at 100..132 and step 1 at 132..164; rank 1's step 1
    # (sent 132..164) ends both ranks at 164 ms = 2 x 32 + 100.
    spec = C.resolve({"topology": {"kind": "star", "hosts": 2, "host_rate_mbit": 1},
                      "jobs": [{"ranks": 2, "message_bytes": 8000, "iterations": 1}],
                      "jitter": [{"kind": "compute", "rank": 0, "iter": 0, "delay_s": 0.1}]})
    p = predict(scenario(spec, events_of(spec)).input)
    assert p.jobs[1].baseline_cct_s == pytest.approx(0.164)
    assert p.jobs[1].bound_s == pytest.approx(0.064)


def test_the_prediction_of_a_config_is_the_mean_over_its_repeats():
    # the squeeze's start is drawn per repeat: each repeat is its own input
    spec = leafspine({"kind": "rate", "rank": 1, "start_s": [0.0, 0.3], "duration_s": 0.3, "fraction": 0.2})
    pr = predict_repeats(spec, {1: events_of(spec, 1), 2: events_of(spec, 2)})
    one = {rep: predict(scenario(spec, events_of(spec, rep)).input, 2).jobs[1] for rep in (1, 2)}
    job = pr.jobs[1]
    assert job.baseline_cct_s == pytest.approx((one[1].baseline_cct_s + one[2].baseline_cct_s) / 2)
    assert job.symphony_cct_s == pytest.approx((one[1].symphony_cct_s + one[2].symphony_cct_s) / 2)
    assert job.cct_change_pct == pytest.approx((job.symphony_cct_s - job.baseline_cct_s) / job.baseline_cct_s * 100)
    assert pr.as_dict()["repeats"] == [1, 2] and set(pr.as_dict()["jobs"]["1"]) >= {
        "baseline_cct_s", "symphony_cct_s", "cct_change_pct", "bound_s"}


def test_repeats_with_the_same_schedule_are_modelled_once():
    spec = leafspine({"kind": "compute", "rank": 1, "iter": 0, "delay_s": 0.2})
    pr = predict_repeats(spec, {rep: events_of(spec, rep) for rep in (1, 2, 3)})
    assert pr.repeats[1] is pr.repeats[2] is pr.repeats[3]
    with pytest.raises(ModelError, match="no repeat"):
        predict_repeats(spec, {})
