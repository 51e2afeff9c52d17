"""The regime DCQCN runs in: the declared deployment, the emulation preset
derived from it, the ratios, the timer floor.  On a virtual clock."""

import math
from dataclasses import replace

import pytest

from hosts.dcqcn import (
    DEPLOYMENT,
    RATIO_LABELS,
    Deployment,
    derive,
    emulation_params,
    make_params,
    measured_ratios,
    paper_params,
    regime_ratios,
    regime_targets,
    step_time_s,
)
from hosts.dcqcn_regime import (
    DCQCN_RATIOS,
    MIN_RATE_FLOOR,
    PERIODS,
    RECOVERED_FRACTION,
    TIMER_FLOOR_S,
    ecn_thresholds_pkts,
)
from hosts.job import parse_job
from hosts.rank import rate_control
from tests.harness.dcqcn_model import first_time, trajectory

# Ratios the derivation keeps when the floor does not bind agree to this
# (relative): they are the same event sequence on a scaled clock, so only
# float rounding separates them.
KEPT = 1e-6
# the former demo's job (experiments/configs/nohelp_access_squeeze.toml): 8 ranks, 200 kB per rank, 10 Mbit/s
DEMO_LINE, DEMO_RANKS, DEMO_MESSAGE = 10e6, 8, 200_000


def halving_recovery_s(params) -> float:
    """Time from the cut of a single CNP to Rc back at 95 % of line, read off
    the harness's trajectory (not hosts.dcqcn_regime's own function)."""
    line = params.line_rate_bps
    pts = trajectory(params, [0.0], t_end=100.0)
    t_cut = first_time(pts, lambda rc: rc < line)
    return first_time(pts, lambda rc: rc >= RECOVERED_FRACTION * line, after=t_cut) - t_cut


# --- the declared deployment ----------------------------------------------------

def test_the_deployment_is_the_real_regime():
    d = DEPLOYMENT
    assert d.step_s == pytest.approx(10e-3)            # 1 GB / 8 ranks at 100 Gbit/s
    assert d.dcqcn == paper_params(100e9)
    t = regime_targets()
    assert set(t) == set(RATIO_LABELS)
    assert t["step_per_alpha_period"] == pytest.approx(200)
    assert t["step_per_increase_period"] == pytest.approx(10e-3 / 55e-6)
    # fast recovery: 4 halvings of the gap (1/2 -> 1/32 < 5 %), one per 55 us
    assert t["recovery_per_step"] == pytest.approx(4 * 55e-6 / 10e-3)
    assert halving_recovery_s(d.dcqcn) / d.step_s == pytest.approx(t["recovery_per_step"])
    assert 1.0 < t["climb_per_step"] < 1.5            # R_HAI 0.2 % of line per 55 us
    assert t["rtt_per_step"] == pytest.approx(1e-3)
    assert (t["kmin_per_bdp"], t["kmax_per_bdp"]) == pytest.approx((3.2, 12.8))


# --- the derivation ---------------------------------------------------------------

@pytest.mark.parametrize("line, step, floor", [
    (DEMO_LINE, 0.02, 0.0),          # the demo's step, with no timer floor
    (DEMO_LINE, 0.5, TIMER_FLOOR_S),
    (20e6, 1.0, TIMER_FLOOR_S),
    (100e6, 2.0, TIMER_FLOOR_S),
])
def test_derived_preset_recovers_from_a_halving_in_the_deployments_share_of_a_step(line, step, floor):
    d = derive(line, step, floor_s=floor)
    assert d.stretch == 1.0
    real = halving_recovery_s(DEPLOYMENT.dcqcn) / DEPLOYMENT.step_s
    assert halving_recovery_s(d.params) / step == pytest.approx(real, rel=KEPT)
    # and every other ratio but the minimum rate (floored at 1 % of line)
    for name in DCQCN_RATIOS:
        if name != "min_rate_fraction":
            assert d.ratios[name] == pytest.approx(d.targets[name], rel=KEPT), name
    assert d.drift == ("min_rate_fraction",)
    assert d.params.min_rate_bps == pytest.approx(MIN_RATE_FLOOR * line)
    assert "every ratio kept" not in d.describe() and "floor binds" not in d.describe()


