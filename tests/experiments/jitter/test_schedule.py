import json

import pytest

from experiments import config as C
from experiments.jitter import schedule as J


def cfg_with(jitter, seed=3, hosts=8):
    raw = {
        "name": "j", "seed": seed,
        "topology": {"kind": "leafspine", "hosts": hosts, "leaves": 2, "spines": 1, "host_rate_mbit": 20},
        "jobs": [{"ranks": hosts, "message_bytes": 80000, "iterations": 3}],
        "jitter": jitter,
    }
    cfg = C.resolve(raw)
    return cfg, cfg.topo


RANGED = [
    {"kind": "rate", "rank": 3, "start_s": [0.0, 2.0], "duration_s": [0.5, 1.0], "fraction": [0.1, 0.5]},
    {"kind": "rate", "pick": "fabric", "start_s": [0.0, 3.0], "duration_s": 1, "fraction": 0.5, "count": 3},
    {"kind": "netem", "host": "h2", "start_s": 1, "duration_s": 1, "delay_ms": [1, 5], "loss_pct": 1},
    {"kind": "cross", "src": "h1", "dst": "h8", "start_s": [0, 1], "duration_s": 1, "rate_mbit": [5, 10]},
    {"kind": "compute", "rank": "random", "iter": [0, 2], "delay_s": [0.1, 0.4], "count": 2},
]


def test_same_seed_same_schedule_bytes():
    cfg, topo = cfg_with(RANGED)
    a = J.to_jsonl(J.make_schedule(cfg, repeat=1))
    b = J.to_jsonl(J.make_schedule(cfg, repeat=1))
    assert a == b
    assert len(a.splitlines()) == 1 + 3 + 1 + 1 + 2


def test_other_seed_or_repeat_differs():
    cfg, topo = cfg_with(RANGED)
    cfg2, _ = cfg_with(RANGED, seed=4)
    base = J.to_jsonl(J.make_schedule(cfg, 1))
    assert J.to_jsonl(J.make_schedule(cfg2, 1)) != base
    assert J.to_jsonl(J.make_schedule(cfg, 2)) != base


def test_entries_draw_independently():
    """Changing one entry leaves the draws of the others as they were."""
    cfg, topo = cfg_with(RANGED)
    changed = [dict(e) for e in RANGED]
    changed[0]["fraction"] = [0.2, 0.3]
    cfg2, _ = cfg_with(changed)
    a = {(e["entry"], e["occurrence"]): e for e in J.make_schedule(cfg, 1)}
    b = {(e["entry"], e["occurrence"]): e for e in J.make_schedule(cfg2, 1)}
    for key in a:
        if key[0] != 0:
            assert a[key] == b[key]
    # entry 0: same times, only the magnitude moved
    assert a[(0, 0)]["start_s"] == b[(0, 0)]["start_s"]
    assert a[(0, 0)]["params"]["fraction"] != b[(0, 0)]["params"]["fraction"]


def test_draws_stay_in_their_ranges_and_targets_resolve():
    cfg, topo = cfg_with(RANGED)
    for rep in range(1, 20):
        for ev in J.make_schedule(cfg, rep):
            if ev["kind"] == "rate" and ev["entry"] == 0:
                assert 0.0 <= ev["start_s"] <= 2.0 and 0.5 <= ev["end_s"] - ev["start_s"] <= 1.0 + 1e-9
                assert 0.1 <= ev["params"]["fraction"] <= 0.5
                assert ev["params"]["rate_mbit"] == pytest.approx(20 * ev["params"]["fraction"])
                # rank 3 of the interleaved ring sits on h6, whose access link is h6-l2
                assert cfg.jobs[0].hosts[3] == "h6" and ev["link"] == "h6-l2"
            if ev["kind"] == "rate" and ev["entry"] == 1:
                assert ev["link"] in ("l1-p1", "l2-p1")
            if ev["kind"] == "compute":
                assert 0 <= ev["rank"] < 8 and 0 <= ev["params"]["iter"] <= 2
                assert ev["host"] == cfg.jobs[0].hosts[ev["rank"]]
            if ev["kind"] == "cross":
                assert ev["links"] == ["h1-l1", "l1-p1", "l2-p1", "h8-l2"]
                assert ev["params"]["dst_ip"] == topo.host("h8").ip


