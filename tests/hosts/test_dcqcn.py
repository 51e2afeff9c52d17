"""DCQCN state machines on a virtual clock (no sockets, no sleeping)."""

import math
from dataclasses import replace
from itertools import pairwise

import pytest

from hosts.dcqcn import (
    ALPHA_REPORT_STEP,
    INF,
    DcqcnParams,
    NotificationPoint,
    ReactionPoint,
    controllers,
    emulation_params,
    make_params,
    paper_params,
)
from tests.harness.dcqcn_model import closed_loop, first_time, trajectory

LINE = 20e6
STEP = 0.1   # a ring step time for the emulation preset
EPS = 1e-9   # timers accumulate float periods: look just after a boundary
# The state machine tests' parameters: ms periods at 20 Mbit/s (what the
# emulation preset was before it was derived from a regime), fixed here so
# that the tests of the equations do not move with the presets.
BASE = DcqcnParams(line_rate_bps=LINE, min_rate_bps=0.01 * LINE, g=1 / 256, rate_on_first_cnp=1.0,
                   alpha_period_s=5e-3, decrease_period_s=5e-3, increase_period_s=5.5e-3,
                   byte_counter_bytes=None, fast_recovery_steps=5, r_ai_bps=4e3, r_hai_bps=40e3,
                   cnp_interval_s=5e-3)


def params(**kw) -> DcqcnParams:
    return replace(BASE, **kw)


def test_closed_loop_prediction_cuts_while_marked_and_recovers_after():
    p = params()
    pts, cnps = closed_loop(p, 1.0, t_on=0.2, t_off=0.3, t_end=4.0, one_way_s=0.5e-3)
    assert cnps and 0.2 < cnps[0] < 0.2 + 2e-3 and cnps[-1] < 0.3 + 0.1
    assert all(b - a >= p.cnp_interval_s - 1e-12 for a, b in pairwise(cnps))
    t_half = first_time(pts, lambda rc: rc <= LINE / 2, after=0.2)
    # two cuts (the first leaves 1 - (1-g)/2 > 1/2 of line rate), one per decrease period
    assert t_half == pytest.approx(cnps[1] + p.decrease_period_s, abs=1e-6) or \
        t_half == pytest.approx(cnps[0] + 2 * p.decrease_period_s, abs=1e-6)
    assert first_time(pts, lambda rc: rc >= 0.9 * LINE, after=0.3) is not None
    assert pts[-1][1] > 0.9 * LINE


def step_through(rp: ReactionPoint, t_from: float, t_to: float, dt: float) -> None:
    t = t_from
    while t < t_to:
        t = min(t + dt, t_to)
        rp.advance(t)


# --- parameters ---------------------------------------------------------------

@pytest.mark.parametrize("field, value", [
    ("line_rate_bps", -1.0), ("line_rate_bps", 0), ("line_rate_bps", math.nan),
    ("min_rate_bps", -5.0), ("min_rate_bps", 2 * LINE),
    ("g", 0.0), ("g", 1.5), ("g", -0.1),
    ("rate_on_first_cnp", 0.0), ("rate_on_first_cnp", 1.2),
    ("alpha_period_s", 0.0), ("decrease_period_s", -1e-3), ("increase_period_s", math.inf),
    ("byte_counter_bytes", 0), ("byte_counter_bytes", 1.5), ("byte_counter_bytes", True),
    ("fast_recovery_steps", -1), ("fast_recovery_steps", 2.0), ("fast_recovery_steps", True),
    ("r_ai_bps", -1.0), ("r_hai_bps", 10 * LINE), ("cnp_interval_s", -1e-6),
    ("clamp_target_rate", 1),
])
def test_nonsense_parameters_are_rejected_naming_the_field(field, value):
    with pytest.raises(ValueError, match=f"'{field}'"):
        params(**{field: value})


def test_make_params_rejects_unknown_preset_and_field():
    with pytest.raises(ValueError, match="preset"):
        make_params("fast", LINE)
    with pytest.raises(ValueError, match="'alpha_us'"):
        make_params("emulation", LINE, STEP, alpha_us=3)
    with pytest.raises(ValueError, match="'line_rate_bps'"):
        make_params("emulation", -LINE, STEP)
    with pytest.raises(ValueError, match="'step_s'"):
        make_params("emulation", LINE)
    p = make_params("emulation", LINE, STEP, cnp_interval_s=50e-6, clamp_target_rate=True)
    assert p.cnp_interval_s == 50e-6 and p.clamp_target_rate


