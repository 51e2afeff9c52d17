"""The resolved spec: config.toml's content (as_dict) and the job files."""

import tomllib

import pytest
import tomli_w

from experiments import config as C
from hosts import dcqcn
from hosts.job import JobSpec, RankSpec, Straggle


def test_resolved_config_round_trips_through_toml(base):
    raw = base
    raw["jitter"] = [{"kind": "rate", "rank": 2, "start_s": [0.1, 0.5], "duration_s": 1, "fraction": 0.25},
                     {"kind": "compute", "rank": "random", "iter": [0, 1], "delay_s": 0.2}]
    raw["dcqcn"] = {"preset": "emulation", "line_rate_mbit": 20}
    cfg = C.resolve(raw)
    again = C.resolve(tomllib.loads(tomli_w.dumps(cfg.as_dict())))
    assert again == cfg


def test_symphony_track_round_trips_through_toml(base):
    base["symphony"] = {"track": "leaves"}
    cfg = C.resolve(base)
    assert cfg.symphony.track == "leaves" and cfg.as_dict()["symphony"]["track"] == "leaves"
    assert C.resolve(tomllib.loads(tomli_w.dumps(cfg.as_dict()))) == cfg
    del base["symphony"]
    assert C.resolve(base).as_dict()["symphony"]["track"] == "path"


def test_as_dict_leaves_out_what_toml_cannot_hold_and_the_sweep(base):
    base["sweep"] = {"symphony.threshold": [1, 2]}
    d = C.resolve(base).as_dict()
    assert "sweep" not in d and "sweep_point" not in d and d["runner"] == {}
    assert "enabled" not in d["symphony"]
    assert d["topology"]["leaves"] == 2
    base["topology"] = {"kind": "star", "hosts": 4, "host_rate_mbit": 20}
    assert "leaves" not in C.resolve(base).as_dict()["topology"]


def test_job_specs_ring_order_addresses_line_rate_and_straggles(base):
    spec = C.resolve(base)
    (job,) = C.job_specs(spec, {1: [{"rank": 1, "iter": 0, "delay_s": 0.5}]})
    assert isinstance(job, JobSpec) and job.job == 1 and job.data_port == 5000 and job.seed == 1
    assert job.ranks == (RankSpec(0, "10.0.0.1", "h1"), RankSpec(1, "10.0.0.3", "h3"),
                         RankSpec(2, "10.0.0.2", "h2"), RankSpec(3, "10.0.0.4", "h4"))
    # one job: the scenario's step is its own (chunk bits at the line rate); its timers derive from it
    own_step_ms = dcqcn.step_time_s(job.message_bytes, job.n_ranks, 20e6) * 1e3
    assert job.dcqcn == {"preset": "emulation", "line_rate_mbit": 20.0, "step_ms": pytest.approx(own_step_ms)}
    assert job.straggle == (Straggle(1, 0, 0.5),)
    assert C.job_specs(spec, {})[0].straggle == ()


def test_job_deadlines_assume_the_share_of_a_shared_bottleneck(base):
    base["topology"]["fabric_rate_mbit"] = 10
    (job,) = C.job_specs(C.resolve(base), {})
    # interleaved over two leaves: each direction of the 10 Mbit/s uplink carries two ring flows
    assert job.deadlines.rate_mbit == 5.0 and job.deadlines.step_s is None
    base["topology"]["hosts"] = 8
    base["jobs"].append({"ranks": 4, "message_bytes": 40000, "iterations": 1, "placement": "interleave"})
    assert [j.deadlines.rate_mbit for j in C.job_specs(C.resolve(base), {})] == [2.5, 2.5]
    base["jobs"][1]["deadlines"] = {"step_s": 5.0, "run_s": 50.0}
    assert [j.deadlines.rate_mbit for j in C.job_specs(C.resolve(base), {})] == [2.5, None]


def test_job_deadlines_at_the_line_rate_where_no_flow_shares(base):
    base["topology"] = {"kind": "star", "hosts": 4, "host_rate_mbit": 20}
    (job,) = C.job_specs(C.resolve(base), {})
    assert job.deadlines.rate_mbit is None
