"""The twin's egress queue on a virtual clock: drop-tail at the depth, drain
at the rate (packets/s as BMv2, or bits/s as a real link), idle restart,
bounded catch-up."""

import pytest

from topologies.switch.twin.queues import EgressQueue


def test_drop_tail_and_rate():
    q = EgressQueue(depth=3, pps=100)
    for i in range(5):
        if q.room():
            q.push(bytes([i]), now=0.0)
    assert len(q) == 3 and not q.room()
    assert q.pop_due(0.0) == [b"\x00"]               # the head of an idle queue leaves at once
    assert q.pop_due(0.005) == []                    # 10 ms per packet
    assert q.pop_due(0.0101) == [b"\x01"]
    assert q.deadline() == pytest.approx(0.02)
    assert q.pop_due(0.03) == [b"\x02"] and q.deadline() is None


def test_idle_queue_restarts_now_and_catch_up_is_bounded():
    q = EgressQueue(depth=100, pps=1000)
    q.push(b"a", now=10.0)
    assert q.pop_due(10.0) == [b"a"]
    for _ in range(50):
        q.push(b"x", now=10.5)
    # woken 40 ms late: sends at most the catch-up allowance, not 40 packets at once
    assert len(q.pop_due(10.54)) <= 5


def test_unlimited_drains_everything():
    q = EgressQueue(depth=10)
    for _ in range(4):
        q.push(b"x", 0.0)
    assert q.deadline() == 0.0
    assert len(q.pop_due(0.0)) == 4


@pytest.mark.parametrize("depth, pps, bps", [(0, None, None), (5, 0, None), (5, -1, None), (5, None, 0),
                                             (5, None, -8), (5, 10, 1000)])
def test_bad_settings(depth, pps, bps):
    with pytest.raises(ValueError):
        EgressQueue(depth=depth, pps=pps, bps=bps)


def departures(q, frames, step=1e-5, until=10.0):
    """Push `frames` at t=0 and step a virtual clock: [(time, frame length)]."""
    for f in frames:
        q.push(f, now=0.0)
    out, now = [], 0.0
    while len(q) and now < until:
        out += [(now, len(f)) for f in q.pop_due(now)]
        now = max(now + step, q.deadline() or now)
    return out


def test_bit_rate_serialises_by_length():
    bps = 1_000_000
    q = EgressQueue(depth=10, bps=bps)
    (t0, _), (t1, _), (t2, _) = departures(q, [bytes(1400), bytes(70), bytes(1400)], step=1e-6)
    # store and forward: each leaves once its last bit is out, the head of
    # the idle port too, so each gap is the departing frame's own time
    assert t0 == pytest.approx(1400 * 8 / bps, abs=1e-6)
    small, big = t1 - t0, t2 - t1
    assert big == pytest.approx(1400 * 8 / bps, abs=1e-6)
    assert small == pytest.approx(70 * 8 / bps, abs=1e-6)


def test_packet_rate_ignores_length():
    # BMv2 parity: the same gap for a 70-byte and a 1400-byte packet
    q = EgressQueue(depth=10, pps=1000)
    (t0, _), (t1, _), (t2, _) = departures(q, [bytes(1400), bytes(70), bytes(1400)])
    assert t1 - t0 == pytest.approx(t2 - t1) == pytest.approx(1e-3)


def test_bit_rate_drains_the_rate_in_bytes_per_second():
    # a mix of data packets and ACK-sized ones: the bytes leaving in a second
    # match the rate, whatever the mix (pps mode would send far fewer bytes)
    bps = 8_000_000
    frames = [bytes(1242) if i % 2 else bytes(70) for i in range(2000)]
    q = EgressQueue(depth=len(frames), bps=bps)
    out = departures(q, frames, step=1e-4)
    sent = sum(n for t, n in out if t < 1.0)
    assert sent * 8 == pytest.approx(bps, rel=0.01)
    p = EgressQueue(depth=len(frames), pps=round(bps / (8 * 1500)))
    sent_pps = sum(n for t, n in departures(p, frames, step=1e-4) if t < 1.0)
    assert sent_pps * 8 < 0.5 * bps


def test_bit_rate_catch_up_is_bounded_and_switching_units():
    q = EgressQueue(depth=500, bps=1_000_000)       # a 1500-byte frame takes 12 ms
    q.push(b"a", now=1.0)
    assert q.pop_due(1.0) == [] and q.pop_due(1.0 + 8e-6) == [b"a"]     # 1 byte: 8 us on the wire
    for _ in range(400):
        q.push(bytes(100), now=1.5)
    # woken 1 s late: at most 4 full frames' worth (48 ms = 60 such packets), not 400
    assert 1 <= len(q.pop_due(2.5)) <= 61
    q.set_rate(100)
    assert q.pps == 100 and q.bps is None and not q.unlimited
    q.set_rate_bps(None)
    assert q.unlimited and q.deadline() == 0.0


