"""DCQCN over TCP, pure (hosts.tcp.reaction), on a virtual clock: the
receiver's count of CE-marked segments -> CNPs -> the reaction point's cuts
-> the connection's pacing rate."""

from itertools import pairwise

import pytest

from hosts.dcqcn import INF, NotificationPoint, ReactionPoint, make_params
from hosts.tcp.reaction import TCP_WIRE_OVERHEAD, CeNotifier, PacingRate, pacing_bytes_per_s
from tests.harness.dcqcn_model import trajectory

LINE = 20e6
MSS = 1448            # a 1500-byte MTU with TCP timestamps
ONE_WAY = 0.5e-3      # the CNP's trip to the sender
# the demo's DCQCN (experiments/configs/victim_straggle8.toml): 20 ms periods
PARAMS = make_params("emulation", LINE, 0.8, 0.02, clamp_target_rate=True)


def test_a_full_segment_fills_an_ethernet_frame():
    # 1448 bytes of payload in a 1514-byte frame: the overhead the pacing
    # conversion assumes is that of Linux's segments (timestamps on)
    assert MSS + TCP_WIRE_OVERHEAD == 1514


@pytest.mark.parametrize("rate", [LINE, 0.01 * LINE, 100e9])
@pytest.mark.parametrize("mss", [536, MSS, 8948])
def test_the_pacing_rate_puts_the_dcqcn_rate_on_the_wire(rate, mss):
    paced = pacing_bytes_per_s(rate, mss)
    wire_bps = paced * (mss + TCP_WIRE_OVERHEAD) / mss * 8
    assert wire_bps == pytest.approx(rate, rel=1e-6, abs=8 * (mss + TCP_WIRE_OVERHEAD) / mss)
    assert wire_bps <= rate


def ticks(t_from, t_to, dt):
    """Times from t_from (inclusive) to t_to (exclusive) every dt, without
    the drift of adding floats."""
    return [t_from + i * dt for i in range(round((t_to - t_from) / dt))]


def marks_every(dt, t_on, t_off):
    """The receiver's cumulative CE count read every dt, one mark per reading."""
    return [(t, n) for n, t in enumerate(ticks(t_on, t_off, dt), start=1)]


def test_the_counts_ask_for_the_cnps_a_udp_receiver_would_send():
    interval = PARAMS.cnp_interval_s
    notifier = CeNotifier(NotificationPoint(interval), "flow")
    udp_np = NotificationPoint(interval)
    from_counts, per_packet = [], []
    for t, n in marks_every(1e-3, 0.1, 0.3):
        if notifier.on_count(n, t):
            from_counts.append(t)
        if udp_np.on_data("flow", True, t):     # hosts.udp's receiver: one call per marked packet
            per_packet.append(t)
    assert from_counts == per_packet
    assert len(from_counts) >= 3 and all(b - a >= interval for a, b in pairwise(from_counts))
    assert notifier.marked == len(marks_every(1e-3, 0.1, 0.3))


def test_no_new_mark_no_cnp_and_a_new_connection_counts_from_zero():
    notifier = CeNotifier(NotificationPoint(0.0), "flow")
    assert notifier.on_count(0, 0.0) is False
    assert notifier.on_count(3, 0.1) is True
    assert notifier.on_count(3, 0.2) is False          # the same count: no new mark
    notifier.reset()
    assert notifier.on_count(1, 0.3) is True            # the new connection's first mark
    assert notifier.marked == 4


def test_dcqcn_off_asks_for_no_cnp():
    notifier = CeNotifier(NotificationPoint(None), "flow")
    assert not any(notifier.on_count(n, t) for t, n in marks_every(1e-3, 0.0, 0.1))
    assert notifier.marked == 100


def run(t_on, t_off, t_end, dt=1e-3):
    """Marks on the flow from t_on to t_off, one per receiver reading; the
    CNPs reach the sender ONE_WAY later; the sender's pacing rate sampled
    every dt.  (CNP times at the sender, [(t, paced bytes/s)])."""
    notifier = CeNotifier(NotificationPoint(PARAMS.cnp_interval_s), "flow")
    rp = ReactionPoint(PARAMS, 0.0)
    pacing = PacingRate(rp)
    marks = marks_every(dt, t_on, t_off)
    arriving, cnps, paced = [], [], []
    applied = pacing.update(MSS)
    n = 0
    for t in ticks(0.0, t_end, dt):
        while marks and marks[0][0] <= t:
            n = marks.pop(0)[1]
        if notifier.on_count(n, t):
            arriving.append(t + ONE_WAY)
        while arriving and arriving[0] <= t:
            cnps.append(arriving.pop(0))
            rp.on_cnp(cnps[-1])
        rp.advance(t)
        applied = pacing.update(MSS) or applied
        paced.append((t, applied))
    return cnps, paced


def test_marks_cut_the_pacing_rate_as_dcqcn_cuts_a_udp_flow():
    cnps, paced = run(t_on=0.1, t_off=0.3, t_end=4.0)
    # the pacing rate is the reaction point's rate under those CNPs, as
    # hosts.dcqcn's equations give it (the UDP sender paces at that rate)
    predicted = trajectory(PARAMS, cnps, t_end=4.0)

    def rc_at(t):
        return [rc for tt, rc, *_ in predicted if tt <= t + 1e-12][-1]
    for t, rate in paced:
        assert rate == pacing_bytes_per_s(rc_at(t), MSS), t
    line = pacing_bytes_per_s(LINE, MSS)
    during = [r for t, r in paced if 0.1 < t <= 0.3]
    assert paced[0][1] == line and min(during) <= line / 2
    # one CNP per interval while marked; the marks stop: the rate climbs back
    assert len(cnps) == round(0.2 / PARAMS.cnp_interval_s)
    assert paced[-1][1] >= 0.99 * line


def test_the_pacing_rate_is_applied_once_per_change():
    rp = ReactionPoint(PARAMS, 0.0)
    pacing = PacingRate(rp)
    first = pacing.update(MSS)
    assert first == pacing_bytes_per_s(LINE, MSS)
    assert pacing.update(MSS) is None                 # unchanged: nothing to apply
    rp.on_cnp(0.0)
    rp.advance(PARAMS.decrease_period_s)              # the first decrease
    assert pacing.update(MSS) < first
    pacing.forget()                                   # a new connection
    assert pacing.update(MSS) is not None
    assert rp.next_event_time() < INF
