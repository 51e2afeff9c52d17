"""The program's control-plane encodings (topologies.switch.program): job
start state, track() parameters, queue_ecn ranges, checked on the twin's
pure pipeline where a table is needed."""

from __future__ import annotations

import pytest

from contract import p4names as N
from topologies.switch import program as S
from topologies.switch.twin.pipeline import Pipeline


def queue_mark_probability(q: int, kmin: int, kmax: int, pmax: float) -> float:
    """The ideal marking probability queue_ecn's entries approximate."""
    if q > kmax:
        return 1.0
    if q <= kmin:
        return 0.0
    return pmax * (q - kmin) / (kmax - kmin)


def test_job_install_writes():
    writes = S.job_install_writes(2, [5, 6], 0)
    assert ("flow_step", 5, N.TAG_MASK) in writes and ("flow_step", 6, N.TAG_MASK) in writes
    assert ("frontier", 2, N.TAG_MASK) in writes
    slots = sorted(i for name, i, v in writes if name == "step_count" and v == 0)
    assert slots == list(range(2 * N.W, 3 * N.W))
    with pytest.raises(ValueError, match="flow_id"):
        S.job_install_writes(0, [N.MAX_FLOWS], 0)


def test_job_install_writes_tcp_in_the_6_bit_width():
    writes = S.job_install_writes(1, [3], 0, tcp=True)
    assert ("flow_step", 3, N.DSCP_TAG_MASK) in writes and ("frontier", 1, N.DSCP_TAG_MASK) in writes
    assert ("frontier", 1, 63 - 1) in S.job_install_writes(1, [3], 64 + 63, tcp=True)


def test_track_params_checked():
    assert S.track_params(1, 2, 3, 4, True) == ["1", "2", "3", "4", "1", "0"]
    assert S.track_params(1, 2, 3, 31, True, tcp=True) == ["1", "2", "3", "31", "1", "1"]
    for bad in [dict(flow_id=N.MAX_FLOWS), dict(job_slot=N.MAX_JOBS), dict(n_local=0), dict(threshold=N.TAG_HALF),
                dict(threshold=N.DSCP_TAG_HALF, tcp=True)]:
        args = dict(flow_id=0, job_slot=0, n_local=2, threshold=1, enabled=1) | bad
        with pytest.raises(ValueError):
            S.track_params(**args)


@pytest.mark.parametrize("kmin, kmax, pmax", [(5, 20, 0.2), (0, 3, 1.0), (10, 10, 0.5), (100, 2000, 0.1)])
def test_queue_ecn_entries_follow_the_ramp(kmin, kmax, pmax):
    entries = S.queue_ecn_entries(kmin, kmax, pmax)
    assert len(entries) <= N.QUEUE_ECN_SIZE
    sw = Pipeline()
    for key, p, prio in entries:
        sw.table_add("queue_ecn", "queue_mark_prob", [key], [str(p)], prio)
    table = sw.tables["queue_ecn"]
    for q in list(range(0, kmax + 5)) + [(1 << 19) - 1]:
        e = table.lookup_range(q)
        got = e.params[0] / N.PROB_ONE if e else 0.0
        ideal = queue_mark_probability(q, kmin, kmax, pmax)
        step = pmax * max(1, (kmax - kmin) / (N.QUEUE_ECN_SIZE - 1)) / max(1, kmax - kmin)
        assert abs(got - ideal) <= step + 1e-4, (q, got, ideal)


@pytest.mark.parametrize("frames", [1, 8, 32])
def test_a_coarse_frame_is_marked_as_any_of_its_packets_would_be(frames):
    """The deployment simulation's frame of C packets: its receiver answers
    with a CNP if any of the C would have been marked, so the frame is
    marked at 1 - (1 - p)^C, not at one packet's p (which made the coarse
    runs' DCQCN see a few times fewer CNPs just above Kmin)."""
    kmin, kmax, pmax = 12, 50, 0.2                  # the deployment's thresholds in frames of 32
    sw = Pipeline()
    for key, p, prio in S.queue_ecn_entries(kmin, kmax, pmax, frame_packets=frames):
        sw.table_add("queue_ecn", "queue_mark_prob", [key], [str(p)], prio)
    for q in range(0, kmax + 3):
        e = sw.tables["queue_ecn"].lookup_range(q)
        got = e.params[0] / N.PROB_ONE if e else 0.0
        assert got == pytest.approx(1 - (1 - queue_mark_probability(q, kmin, kmax, pmax)) ** frames, abs=1e-4), q
    with pytest.raises(ValueError, match="frame_packets"):
        S.queue_ecn_entries(kmin, kmax, pmax, frame_packets=0)