# --- fidelity accounting (queues.py's docstring): rate while backlogged, lateness

def drain_at(q, times):
    """Pop at each virtual time of `times`; the frames that left."""
    return [f for t in times for f in q.pop_due(t)]


def test_served_on_time_the_port_achieves_its_rate_and_nothing_is_late():
    q = EgressQueue(depth=100, bps=1_000_000)       # 1250-byte frames: 10 ms each
    for _ in range(10):
        q.push(bytes(1250), now=0.0)
    assert drain_at(q, [0.01 - 1e-9]) == []                  # the head leaves serialised, at 10 ms
    assert len(drain_at(q, [0.01 * k + 1e-9 for k in range(1, 11)])) == 10
    f = q.figures()
    assert f["service_s"] == pytest.approx(0.1) and f["lost_s"] == 0 and f["rate_ratio"] == 1.0
    assert f["bytes"] == 12500 and f["busy_s"] == pytest.approx(0.1)
    assert f["lateness"]["n"] == 10 and f["lateness"]["max_ms"] < 1e-6


def test_late_wake_ups_the_queue_catches_up_cost_lateness_not_rate():
    q = EgressQueue(depth=100, bps=1_000_000)
    for _ in range(10):
        q.push(bytes(1250), now=0.0)
    # every wake-up 4 ms late (within the catch-up allowance): frames leave late, back on schedule
    assert len(drain_at(q, [0.01 * k + 0.004 for k in range(1, 11)])) == 10
    f = q.figures()
    assert f["rate_ratio"] == 1.0 and f["lost_s"] == 0
    assert f["lateness"]["n"] == 10 and 4.0 <= f["lateness"]["p50_ms"] <= 4.0 * 2 ** 0.25


def test_a_wake_up_too_late_to_catch_up_loses_schedule_and_rate():
    q = EgressQueue(depth=100, bps=1_000_000)       # catch-up allowance: 4 x 12 ms (1500-byte frames)
    for _ in range(10):
        q.push(bytes(1250), now=0.0)
    assert len(q.pop_due(0.01 + 1e-9)) == 1
    late = q.pop_due(0.2)                           # the next due at 0.02, woken at 0.2
    # the schedule moves to 0.2 - 0.048: four frames are serialised by 0.2, 0.142 s are lost
    assert len(late) == 4
    drain_at(q, [t + 1e-9 for t in (0.202, 0.212, 0.222, 0.232, 0.242)])
    f = q.figures()
    assert len(q) == 0 and f["lost_s"] == pytest.approx(0.142)
    assert f["rate_ratio"] == pytest.approx(0.1 / 0.242, abs=1e-4)
    assert f["busy_s"] == pytest.approx(0.242)
    # lateness: 180 ms for the frame due at 0.02, then 28, 18, 8 ms, then on time
    assert f["lateness"]["n"] == 10 and f["lateness"]["max_ms"] == pytest.approx(180.0)


def test_frames_arriving_at_an_idle_port_are_neither_late_nor_lost():
    q = EgressQueue(depth=100, pps=100)             # 10 ms per packet
    for k in range(5):                              # one every 50 ms: the port is idle at each
        t = 0.05 * k
        q.push(b"x", now=t)
        assert q.pop_due(t) == [b"x"]
    f = q.figures()
    assert f["lateness"]["n"] == 0 and f["lost_s"] == 0 and f["rate_ratio"] == 1.0
    assert f["service_s"] == pytest.approx(0.05)


def test_unlimited_queues_keep_no_figures_of_rate():
    q = EgressQueue(depth=10)
    q.push(b"x", 0.0)
    q.pop_due(5.0)
    assert q.figures()["busy_s"] == 0 and q.figures()["rate_ratio"] is None


def test_a_rate_change_restarts_the_clock_without_a_burst_or_a_loss():
    q = EgressQueue(depth=100, bps=1_000_000)       # 10 ms per 1250-byte frame
    for _ in range(10):
        q.push(bytes(1250), now=5.0)
    assert len(drain_at(q, [5.01 + 1e-9, 5.02 + 1e-9])) == 2
    q.set_rate_bps(500_000)                          # a squeeze: 20 ms per frame
    assert q.deadline() == 0.0                       # a pop restarts the clock
    assert q.pop_due(5.1) == []                      # the head starts now, no catch-up from the old clock
    assert q.deadline() == pytest.approx(5.12)
    assert len(q.pop_due(5.12 + 1e-9)) == 1
    assert q.pop_due(5.1 + 0.039) == [] and len(q.pop_due(5.14 + 1e-9)) == 1
    f = q.figures()
    assert f["lost_s"] == 0 and f["rate_ratio"] == 1.0 and f["lateness"]["max_ms"] < 1e-3