def test_netem_fallback_is_a_named_rate_squeeze():
    cfg, topo = cfg_with(RANGED)
    events = J.make_schedule(cfg, 1)
    for via in ("netem", "twin"):
        kept, notes = J.apply_fallbacks(events, via)
        netem = [e for e in kept if e["kind"] == "netem"]
        assert notes == [] and [(e["applied_as"], e["via"]) for e in netem] == [("netem", via)]
    fb, notes = J.apply_fallbacks(events, "fallback")
    netem = [e for e in fb if e["kind"] == "netem"]
    assert len(netem) == 1 and netem[0]["applied_as"] == "rate" and netem[0]["via"] == "fallback"
    assert netem[0]["params"]["rate_mbit"] == 10.0          # fallback_fraction 0.5 of 20 Mbit/s
    assert "no sch_netem" in netem[0]["fallback"] and notes == [netem[0]["fallback"]]
    assert events[0].get("fallback") is None                # the input is not modified


def test_overlapping_squeezes_lowest_holds_then_base():
    evs = [
        {"id": 0, "applied_as": "rate", "link": "a", "start_s": 1.0, "end_s": 4.0,
         "params": {"rate_mbit": 10.0, "base_rate_mbit": 20.0}},
        {"id": 1, "applied_as": "rate", "link": "a", "start_s": 2.0, "end_s": 3.0,
         "params": {"rate_mbit": 5.0, "base_rate_mbit": 20.0}},
        {"id": 2, "applied_as": "rate", "link": "a", "start_s": 4.0, "end_s": 5.0,
         "params": {"rate_mbit": 8.0, "base_rate_mbit": 20.0}},
        {"id": 3, "applied_as": "rate", "link": "b", "start_s": 2.0, "end_s": 2.5,
         "params": {"rate_mbit": 1.0, "base_rate_mbit": 20.0}},
    ]
    changes = [(t, link, rate) for t, link, rate, _ in J.rate_changes(evs)]
    assert changes == [(1.0, "a", 10.0), (2.0, "a", 5.0), (2.0, "b", 1.0), (2.5, "b", 20.0),
                       (3.0, "a", 10.0), (4.0, "a", 8.0), (5.0, "a", 20.0)]


def test_straggles_add_up_per_rank_and_iteration():
    evs = [{"applied_as": "compute", "job": 1, "rank": 2, "params": {"iter": 1, "delay_s": 0.25}},
           {"applied_as": "compute", "job": 1, "rank": 2, "params": {"iter": 1, "delay_s": 0.5}},
           {"applied_as": "compute", "job": 1, "rank": 0, "params": {"iter": 0, "delay_s": 0.1}}]
    assert J.straggles(evs) == {1: [{"rank": 0, "iter": 0, "delay_s": 0.1},
                                    {"rank": 2, "iter": 1, "delay_s": 0.75}]}


def test_actions_in_time_order_and_json_clean():
    cfg, topo = cfg_with(RANGED)
    events, _ = J.apply_fallbacks(J.make_schedule(cfg, 1), "fallback")
    acts = J.actions(events)
    assert [a["t"] for a in acts] == sorted(a["t"] for a in acts)
    ops = {a["op"] for a in acts}
    assert ops == {"set_rate", "cross_start", "cross_stop"}
    json.dumps(acts)
    # every squeezed link is back at its base rate at the end
    last = {}
    for a in acts:
        if a["op"] == "set_rate":
            last[a["link"]] = a["rate_mbit"]
    assert all(rate == 20.0 for rate in last.values())
