"""Metrics on hand-made records with known answers."""

import pytest

from analysis import metrics as m
from analysis.synthetic import T0_NS, ring_times

MS = 1_000_000  # ns

# 3 ranks, one iteration, 2(N-1) = 4 steps; (start, end) in ms per rank and k
TIMES = {
    0: [(10, 20), (20, 30), (30, 40), (40, 50)],
    1: [(12, 22), (22, 35), (35, 45), (45, 55)],
    2: [(11, 25), (25, 33), (33, 48), (48, 60)],
}


def make_events(times=TIMES, iter_=0, job=1, nbytes=1000, base_ms=0):
    n = len(times)
    n_steps = 2 * (n - 1)
    events = []
    for rank, steps in times.items():
        for k, (a, b) in enumerate(steps):
            phase = "rs" if k < n - 1 else "ag"
            step = iter_ * n_steps + k
            common = {"job": job, "rank": rank, "iter": iter_, "step": step, "k": k, "phase": phase}
            events.append({"t": (base_ms + a) * MS, "kind": "step_start", **common,
                           "send_chunk": 0, "recv_chunk": 0})
            events.append({"t": (base_ms + b) * MS, "kind": "step_end", **common, "bytes": nbytes})
    events.sort(key=lambda e: e["t"])
    return events


def test_cct_first_start_to_last_end():
    assert m.cct_per_iteration(make_events()) == {0: 50 * MS}


def test_cct_of_each_iteration_and_none_when_a_rank_did_not_finish():
    events = make_events() + make_events(iter_=1, base_ms=100)
    assert m.cct_per_iteration(events) == {0: 50 * MS, 1: 50 * MS}
    cut = [e for e in events if not (e["iter"] == 1 and e["rank"] == 2 and e["k"] == 3 and e["kind"] == "step_end")]
    windows = m.iteration_windows(cut)
    assert windows[1]["cct_ns"] is None and windows[1]["complete"] is False
    assert windows[0]["cct_ns"] == 50 * MS


def test_step_skew_of_starts_and_ends():
    skew = {s["step"]: (s["start_skew_ns"], s["end_skew_ns"]) for s in m.step_skew(make_events())}
    assert skew == {0: (2 * MS, 5 * MS), 1: (5 * MS, 5 * MS), 2: (5 * MS, 8 * MS), 3: (8 * MS, 10 * MS)}


def test_step_skew_none_where_a_rank_is_missing():
    events = [e for e in make_events() if not (e["rank"] == 1 and e["step"] == 3)]
    last = [s for s in m.step_skew(events) if s["step"] == 3][0]
    assert last["start_skew_ns"] is None and last["end_skew_ns"] is None


def test_misalignment_curve_known_answer():
    curve = m.misalignment_curve(make_events())
    assert curve == [(10 * MS, 1), (12 * MS, 0), (20 * MS, 1), (25 * MS, 0), (30 * MS, 1),
                     (35 * MS, 0), (40 * MS, 1), (48 * MS, 0), (60 * MS, 0)]
    stats = m.curve_stats(curve)
    # misaligned by one step for 2 + 5 + 5 + 8 = 20 ms of 50 ms
    assert stats["mean"] == pytest.approx(0.4)
    assert stats["max"] == 1
    assert stats["frac_misaligned"] == pytest.approx(0.4)
    # a window: [20, 30) ms holds 5 ms at 1 of 10 ms
    assert m.curve_stats(curve, 20 * MS, 30 * MS)["mean"] == pytest.approx(0.5)


def test_misalignment_counts_a_rank_that_has_not_started_and_ignores_ties():
    # rank 2 starts 30 ms late; ranks 0 and 1 move together (same t: no spike)
    times = {0: [(0 + 1, 10), (10, 20)], 1: [(1, 10), (10, 20)], 2: [(31, 40), (40, 50)]}
    # 3 ranks need 4 steps for a full iteration; the curve does not care
    curve = m.misalignment_curve(make_events(times))
    assert curve == [(1 * MS, 1), (10 * MS, 2), (31 * MS, 1), (40 * MS, 0), (50 * MS, 0)]


def test_misalignment_of_a_lockstep_ring_is_zero():
    times = ring_times(4, 2, 0.01)
    events = []
    for (rank, it, k), (a, b) in times.items():
        common = {"job": 1, "rank": rank, "iter": it, "step": it * 6 + k, "k": k, "phase": "rs" if k < 3 else "ag"}
        events.append({"t": a, "kind": "step_start", **common, "send_chunk": 0, "recv_chunk": 0})
        events.append({"t": b, "kind": "step_end", **common, "bytes": 1})
    events.sort(key=lambda e: e["t"])
    assert m.misalignment_curve(events) == [(T0_NS, 0), (T0_NS + 12 * 10 * MS, 0)]
    assert m.cct_per_iteration(events) == {0: 60 * MS, 1: 60 * MS}
    assert all(s["start_skew_ns"] == 0 and s["end_skew_ns"] == 0 for s in m.step_skew(events))


def test_goodput_per_rank_against_link_rate():
    gp = m.goodput(make_events(nbytes=1000), link_rate_bps=1e6)[0]
    # rank 0: 4 x 1000 bytes in 40 ms = 800 kbit/s = 80 % of 1 Mbit/s
    assert gp[0]["bytes"] == 4000
    assert gp[0]["bps"] == pytest.approx(800_000)
    assert gp[0]["fraction"] == pytest.approx(0.8)
    assert gp[1]["bps"] == pytest.approx(32_000 / 0.043)
    assert gp[2]["bps"] == pytest.approx(32_000 / 0.049)
    assert m.goodput(make_events())[0][0]["fraction"] is None