def test_overrides_in_other_units_as_job_files_write_them():
    p = make_params("emulation", LINE, STEP, cnp_interval_us=50, increase_period_ms=2,
                    r_hai_mbit=0.5)
    assert p.cnp_interval_s == pytest.approx(50e-6)
    assert p.increase_period_s == pytest.approx(2e-3)
    assert p.r_hai_bps == pytest.approx(0.5e6)
    with pytest.raises(ValueError, match="given twice"):
        make_params("emulation", LINE, STEP, cnp_interval_us=50, cnp_interval_s=1e-3)
    with pytest.raises(ValueError, match="'g_us'"):
        make_params("emulation", LINE, STEP, g_us=1)
    with pytest.raises(ValueError, match="'cnp_interval_s'"):
        make_params("emulation", LINE, STEP, cnp_interval_us=-5)


def test_controllers_pair_or_none_when_off():
    assert controllers("off", LINE, 0.0) is None
    assert controllers("emulation", None, 0.0) is None
    rp, np_ = controllers("emulation", LINE, 3.0, STEP, cnp_interval_ms=2)
    assert rp.rate_bps == LINE and np_.cnp_interval_s == pytest.approx(2e-3)
    assert rp.params == replace(emulation_params(LINE, STEP), cnp_interval_s=2e-3)


def test_paper_preset_has_the_published_values():
    p = paper_params()
    assert p.line_rate_bps == 40e9
    assert (p.alpha_period_s, p.decrease_period_s, p.increase_period_s) == (50e-6, 50e-6, 55e-6)
    assert p.g == 1 / 256 and p.fast_recovery_steps == 5 and p.rate_on_first_cnp == 1.0
    assert p.r_ai_bps == pytest.approx(8e6) and p.r_hai_bps == pytest.approx(80e6)
    assert p.cnp_interval_s == 50e-6 and p.byte_counter_bytes is None
    assert not p.clamp_target_rate


# --- reaction point --------------------------------------------------------------

def test_nothing_happens_before_the_first_cnp():
    p = params()
    rp = ReactionPoint(p, 0.0)
    assert rp.next_event_time() == INF
    assert not rp.advance(100.0)
    assert rp.state() == {"rc": LINE, "rt": LINE, "alpha": 1.0}
    assert not rp.on_bytes_sent(10**9, 100.0)     # the byte counter starts with the first decrease
    assert rp.rate_bps == LINE


def test_trajectory_after_one_cnp():
    p = params(byte_counter_bytes=None)
    g, T, P = p.g, p.increase_period_s, p.decrease_period_s
    rp = ReactionPoint(p, 0.0)
    rp.on_cnp(1.0)
    assert rp.rate_bps == LINE                       # RateOnFirstCnp = 1: no cut yet
    assert rp.next_event_time() == pytest.approx(1.0 + P)
    rp.advance(1.0 + P - 1e-9)
    assert rp.rate_bps == LINE
    # alpha runs before the decrease check at the tie (rdma-hw.cc's +1 ns),
    # and the first CNP cleared the alpha flag: alpha = 1 - g when Rc is cut
    assert rp.advance(1.0 + P)
    rc0 = LINE * (1 - (1 - g) / 2)
    assert rp.rate_bps == pytest.approx(rc0)
    assert rp.target_bps == LINE                     # stage 0, no clamp: Rt kept
    # fast recovery: F halvings of the gap to Rt, one per increase period
    for k in range(1, p.fast_recovery_steps + 1):
        rp.advance(1.0 + P + k * T + EPS)
        assert rp.rate_bps == pytest.approx(LINE - (LINE - rc0) / 2**k)
        assert rp.target_bps == LINE
    assert rp.decreases == 1 and rp.cnps == 1


