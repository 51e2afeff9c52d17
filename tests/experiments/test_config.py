import copy
import tomllib

import pytest
import tomli_w

from experiments import config as C
from tests.harness import REPO

CONFIGS = sorted((REPO / "experiments" / "configs").glob("*.toml"))


def base() -> dict:
    return {
        "name": "t",
        "topology": {"kind": "leafspine", "hosts": 4, "leaves": 2, "spines": 1, "host_rate_mbit": 20},
        "jobs": [{"ranks": 4, "message_bytes": 40000, "iterations": 2}],
    }


def test_defaults_are_filled_and_hosts_placed():
    cfg = C.resolve(base()).as_dict()
    assert cfg["variants"] == ["baseline", "symphony"]
    assert cfg["repeats"] == 1 and cfg["seed"] == 1
    assert cfg["ecn"] == {"kmin": 5, "kmax": 20, "pmax": 0.2}
    assert cfg["symphony"] == {"threshold": 1, "k_sym": 1, "p_sym": 1.0}
    job = cfg["jobs"][0]
    # interleaved over the two leaves by the topology builder's placement
    assert job["hosts"] == ["h1", "h3", "h2", "h4"]
    assert "placement" not in job
    assert job["transport"] == "udp" and job["data_port"] == 5000 and job["job"] == 1


@pytest.mark.parametrize("mutate, key", [
    (lambda r: r["topology"].pop("kind"), "topology.kind"),
    (lambda r: r.pop("topology"), "topology"),
    (lambda r: r["jobs"][0].pop("message_bytes"), "jobs[0].message_bytes"),
    (lambda r: r["topology"].update(hosts="four"), "topology.hosts"),
    (lambda r: r["topology"].update(kind="torus"), "topology.kind"),
    (lambda r: r["topology"].update(host_rate_mbit=True), "topology.host_rate_mbit"),
    (lambda r: r["jobs"][0].update(iterations=1.5), "jobs[0].iterations"),
    (lambda r: r["jobs"][0].update(transport="quic"), "jobs[0].transport"),
    (lambda r: r["jobs"][0].update(message_bytes=10), "jobs[0].message_bytes"),
    (lambda r: r["jobs"][0].update(ranks=9), "jobs[0].ranks"),
    (lambda r: r["jobs"][0].update(hosts=["h1", "h9", "h2", "h3"]), "jobs[0].hosts"),
    (lambda r: r.update(variants=["baseline", "fast"]), "variants[1]"),
    (lambda r: r.update(ecn={"kmin": 30, "kmax": 10}), "ecn.kmax"),
    (lambda r: r.update(symphony={"p_sym": 2}), "symphony.p_sym"),
    (lambda r: r.update(colour="blue"), "colour"),
    (lambda r: r["topology"].update(spine=1), "topology.spine"),
    (lambda r: r.update(jitter=[{"kind": "rate", "start_s": 0, "duration_s": 1}]), "jitter[0]"),
    (lambda r: r.update(jitter=[{"kind": "wobble"}]), "jitter[0].kind"),
    (lambda r: r.update(jitter=[{"kind": "rate", "link": "h1-s9", "start_s": 0, "duration_s": 1,
                                 "fraction": 0.5}]), "jitter[0].link"),
    (lambda r: r.update(jitter=[{"kind": "rate", "rank": 7, "start_s": 0, "duration_s": 1,
                                 "fraction": 0.5}]), "jitter[0].rank"),
    (lambda r: r.update(jitter=[{"kind": "rate", "rank": 1, "start_s": [2, 1], "duration_s": 1,
                                 "fraction": 0.5}]), "jitter[0].start_s"),
    (lambda r: r.update(jitter=[{"kind": "compute", "rank": 1, "iter": 5, "delay_s": 1}]), "jitter[0].iter"),
    (lambda r: r.update(jitter=[{"kind": "cross", "src": "h1", "dst": "h1", "start_s": 0, "duration_s": 1,
                                 "rate_mbit": 5}]), "jitter[0].dst"),
    (lambda r: r.update(sweep={"symphony.thresh": [1, 2]}), "sweep.symphony.thresh"),
    (lambda r: r.update(dcqcn={"preset": "fastest"}), "dcqcn.preset"),
    # the switches' 6-bit DSCP tag orders steps less than 32 apart (topologies.switch.controlplane.check_job)
    (lambda r: r["jobs"][0].update(transport="tcp") or r.update(symphony={"threshold": 32}), "jobs[0]"),
])
def test_bad_config_names_the_key(mutate, key):
    raw = base()
    mutate(raw)
    with pytest.raises(C.ConfigError) as err:
        C.resolve(raw)
    msg = str(err.value)
    assert msg.startswith(key + ":") or msg.startswith(key + " ") or msg.startswith(key), msg
    assert "\n" not in msg