def test_periods_scale_with_the_step_time_and_rates_with_the_line_rate():
    a, b = derive(10e6, 0.5).params, derive(10e6, 1.5).params
    for name in PERIODS:
        assert getattr(b, name) == pytest.approx(3 * getattr(a, name))
        assert getattr(a, name) == pytest.approx(getattr(DEPLOYMENT.dcqcn, name) * 0.5 / 10e-3)
    c = derive(40e6, 0.5).params
    for name in ("r_ai_bps", "r_hai_bps", "min_rate_bps"):
        assert getattr(c, name) == pytest.approx(4 * getattr(a, name))
    # what is dimensionless stays
    for name in ("g", "fast_recovery_steps", "rate_on_first_cnp", "clamp_target_rate",
                 "byte_counter_bytes"):
        assert getattr(a, name) == getattr(DEPLOYMENT.dcqcn, name)


def test_the_timer_floor_binds_at_the_demos_step_and_the_drift_is_reported():
    step = step_time_s(DEMO_MESSAGE, DEMO_RANKS, DEMO_LINE)
    assert step == pytest.approx(0.02)
    d = derive(DEMO_LINE, step)
    # periods would be 2 x the deployment's (100 us): the floor makes them 25 x longer
    assert d.scale == pytest.approx(2.0) and d.stretch == pytest.approx(TIMER_FLOOR_S / 100e-6)
    assert min(getattr(d.params, n) for n in PERIODS) == pytest.approx(TIMER_FLOOR_S)
    assert all(getattr(d.params, n) >= TIMER_FLOOR_S * (1 - 1e-12) for n in PERIODS)
    # what the floor costs: steps span fewer periods, fast recovery takes a larger share
    lost = {"step_per_alpha_period", "step_per_decrease_period", "step_per_increase_period",
            "step_per_cnp_interval", "recovery_per_step", "r_ai_per_period", "r_hai_per_period",
            "min_rate_fraction"}
    assert lost <= set(d.drift)
    assert d.ratios["recovery_per_step"] == pytest.approx(d.stretch * d.targets["recovery_per_step"])
    # what is still kept per step: hyper increase per step, alpha's memory in steps
    for name in ("r_hai_per_step", "alpha_memory_per_step"):
        assert name not in d.drift and d.ratios[name] == pytest.approx(d.targets[name], rel=KEPT)
    # the climb back from half rate keeps its order (F periods of fast recovery do not)
    assert d.targets["climb_per_step"] < d.ratios["climb_per_step"] < 2 * d.targets["climb_per_step"]
    text = d.describe()
    assert "floor binds" in text and "\n" not in text
    assert all(name in text for name in d.drift)


def test_a_lower_floor_binds_less_and_no_floor_keeps_the_regime():
    step = 0.02
    assert derive(DEMO_LINE, step, floor_s=1e-3).stretch == pytest.approx(10)
    assert derive(DEMO_LINE, step, floor_s=0).stretch == 1.0
    # exactly at the floor: not stretched
    assert derive(DEMO_LINE, TIMER_FLOOR_S / 50e-6 * 10e-3).stretch == pytest.approx(1.0)


def test_the_climb_is_much_faster_than_with_periods_stretched_alone():
    """Keeping R_HAI per step (not per period) is what brings a flow whose
    target was cut back within about a step, not dozens."""
    d = derive(DEMO_LINE, 0.02)
    per_period = replace(d.params, r_ai_bps=d.params.r_ai_bps / d.stretch,
                         r_hai_bps=d.params.r_hai_bps / d.stretch)
    slow = regime_ratios(per_period, 0.02)["climb_per_step"]
    assert slow > 10 * d.ratios["climb_per_step"]