def test_link_rate_from_topology_or_none():
    assert m.link_rate_bps({"topology": {"host_rate_mbit": 20}}) == 20e6
    assert m.link_rate_bps({"topology": {"links": {"host": {"rate_mbit": 100}}}}) == 100e6
    assert m.link_rate_bps({"topology": {"kind": "star"}}) is None
    assert m.link_rate_bps({}) is None


def test_cnps_marks_and_rate_traces():
    ev = [
        {"t": 5, "kind": "rate", "job": 1, "rank": 0, "iter": 0, "step": 0, "rc": 1e6, "rt": 1e6, "alpha": 0.0},
        {"t": 6, "kind": "cnp", "job": 1, "rank": 1, "iter": 0, "step": 0, "dir": "tx", "peer": 0},
        {"t": 7, "kind": "cnp", "job": 1, "rank": 0, "iter": 0, "step": 0, "dir": "rx", "peer": 1},
        {"t": 7, "kind": "rate", "job": 1, "rank": 0, "iter": 0, "step": 0, "rc": 5e5, "rt": 1e6, "alpha": 1.0},
    ]
    assert m.cnp_counts(ev) == {"tx": 1, "rx": 1, "per_rank": {"0": {"tx": 0, "rx": 1}, "1": {"tx": 1, "rx": 0}}}
    tr = m.rate_traces(ev)[0]
    assert tr["t"] == [5, 7] and tr["rc"] == [1e6, 5e5] and tr["cnp_t"] == [7]
    assert m.flow_label(1, 2, [0, 1, 2]) == "job1 r2->r0"

    marks = m.switch_marks({
        "s1": {"counters": {"sym_marks": [0, 3], "queue_marks": [[2, 3000], [1, 1500]],
                            "pkts": {"0": {"packets": 10, "bytes": 1}, "1": {"packets": 5, "bytes": 1}}}},
        "s2": {"registers": {"sym_marks": [4]}},  # marks kept in registers; no queue_marks at all
    })
    assert marks["switches"]["s1"]["sym_marks"] == 3
    assert marks["switches"]["s1"]["queue_marks"] == 3
    assert marks["switches"]["s1"]["pkts"] == 15
    assert marks["switches"]["s1"]["sym_marks_by_index"] == {"1": 3}
    assert marks["switches"]["s2"] == {"sym_marks": 4, "sym_marks_by_index": {"0": 4},
                                       "queue_marks": None, "pkts": None}
    assert marks["total"] == {"sym_marks": 7, "queue_marks": 3, "pkts": 15}
    assert m.switch_marks({})["total"] == {"sym_marks": None, "queue_marks": None, "pkts": None}
    # a spine under track verdict: its marks on a leaf's verdict are Symphony marks, told apart too
    marks = m.switch_marks({"p1": {"counters": {"sym_marks": {}, "verdict_marks": {"2": {"packets": 5}, "3": 1}}},
                            "l1": {"counters": {"sym_marks": [2], "verdict_marks": {"1": 0}}}})
    assert marks["switches"]["p1"]["sym_marks"] == 6 and marks["switches"]["p1"]["verdict_marks"] == 6
    assert marks["total"]["sym_marks"] == 8 and marks["total"]["verdict_marks"] == 6


def test_run_metrics_relative_times_and_jobs_apart():
    events = make_events(job=1) + make_events(job=2, base_ms=5)
    events.sort(key=lambda e: e["t"])
    rm = m.run_metrics(events, {}, {"topology": {"host_rate_mbit": 1}})
    assert rm["t0_ns"] == 10 * MS
    assert set(rm["jobs"]) == {"1", "2"}
    assert rm["jobs"]["1"]["cct_s"] == [pytest.approx(0.05)]
    assert rm["jobs"]["2"]["iterations"][0]["start_s"] == pytest.approx(0.005)
    assert rm["jobs"]["1"]["misalignment"]["mean"] == pytest.approx(0.4)
    assert rm["link_rate_bps"] == 1e6
    assert rm["jobs"]["1"]["iterations"][0]["goodput"]["0"]["fraction_of_link"] == pytest.approx(0.8)


# ---------------------------------------------------------------- two jobs

def test_cct_per_job_and_iteration(run):
    rm = m.run_metrics(run.events, run.switches, run.config, run.jitter)
    assert set(rm["jobs"]) == {"1", "2"}
    assert rm["jobs"]["1"]["ranks"] == [0, 1, 2] and rm["jobs"]["2"]["ranks"] == [0, 1, 2]
    assert rm["jobs"]["1"]["cct_s"] == [pytest.approx(0.040), pytest.approx(0.040)]
    assert rm["jobs"]["2"]["cct_s"] == [pytest.approx(0.080), pytest.approx(0.085)]
    it = {j: [(i["iter"], i["start_s"], i["complete"]) for i in rm["jobs"][j]["iterations"]] for j in ("1", "2")}
    assert it["1"] == [(0, pytest.approx(0.002), True), (1, pytest.approx(0.042), True)]
    assert it["2"] == [(0, pytest.approx(0.0), True), (1, pytest.approx(0.080), True)]


def test_misalignment_per_job(run):
    jobs = m.run_metrics(run.events, {}, run.config)["jobs"]
    assert jobs["1"]["misalignment"] == {"mean": 0.0, "max": 0, "frac_misaligned": 0.0}
    assert jobs["2"]["misalignment"]["mean"] == pytest.approx(10 / 165)
    assert jobs["2"]["misalignment"]["max"] == 1
    assert jobs["2"]["misalignment_curve"] == [[pytest.approx(0.0), 0], [pytest.approx(0.080), 1],
                                               [pytest.approx(0.085), 0], [pytest.approx(0.100), 1],
                                               [pytest.approx(0.105), 0], [pytest.approx(0.165), 0]]
