"""One scaling of a scenario (experiments/config/scale.py): --scale K keeps
the network and multiplies bytes and durations; --deployment runs the
scenario at the declared deployment's line rate, step and parameters; both
keep the scenario's shape in units of its own step, jitter draws included."""

from __future__ import annotations

import math

import pytest

from experiments import config as C
from experiments.config.derive import base_rtt_s
from experiments.config.scale import Scaling, at, deployment_scaling, longest_path, rate_words, scale, step_s
from experiments.config.spec import job_specs
from experiments.jitter.schedule import make_schedule
from experiments.sim.predict import schedule
from hosts import dcqcn
from hosts.dcqcn_regime import DEPLOYMENT
from topologies.network.links import VIA_TWIN
from topologies.spec.routes import path_links


@pytest.fixture
def spec(base):
    base["topology"].update(fabric_rate_mbit=10, host_delay_ms=0.5, fabric_delay_ms=1.0, queue_depth_pkts=64)
    base["jobs"][0]["deadlines"] = {"step_s": 30.0}
    base["jobs"].append({"ranks": 2, "hosts": ["h1", "h3"], "message_bytes": 8000, "iterations": 3})
    base["dcqcn"] = {"preset": "emulation", "step_ms": 400, "timer_floor_ms": 20, "clamp_target_rate": True}
    base["ecn"] = {"kmin": 10, "kmax": 40}
    base["symphony"] = {"k_sym": 9, "gate_step": 0.25}
    base["jitter"] = [{"kind": "compute", "job": 1, "rank": "random", "iter": 1, "delay_s": [0.5, 1.0]},
                      {"kind": "rate", "pick": "fabric", "start_s": [0.1, 0.3], "duration_s": 0.2, "fraction": 0.5},
                      {"kind": "netem", "pick": "access", "start_s": 0.2, "duration_s": 0.4, "jitter_ms": 2},
                      {"kind": "cross", "src": "h2", "dst": "h4", "start_s": 0.0, "duration_s": 0.5, "rate_mbit": 5}]
    base["runner"] = {"run_deadline_s": 100}
    return C.resolve(base)


def test_scale_k_multiplies_bytes_and_durations_on_the_same_network(spec):
    s = scale(spec, Scaling(4.0))
    assert s.topology == spec.topology and s.ecn == spec.ecn
    assert [j.message_bytes for j in s.jobs] == [4 * j.message_bytes for j in spec.jobs]
    assert s.jobs[0].deadlines == {"step_s": 120.0} and s.runner.run_deadline_s == 400
    assert s.dcqcn["step_ms"] == 1600 and s.dcqcn["timer_floor_ms"] == 20    # the machine's floor stays
    assert s.jitter[0]["delay_s"] == [2.0, 4.0] and s.jitter[1]["start_s"] == [0.4, 1.2]
    assert s.jitter[2]["jitter_ms"] == 2                                     # the network's own: kept
    assert s.jitter[3]["rate_mbit"] == 5 and s.jitter[3]["duration_s"] == 2.0
    assert math.isclose(step_s(s), 4 * step_s(spec))
    # the gate is a share of the step: 4 times its packets (each count rounded)
    assert abs(s.symphony.gate_pkts - 4 * spec.symphony.gate_pkts) <= 2 and spec.symphony.gate_pkts > 0


def test_a_deadlines_rate_scales_with_the_links_not_the_clock(base):
    base["jobs"][0]["deadlines"] = {"rate_mbit": 5.0, "run_s": 60.0}
    spec = C.resolve(base)
    sc = deployment_scaling(spec)
    assert scale(spec, sc).jobs[0].deadlines == {"rate_mbit": 5.0 * sc.rate, "run_s": 60.0 * sc.time}


def test_the_deployment_runs_the_scenario_at_its_rate_step_and_parameters(spec):
    sc = deployment_scaling(spec)
    s = scale(spec, sc)
    t = s.topology
    assert t.host_rate_mbit * 1e6 == DEPLOYMENT.line_rate_bps
    assert t.fabric_rate_mbit / t.host_rate_mbit == spec.topology.fabric_rate_mbit / spec.topology.host_rate_mbit
    assert math.isclose(step_s(s), DEPLOYMENT.step_s, rel_tol=1e-6)
    # the base RTT of the longest path is the deployment's, its frames' serialisation included
    assert math.isclose(longest_rtt_s(s), DEPLOYMENT.base_rtt_s)
    assert t.fabric_delay_ms == t.host_delay_ms
    assert s.ecn.kmin * DEPLOYMENT.packet_bytes == DEPLOYMENT.kmin_bytes and s.ecn.pmax == DEPLOYMENT.pmax
    assert t.queue_depth_pkts * DEPLOYMENT.packet_bytes == DEPLOYMENT.queue_bytes
    assert s.dcqcn == {"preset": "paper"}       # the published values: no step, floor or clamp
    js = job_specs(s, {})
    assert all(j.udp.payload_bytes == DEPLOYMENT.packet_bytes for j in js)
    assert dcqcn.make_params(js[0].dcqcn_preset, js[0].line_rate_bps) == DEPLOYMENT.dcqcn
    # the shape in units of the step: every duration scaled as the step was
    f = sc.time
    assert s.jitter[0]["delay_s"] == [0.5 * f, 1.0 * f] and s.jitter[2]["jitter_ms"] == 2 * f
    assert s.jitter[3]["rate_mbit"] == 5 * sc.rate and math.isclose(sc.bytes, f * sc.rate)
    assert t.host_delay_ms < DEPLOYMENT.base_rtt_s * 1e3 / 2 / len(path_links(s.topo, *longest_path(s.topo)))