def test_fast_recovery_then_additive_then_hyper_increase_with_clamped_target():
    p = params(byte_counter_bytes=None, clamp_target_rate=True, r_ai_bps=0.01 * LINE,
               r_hai_bps=0.05 * LINE, fast_recovery_steps=3)
    P, T = p.decrease_period_s, p.increase_period_s
    rp = ReactionPoint(p, 0.0)
    rp.on_cnp(0.0)
    rp.advance(P)
    rc, rt = rp.rate_bps, rp.target_bps
    assert rt == LINE and rc < LINE      # clamp: Rt = Rc = line before the cut
    expected = []
    for stage in range(8):
        if stage == 3:
            rt = min(LINE, rt + p.r_ai_bps)
        elif stage > 3:
            rt = min(LINE, rt + p.r_hai_bps)
        rc = (rc + rt) / 2
        expected.append((rc, rt))
    got = []
    for k in range(1, 9):
        rp.advance(P + k * T + EPS)
        got.append((rp.rate_bps, rp.target_bps))
    assert [x for pair in got for x in pair] == pytest.approx([x for pair in expected for x in pair])


def test_clamped_train_lowers_target_and_additive_increase_adds_r_ai():
    p = params(byte_counter_bytes=None, clamp_target_rate=True)
    P, T = p.decrease_period_s, p.increase_period_s
    rp = ReactionPoint(p, 0.0)
    for i in range(4):                   # one CNP per decrease period
        rp.on_cnp(i * P)
    rp.advance(4 * P)
    rt_after = rp.target_bps
    assert rt_after < LINE and rp.rate_bps < rt_after
    t_last = 4 * P
    for k in range(1, p.fast_recovery_steps + 1):
        rp.advance(t_last + k * T + EPS)
    assert rp.target_bps == rt_after                 # fast recovery leaves Rt alone
    rp.advance(t_last + (p.fast_recovery_steps + 1) * T + EPS)
    assert rp.target_bps == pytest.approx(rt_after + p.r_ai_bps)
    rp.advance(t_last + (p.fast_recovery_steps + 2) * T + EPS)
    assert rp.target_bps == pytest.approx(rt_after + p.r_ai_bps + p.r_hai_bps)


def reference_model(p: DcqcnParams, cnp_times, t_end):
    """A second, event-by-event reading of the same equations (no byte
    counter), to check the lazy catch-up of ReactionPoint."""
    rc = rt = p.line_rate_bps
    alpha, first = 1.0, True
    a_flag = d_flag = False
    ta = td = ti = INF
    stage = 0
    cnps = sorted(cnp_times)
    while True:
        nxt = min(ta, td, ti, cnps[0] if cnps else INF)
        if nxt > t_end:
            return rc, rt, alpha
        if cnps and cnps[0] == nxt and nxt < min(ta, td, ti):
            cnps.pop(0)
            a_flag = d_flag = True
            if first:
                first, alpha, a_flag = False, 1.0, False
                ta, td = nxt + p.alpha_period_s, nxt + p.decrease_period_s
        elif ta == nxt:
            alpha = (1 - p.g) * alpha + (p.g if a_flag else 0)
            a_flag = False
            ta += p.alpha_period_s
        elif td == nxt:
            td += p.decrease_period_s
            if d_flag:
                if p.clamp_target_rate or stage:
                    rt = rc
                rc = max(p.min_rate_bps, rc * (1 - alpha / 2))
                stage, d_flag, ti = 0, False, nxt + p.increase_period_s
        else:
            ti += p.increase_period_s
            if stage == p.fast_recovery_steps:
                rt = min(p.line_rate_bps, rt + p.r_ai_bps)
            elif stage > p.fast_recovery_steps:
                rt = min(p.line_rate_bps, rt + p.r_hai_bps)
            rc = (rc + rt) / 2
            stage += 1


