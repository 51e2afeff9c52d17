"""The twin's egress queue on a virtual clock: drop-tail at the depth, drain
at the rate, idle restart, bounded catch-up."""

import pytest

from topologies.twin.queues import EgressQueue


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


@pytest.mark.parametrize("depth, pps", [(0, None), (5, 0), (5, -1)])
def test_bad_settings(depth, pps):
    with pytest.raises(ValueError):
        EgressQueue(depth=depth, pps=pps)