def test_tcp_job_over_32_ranks_refused_before_any_network():
    raw = base()
    raw["topology"] = {"kind": "star", "hosts": 33, "host_rate_mbit": 10}
    raw["jobs"][0].update(ranks=33, transport="tcp")
    with pytest.raises(C.ConfigError, match=r"^jobs\[0\]: job 1: transport tcp .* at most 32 ranks, got 33$"):
        C.resolve(raw)
    raw["jobs"][0].update(transport="udp")
    assert len(C.resolve(raw).jobs[0].hosts) == 33


def test_resolved_config_round_trips_through_toml():
    raw = base()
    raw["jitter"] = [{"kind": "rate", "rank": 2, "start_s": [0.1, 0.5], "duration_s": 1, "fraction": 0.25},
                     {"kind": "compute", "rank": "random", "iter": [0, 1], "delay_s": 0.2}]
    raw["dcqcn"] = {"preset": "emulation", "line_rate_mbit": 20}
    cfg = C.resolve(raw)
    again = C.resolve(tomllib.loads(tomli_w.dumps(cfg.as_dict())))
    assert again == cfg


@pytest.mark.parametrize("path", CONFIGS, ids=[p.name for p in CONFIGS])
def test_shipped_configs_load(path):
    cfg = C.load(path)
    assert cfg.jobs and cfg.variants
    if cfg.sweep:
        points = C.sweep_points(C.load_raw(path), str(path))
        assert len(points) >= 2
        assert len({label for label, _ in points}) == len(points)


def test_shipped_configs_include_demo_ci_sweep():
    names = {p.stem for p in CONFIGS}
    assert {"demo", "ci4"} <= names
    assert any(C.load(p).sweep for p in CONFIGS)


def test_sweep_points_cross_product():
    raw = base()
    raw["jitter"] = [{"kind": "rate", "rank": 1, "start_s": 0.1, "duration_s": 1, "fraction": 0.5}]
    raw["sweep"] = {"jitter.0.fraction": [0.25, 0.5], "symphony.threshold": [0, 2, 4]}
    points = C.sweep_points(raw)
    assert len(points) == 6
    fr = sorted({(cfg.jitter[0]["fraction"], cfg.symphony.threshold) for _, cfg in points})
    assert fr == [(0.25, 0), (0.25, 2), (0.25, 4), (0.5, 0), (0.5, 2), (0.5, 4)]
    assert points[0][0] == "fraction0.25_threshold0"
    assert all(cfg.sweep == {} for _, cfg in points)


def test_sweep_point_is_validated():
    raw = base()
    raw["sweep"] = {"symphony.p_sym": [0.5, 3.0]}
    with pytest.raises(C.ConfigError, match="symphony.p_sym"):
        C.sweep_points(copy.deepcopy(raw))


def test_unreadable_and_invalid_toml(tmp_path):
    with pytest.raises(C.ConfigError, match="cannot read"):
        C.load(tmp_path / "nope.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("topology = [\n")
    with pytest.raises(C.ConfigError, match="not valid TOML"):
        C.load(bad)