@pytest.mark.parametrize("clamp", [False, True])
def test_train_of_cnps_matches_the_equations_event_by_event(clamp):
    p = params(byte_counter_bytes=None, clamp_target_rate=clamp)
    # a CNP every 1.3 ms for 60 ms (several per decrease period), a pause,
    # then a sparser train that lets increase events in between
    cnps = [0.5 + 1.3e-3 * i for i in range(47)] + [0.8 + 7.1e-3 * i for i in range(10)]
    t_end = 1.2013        # not on a timer boundary
    rc_ref, rt_ref, alpha_ref = reference_model(p, cnps, t_end)
    # called late (only at CNPs and at the end) ...
    lazy = ReactionPoint(p, 0.0)
    for t in cnps:
        lazy.on_cnp(t)
    lazy.advance(t_end)
    # ... and called often
    busy = ReactionPoint(p, 0.0)
    t = 0.0
    for c in cnps:
        step_through(busy, t, c, 0.37e-3)
        busy.on_cnp(c)
        t = c
    step_through(busy, t, t_end, 0.37e-3)
    for rp in (lazy, busy):
        assert rp.rate_bps == pytest.approx(rc_ref, rel=1e-9)
        assert rp.target_bps == pytest.approx(rt_ref, rel=1e-9)
        assert rp.alpha == pytest.approx(alpha_ref, rel=1e-9)
    assert lazy.decreases > 10


def test_at_most_one_decrease_per_decrease_period():
    p = params(byte_counter_bytes=None)
    rp = ReactionPoint(p, 0.0)
    for i in range(100):                            # 100 CNPs inside 2.5 periods
        rp.on_cnp(i * p.decrease_period_s / 40)
    rp.advance(3 * p.decrease_period_s)
    assert rp.decreases == 3


def test_train_then_recovery_to_line_rate_through_fast_recovery():
    p = params(byte_counter_bytes=None)
    pts = trajectory(p, [0.1 + i * 2e-3 for i in range(7)], t_end=2.0)
    low = min(rc for _t, rc, _rt, _a in pts)
    assert low < 0.2 * LINE                         # a train drives Rc far down ...
    assert all(rt == LINE for _t, _rc, rt, _a in pts)   # ... but Rt is never clamped
    t_last_cut = max(t for t, rc, _rt, _a in pts if rc == low)
    t_back = first_time(pts, lambda rc: rc >= 0.95 * LINE, after=t_last_cut)
    # F = 5 halvings of the gap bring Rc within 1/32 of Rt: 5 increase periods
    assert t_back - t_last_cut == pytest.approx(5 * p.increase_period_s)
    assert pts[-1][1] == LINE


def test_alpha_decays_without_cnps():
    p = params()
    rp = ReactionPoint(p, 0.0)
    rp.on_cnp(0.0)
    for k in (1, 2, 10, 100, 1000):
        rp.advance(k * p.alpha_period_s + EPS)
        assert rp.alpha == pytest.approx((1 - p.g) ** k, rel=1e-9)


def test_alpha_rises_while_cnps_keep_coming():
    p = params(g=1 / 16)
    rp = ReactionPoint(p, 0.0)
    rp.on_cnp(0.0)
    rp.advance(20 * p.alpha_period_s + EPS)
    low = rp.alpha
    assert low == pytest.approx((1 - p.g) ** 20)
    for i in range(20):
        rp.on_cnp((20 + i) * p.alpha_period_s + 1e-4)
    rp.advance(40 * p.alpha_period_s + EPS)
    assert rp.alpha > low
    assert rp.alpha == pytest.approx(1 - (1 - low) * (1 - p.g) ** 20, rel=1e-9)


def test_min_rate_floor():
    p = params(g=1.0, byte_counter_bytes=None)    # alpha stays 1: Rc halves each period
    rp = ReactionPoint(p, 0.0)
    for i in range(40):
        rp.on_cnp(i * p.decrease_period_s)
        assert rp.rate_bps >= p.min_rate_bps
    assert rp.rate_bps == p.min_rate_bps