# --- the ratios -------------------------------------------------------------------

def test_a_job_with_a_fraction_of_the_scenarios_step_has_the_deployments_ratios_at_that_step():
    full, quarter = regime_targets(), regime_targets(step_fraction=0.25)
    assert quarter == pytest.approx(regime_ratios(DEPLOYMENT.dcqcn, DEPLOYMENT.step_s / 4, rtt_s=DEPLOYMENT.base_rtt_s,
                                                  packet_bytes=DEPLOYMENT.packet_bytes,
                                                  kmin_pkts=DEPLOYMENT.kmin_bytes / DEPLOYMENT.packet_bytes,
                                                  kmax_pkts=DEPLOYMENT.kmax_bytes / DEPLOYMENT.packet_bytes))
    assert quarter["rtt_per_step"] == pytest.approx(4 * full["rtt_per_step"])
    assert quarter["step_per_alpha_period"] == pytest.approx(full["step_per_alpha_period"] / 4)
    assert quarter["kmin_per_bdp"] == pytest.approx(full["kmin_per_bdp"])
    with pytest.raises(ValueError, match="step_fraction"):
        regime_targets(step_fraction=0)


def test_ratios_of_network_figures():
    p = derive(DEMO_LINE, 0.02).params
    r = regime_ratios(p, 0.02, rtt_s=1e-3, kmin_pkts=5, kmax_pkts=20, packet_bytes=1462)
    assert r["rtt_per_step"] == pytest.approx(0.05)
    bdp = DEMO_LINE * 1e-3 / 8                                  # 1250 B
    assert r["kmin_per_bdp"] == pytest.approx(5 * 1462 / bdp)
    assert r["kmax_per_bdp"] == pytest.approx(20 * 1462 / bdp)
    assert "rtt_per_step" not in regime_ratios(p, 0.02)
    assert "kmin_per_bdp" not in regime_ratios(p, 0.02, rtt_s=1e-3)


def test_ecn_thresholds_keep_the_deployments_share_of_the_bdp():
    kmin, kmax = ecn_thresholds_pkts(DEMO_LINE, 2e-3, 1462)
    r = regime_ratios(derive(DEMO_LINE, 0.02).params, 0.02, rtt_s=2e-3, kmin_pkts=kmin,
                      kmax_pkts=kmax, packet_bytes=1462)
    t = regime_targets()
    assert (r["kmin_per_bdp"], r["kmax_per_bdp"]) == pytest.approx((t["kmin_per_bdp"], t["kmax_per_bdp"]))


def test_measured_ratios_use_the_same_names():
    m = measured_ratios(0.08, rtt_s=0.004, recovery=0.02, climb=0.16)
    assert m == pytest.approx({"rtt_per_step": 0.05, "recovery_per_step": 0.25, "climb_per_step": 2.0})
    assert set(m) <= set(RATIO_LABELS)
    assert measured_ratios(0.08) == {}


# --- the preset through the job file -------------------------------------------------

def _job(dcqcn: dict) -> dict:
    return {"job": 1, "data_port": 5000, "message_bytes": DEMO_MESSAGE, "iterations": 1,
            "ranks": [{"rank": r, "ip": f"10.0.0.{r + 1}"} for r in range(DEMO_RANKS)],
            "dcqcn": dcqcn}