def longest_rtt_s(s) -> float:
    return base_rtt_s(s.topo, *longest_path(s.topo), job_specs(s, {})[0].udp.frame_bytes)


def test_coarse_frames_keep_the_deployments_base_rtt_while_their_serialisation_fits_in_it(spec):
    """A frame of C packets stores and forwards C times as long on every
    link: the links' delays give it back, so the feedback loop DCQCN and
    Symphony's marks ride on is the deployment's at any C that fits."""
    for c in (1, 8, 16):
        assert math.isclose(longest_rtt_s(scale(spec, deployment_scaling(spec, c))), DEPLOYMENT.base_rtt_s), c
    # 32 kB frames over two 100 and two 50 Gbit/s links: 15 us of serialisation alone
    big = scale(spec, deployment_scaling(spec, 32))
    assert big.topology.host_delay_ms == 0 and math.isclose(longest_rtt_s(big), 15.4e-6, rel_tol=0.01)


def test_coarse_packets_divide_every_count_in_packets(spec):
    one, coarse = (scale(spec, deployment_scaling(spec, c)) for c in (1, 8))
    assert coarse.ecn.kmin * 8 == one.ecn.kmin and coarse.topology.queue_depth_pkts * 8 == one.topology.queue_depth_pkts
    # a frame is marked as any of its 8 packets would be (the switch installs it so)
    assert (one.ecn.frame_packets, coarse.ecn.frame_packets) == (1, 8)
    assert "frame_packets" not in coarse.as_dict()["ecn"]
    # K_sym rounds up: 9 packets are 2 frames of 8; the gate, a quarter of the
    # deployment's step (125 MB at 100 Gbit/s in 10 ms), is 31,250 of its
    # 1,000-byte packets and 3,906 frames of 8
    assert (one.symphony.k_sym, one.symphony.gate_pkts) == (9, 31250)
    assert (coarse.symphony.k_sym, coarse.symphony.gate_pkts) == (2, 3906)
    j1, j8 = job_specs(one, {})[0], job_specs(coarse, {})[0]
    assert j8.udp.payload_bytes == 8 * j1.udp.payload_bytes
    # about the same bytes in flight (coarse frames carry fewer header bytes, take longer per hop)
    assert math.isclose(j8.udp.window_packets * 8, j1.udp.window_packets, rel_tol=0.05)
    assert coarse.jitter[3]["packet_bytes"] == 8 * one.jitter[3]["packet_bytes"]


def test_a_scaled_schedule_is_the_runs_schedule_scaled(spec):
    """The draws do not move: the scaled spec's schedule is each event's
    times and rates scaled (what the simulation's predictions rely on)."""
    sc = deployment_scaling(spec)
    for rep in (1, 2):
        base, scaled = make_schedule(spec, rep), schedule(scale(spec, sc), rep, VIA_TWIN)
        assert [(e["kind"], e.get("link"), e.get("rank")) for e in base] == \
               [(e["kind"], e.get("link"), e.get("rank")) for e in scaled]
        for a, b in zip(base, scaled, strict=True):
            if a["start_s"] is not None:
                assert math.isclose(b["start_s"], a["start_s"] * sc.time, rel_tol=1e-5, abs_tol=1e-6)
            if a["kind"] == "compute":
                assert math.isclose(b["params"]["delay_s"], a["params"]["delay_s"] * sc.time, rel_tol=1e-5)


def test_bad_scalings_are_refused_in_one_line():
    for kw, msg in (({"time": 0}, "time"), ({"time": 1, "rate": -1}, "rate"), ({"time": 1, "coarse": 2}, "deployment"),
                    ({"time": 1, "deployment": True, "coarse": 100}, "coarse")):
        with pytest.raises(ValueError, match=msg):
            Scaling(**kw)


def test_at_a_rate_k_times_the_bytes_on_links_r_times_as_fast(spec):
    """--scale 4 --rate 1/2: the same scenario in units of its step on
    links half as fast, so every duration 8 times as long."""
    sc = at(4.0, 0.5)
    assert (sc.time, sc.rate, sc.bytes) == (8.0, 0.5, 4.0) and at(1.0, 1.0).identity
    s = scale(spec, sc)
    assert s.topology.host_rate_mbit == spec.topology.host_rate_mbit / 2
    assert s.topology.fabric_rate_mbit == spec.topology.fabric_rate_mbit / 2
    assert [j.message_bytes for j in s.jobs] == [4 * j.message_bytes for j in spec.jobs]
    assert s.jitter[0]["delay_s"] == [4.0, 8.0] and s.jitter[3]["rate_mbit"] == 2.5
    assert math.isclose(step_s(s), 8 * step_s(spec))
    assert abs(s.symphony.gate_pkts - 4 * spec.symphony.gate_pkts) <= 2     # a step holds K times the packets


def test_a_rate_is_written_as_it_is_given():
    assert [rate_words(r) for r in (1.0, 0.5, 1 / 3, 0.75, 2.0)] == ["1", "1/2", "1/3", "0.75", "2"]