def _drain(q):
    """Wake exactly when the queue says: [(time, frame)]."""
    out = []
    while not q.empty:
        now = q.deadline()
        out += [(now, f) for f in q.pop_due(now)]
    return out


def _lane_queue(bps=8000.0):
    q = EgressQueue(depth=2, bps=bps)         # 1 byte per ms
    q.set_ctrl_lane(True)
    return q


def test_the_control_lane_goes_ahead_of_queued_data_not_of_the_frame_in_service():
    q = _lane_queue()
    q.push(b"D" * 100, 0.0)
    q.push(b"E" * 100, 0.0)
    q.push(b"c" * 10, 0.05, ctrl=True)       # D is being serialised (0 to 0.1 s)
    assert len(q) == 2                        # the enqueue depth is the data lane's
    assert [(round(t, 3), f[:1]) for t, f in _drain(q)] == [(0.1, b"D"), (0.11, b"c"), (0.21, b"E")]


def test_a_control_frame_at_an_idle_port_starts_at_once_and_lanes_have_their_own_room():
    q = _lane_queue()
    q.push(b"D" * 100, 0.0)
    q.push(b"E" * 100, 0.0)
    assert not q.room() and q.room(ctrl=True)
    q.push(b"c" * 10, 0.0, ctrl=True)
    q.push(b"d" * 10, 0.0, ctrl=True)
    assert not q.room(ctrl=True)
    fresh = _lane_queue()
    fresh.push(b"c" * 10, 5.0, ctrl=True)
    assert fresh.deadline() == pytest.approx(5.01)


def test_without_the_lane_control_frames_wait_their_turn():
    q = EgressQueue(depth=4, bps=8000.0)
    q.push(b"D" * 100, 0.0)
    q.push(b"E" * 100, 0.0)
    q.push(b"c" * 10, 0.05, ctrl=True)
    assert len(q) == 3 and [f[:1] for _, f in _drain(q)] == [b"D", b"E", b"c"]


def test_the_enqueue_depth_leaves_out_the_frame_on_the_wire():
    """A switch's queue does not hold the frame its port is sending (BMv2
    lets a frame go as its slot starts): in bits/s mode a frame arriving
    while another is serialised reads depth 0, not 1."""
    q = EgressQueue(depth=8, bps=8000.0)          # 1 byte per ms
    assert q.waiting(0.0) == 0
    q.push(b"D" * 100, 0.0)                       # on the wire from 0 to 0.1 s
    assert len(q) == 1 and q.waiting(0.05) == 0
    q.push(b"E" * 100, 0.05)
    assert q.waiting(0.06) == 1
    assert q.pop_due(0.1) == [b"D" * 100] and q.waiting(0.1) == 0     # E is on the wire now
    lane = _lane_queue()
    lane.push(b"c" * 10, 0.0, ctrl=True)          # a control frame on the wire: the data lane waits whole
    lane.push(b"D" * 100, 0.001)
    assert lane.waiting(0.002) == 1
    pps = EgressQueue(depth=8, pps=10)            # BMv2's mode: the head has left as its slot started
    pps.push(b"a", 0.0)
    pps.push(b"b", 0.0)
    assert pps.waiting(0.0) == len(pps) == 2


def test_the_depth_at_a_later_delivery_follows_the_schedule():
    """waiting_at: a frame delivered later than now reads the frames whose
    serialisation has not started by then, the queue draining on its
    schedule; not before now, in packets/s mode or with control frames
    queued, the depth now."""
    q = EgressQueue(depth=8, bps=8000.0)          # 1 byte per ms: 100-byte frames start at 0, 0.1, 0.2, ...
    for _ in range(4):
        q.push(b"D" * 100, 0.0)
    assert q.waiting(0.0) == 3
    assert [q.waiting_at(0.0, t) for t in (0.0, 0.05, 0.15, 0.25, 0.35)] == [3, 3, 2, 1, 0]
    assert q.waiting_at(0.2, 0.1) == q.waiting(0.2)
    lane = _lane_queue()
    lane.push(b"D" * 100, 0.0)
    lane.push(b"D" * 100, 0.0)
    lane.push(b"c" * 10, 0.0, ctrl=True)
    assert lane.waiting_at(0.0, 0.35) == lane.waiting(0.0) == 1
    pps = EgressQueue(depth=8, pps=10)
    for _ in range(3):
        pps.push(b"a", 0.0)
    assert pps.waiting_at(0.0, 1.0) == pps.waiting(0.0) == 3