def test_byte_counter_drives_increases_and_hyper_needs_both_stages_above_f():
    p = params(byte_counter_bytes=10_000, fast_recovery_steps=2, clamp_target_rate=True,
               r_ai_bps=0.01 * LINE, r_hai_bps=0.1 * LINE)
    P, T = p.decrease_period_s, p.increase_period_s
    rp = ReactionPoint(p, 0.0)
    rp.on_cnp(0.0)
    rp.on_cnp(P + EPS)                 # two cuts: the second clamps Rt below line
    t = 2 * P + 2 * EPS
    rp.advance(t)
    assert rp.decreases == 2
    rt0 = rp.target_bps
    assert rt0 < LINE
    # 5 byte events, timer stage T = 0: byte stages 0, 1 are fast recovery,
    # 2, 3, 4 reach F but T does not exceed it: additive
    assert rp.on_bytes_sent(50_000, t)
    assert rp.increases == 5
    assert rp.target_bps == pytest.approx(rt0 + 3 * p.r_ai_bps)
    # timer events with byte stage 5: T = 0, 1, 2 additive, T = 3 > F: hyper
    rp.advance(t - EPS + 3 * T)
    assert rp.target_bps == pytest.approx(rt0 + 6 * p.r_ai_bps)
    rp.advance(t - EPS + 4 * T)
    assert rp.target_bps == pytest.approx(rt0 + 6 * p.r_ai_bps + p.r_hai_bps)


def test_without_byte_counter_bytes_change_nothing():
    p = params(byte_counter_bytes=None)
    rp = ReactionPoint(p, 0.0)
    rp.on_cnp(0.0)
    rp.advance(p.decrease_period_s + EPS)
    before = rp.state()
    assert not rp.on_bytes_sent(10**9, p.decrease_period_s + 2 * EPS)
    assert rp.state() == before


def test_an_earlier_time_counts_as_no_time_passed():
    p = params()
    rp = ReactionPoint(p, 1.0)
    rp.on_cnp(1.0)
    assert not rp.advance(0.5)
    assert rp.late_calls == 1 and rp.rate_bps == LINE
    rp.on_cnp(0.9)                        # taken as at 1.0: the cut is still due at 1.0 + P
    rp.advance(1.0 + p.decrease_period_s + EPS)
    assert rp.decreases == 1 and rp.late_calls == 2


def test_reports_rate_changes_and_only_sizeable_alpha_moves():
    p = params(byte_counter_bytes=None)
    rp = ReactionPoint(p, 0.0)
    rp.on_cnp(0.0)
    assert rp.advance(p.decrease_period_s)          # the cut
    # once Rc is back at line rate only alpha moves: reported in steps
    t, reports, last = p.decrease_period_s, 0, rp.alpha
    while rp.next_event_time() < INF:
        t = rp.next_event_time()
        if rp.advance(t) and rp.rate_bps == LINE:
            reports += 1
            assert abs(rp.alpha - last) >= ALPHA_REPORT_STEP or rp.rate_bps != LINE
            last = rp.alpha
    assert rp.rate_bps == LINE
    assert 0 < reports <= 1 / ALPHA_REPORT_STEP + 1
    assert rp.alpha < ALPHA_REPORT_STEP


# --- notification point -----------------------------------------------------------

def test_np_sends_at_most_one_cnp_per_interval_per_flow():
    np_ = NotificationPoint(5e-3)
    sent = {"a": [], "b": []}
    for i in range(1000):                           # CE every 0.1 ms for 100 ms, two flows
        t = i * 1e-4
        for flow in sent:
            if np_.on_data(flow, True, t):
                sent[flow].append(t)
    for times in sent.values():
        assert len(times) == 20
        assert all(b - a >= 5e-3 - 1e-12 for a, b in pairwise(times))
    assert np_.cnps == {"a": 20, "b": 20} and np_.ce_packets["a"] == 1000


def test_np_ignores_unmarked_packets_and_interval_zero_answers_every_mark():
    np_ = NotificationPoint(5e-3)
    assert not any(np_.on_data("f", False, i * 1e-3) for i in range(100))
    assert np_.packets["f"] == 100 and "f" not in np_.cnps
    assert np_.on_data("f", True, 0.2)
    every = NotificationPoint(0)
    assert all(every.on_data("f", True, 1.0) for _ in range(5))
    with pytest.raises(ValueError, match="cnp_interval_s"):
        NotificationPoint(-1)


def test_np_once_per_interval_and_never_when_off():
    np_ = NotificationPoint(0.001)
    assert np_.on_data("f", True, 0.0)
    assert not np_.on_data("f", True, 0.0005)
    assert not np_.on_data("f", False, 0.002)
    assert np_.on_data("f", True, 0.0011)
    assert np_.on_data("g", True, 0.0011)
    assert not NotificationPoint(None).on_data("f", True, 0.0)