def test_the_job_derives_its_step_time_and_the_agent_its_parameters():
    spec = parse_job(_job({"preset": "emulation", "line_rate_mbit": 10}))
    assert spec.regime_step_s == pytest.approx(0.02)
    rp, np_ = rate_control(spec, 0.0)
    assert rp.params == emulation_params(DEMO_LINE, 0.02) == derive(DEMO_LINE, 0.02).params
    assert np_.cnp_interval_s == rp.params.cnp_interval_s
    # step_ms: the step time the preset derives from, e.g. when flows share links
    spec = parse_job(_job({"preset": "emulation", "line_rate_mbit": 10, "step_ms": 80,
                           "cnp_interval_ms": 3}))
    assert spec.regime_step_s == pytest.approx(0.08)
    assert spec.dcqcn_overrides == {"cnp_interval_ms": 3}
    rp, np_ = rate_control(spec, 0.0)
    assert rp.params == replace(derive(DEMO_LINE, 0.08).params, cnp_interval_s=3e-3)
    assert np_.cnp_interval_s == pytest.approx(3e-3)
    # timer_floor_ms: another floor, for a machine busier than the one measured
    spec = parse_job(_job({"preset": "emulation", "line_rate_mbit": 10, "timer_floor_ms": 5}))
    assert spec.timer_floor_s == pytest.approx(5e-3) and spec.dcqcn_overrides == {}
    rp, _ = rate_control(spec, 0.0)
    assert rp.params == derive(DEMO_LINE, 0.02, floor_s=5e-3).params
    assert rp.params.alpha_period_s == pytest.approx(5e-3)
    assert make_params("emulation", DEMO_LINE, 0.02, 5e-3) == rp.params
    # the paper preset ignores the step time and the floor
    spec = parse_job(_job({"preset": "paper", "line_rate_mbit": 10, "step_ms": 80,
                           "timer_floor_ms": 5}))
    assert rate_control(spec, 0.0)[0].params == paper_params(DEMO_LINE)


# --- bad inputs ---------------------------------------------------------------------

@pytest.mark.parametrize("call, field", [
    (lambda: derive(0, 0.02), "line_rate_bps"),
    (lambda: derive(-1e6, 0.02), "line_rate_bps"),
    (lambda: derive(1e7, 0), "step_s"),
    (lambda: derive(1e7, math.nan), "step_s"),
    (lambda: derive(1e7, "20 ms"), "step_s"),
    (lambda: derive(1e7, 0.02, floor_s=-1e-3), "floor_s"),
    (lambda: make_params("emulation", 1e7), "step_s"),
    (lambda: make_params("emulation", 1e7, -1.0), "step_s"),
    (lambda: regime_ratios(paper_params(), 0), "step_s"),
    (lambda: regime_ratios(paper_params(), 0.01, rtt_s=-1), "rtt_s"),
    (lambda: regime_ratios(paper_params(), 0.01, rtt_s=1e-5, packet_bytes=0), "packet_bytes"),
    (lambda: regime_ratios(paper_params(), 0.01, rtt_s=1e-5, packet_bytes=1000, kmin_pkts=-1),
     "kmin_pkts"),
    (lambda: measured_ratios(0), "step_s"),
    (lambda: measured_ratios(0.1, recovery=-0.01), "recovery"),
    (lambda: ecn_thresholds_pkts(1e7, 0, 1462), "rtt_s"),
    (lambda: replace(DEPLOYMENT, ranks=1), "ranks"),
    (lambda: replace(DEPLOYMENT, base_rtt_s=0), "base_rtt_s"),
    (lambda: replace(DEPLOYMENT, kmax_bytes=1e3), "kmax_bytes"),
    (lambda: replace(DEPLOYMENT, line_rate_bps=40e9), "line_rate_bps"),
])
def test_bad_inputs_give_one_line_naming_the_field(call, field):
    with pytest.raises(ValueError) as e:
        call()
    msg = str(e.value)
    assert f"'{field}'" in msg and "\n" not in msg, msg


def test_another_deployment_can_be_declared():
    slow = Deployment(line_rate_bps=25e9, message_bytes=100_000_000, ranks=4, base_rtt_s=5e-6,
                      packet_bytes=1000, kmin_bytes=100e3, kmax_bytes=400e3,
                      dcqcn=paper_params(25e9))
    assert slow.step_s == pytest.approx(8e-3)
    d = derive(DEMO_LINE, 0.8, deployment=slow)
    assert d.scale == pytest.approx(100) and d.stretch == 1.0
    assert d.ratios["recovery_per_step"] == pytest.approx(regime_targets(slow)["recovery_per_step"])
