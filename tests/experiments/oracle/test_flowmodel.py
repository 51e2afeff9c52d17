"""The flow-level model against answers worked out by hand.

Unless a test says otherwise links run at 1 Mbit/s, so 1000 bytes (8000 bits)
take 8 ms and 4000 bytes 32 ms; a ring of N ranks has 2(N-1) steps per
iteration and each step moves one chunk of S/N bytes over every ring edge.
"""

from __future__ import annotations

import time
from dataclasses import replace

import pytest

from experiments.oracle import (
    CapacityChange,
    CrossDemand,
    Link,
    ModelError,
    ModelInput,
    RingJob,
    Straggle,
    predict,
    simulate,
)
from tests.experiments.oracle.nets import dumbbell, dumbbell_path, duplex, hosts, ring, star

MBIT = 1e6
MS = 1e-3
BOTH = ("baseline", "symphony")


def approx(x):
    return pytest.approx(x, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("variant", BOTH)
def test_one_flow_alone_on_a_link(variant):
    # two hosts joined by one full-duplex link: each direction carries one
    # flow.  S = 8000 bytes, N = 2: chunks of 4000 bytes, 32 ms each at
    # 1 Mbit/s; 2 steps: CCT 64 ms, which is the bound 2(2-1)/2 x 8000 x 8 / 1e6
    links = (Link("h1>h2", MBIT), Link("h2>h1", MBIT))
    job = RingJob(1, ("h1", "h2"), (("h1>h2",), ("h2>h1",)), 8000, 1)
    res = simulate(ModelInput(links, (job,)), variant)
    assert res.jobs[1].cct_s == approx((64 * MS,))
    assert res.jobs[1].bound_s == approx(64 * MS)
    assert [(x.send_start_s, x.send_end_s) for x in res.transfers if x.src == 0] == \
        [approx((0.0, 32 * MS)), approx((32 * MS, 64 * MS))]


@pytest.mark.parametrize("variant", BOTH)
def test_two_flows_sharing_a_link(variant):
    # dumbbell, every link 1 Mbit/s; job 1 rings h1 (s1) - h3 (s2), job 2
    # h2 (s1) - h4 (s2).  Each direction of the s1-s2 link carries one flow
    # of each job: 0.5 Mbit/s each, so a 4000-byte chunk takes 64 ms and a
    # 2-step iteration 128 ms, twice the bound of 64 ms.  The jobs stay in
    # step, so Symphony changes nothing.
    left = ["h1", "h2"]
    path = dumbbell_path(left)
    jobs = (ring(1, ["h1", "h3"], 8000, 1, path), ring(2, ["h2", "h4"], 8000, 1, path))
    res = simulate(ModelInput(dumbbell(left, ["h3", "h4"], MBIT), jobs), variant)
    for j in (1, 2):
        assert res.jobs[j].cct_s == approx((128 * MS,))
        assert res.jobs[j].bound_s == approx(64 * MS)


@pytest.mark.parametrize("variant", BOTH)
@pytest.mark.parametrize("n", [2, 4, 8])
def test_ring_on_a_star_meets_the_bandwidth_bound(n, variant):
    # S = 4000 N bytes: chunks of 4000 bytes (32 ms); on a star every
    # directed link carries one flow, so each of the 2(N-1) steps takes 32 ms:
    # CCT = 2(N-1) x 32 ms = 2(N-1)/N x S x 8 / 1e6, the bound
    h = hosts(n)
    res = simulate(ModelInput(star(h, MBIT), (ring(1, h, 4000 * n, 2),)), variant)
    job = res.jobs[1]
    assert job.cct_s == approx((2 * (n - 1) * 32 * MS,) * 2)
    assert job.bound_s == approx(2 * (n - 1) * 32 * MS)
    assert job.bound_rate_bps == MBIT


def test_uneven_chunks_the_largest_paces_every_step():
    # N = 3, S = 40 bytes = 10 floats: chunks of 4, 3, 3 floats (16, 12, 12
    # bytes, hosts.ring.chunk_bounds).  At 96 bit/s 12 bytes take 1 s and
    # 16 bytes 4/3 s.  Worked step by step (F(r,k): rank r's step-k send ends,
    # its successor's step k ends then):
    #   k=0: F = 4/3, 1, 1        k=1: F = 7/3, 8/3, 2
    #   k=2: F = 10/3, 11/3, 4    k=3: F = 16/3, 14/3, 5
    # CCT = 16/3 s: the 16-byte chunk is on the critical path at each of the
    # 4 steps (4 x 4/3), above the bound 2(2/3) x 40 x 8 / 96 = 40/9 s
    h = hosts(3)
    res = simulate(ModelInput(star(h, 96.0), (ring(1, h, 40, 1),)))
    assert res.jobs[1].cct_s == approx((16 / 3,))
    assert res.jobs[1].bound_s == approx(40 / 9)
    assert sorted({s.bytes for s in res.steps}) == [12, 16]


@pytest.mark.parametrize("variant", BOTH)
@pytest.mark.parametrize("iteration", [0, 1])
def test_a_straggler_delays_its_job_by_its_delay_and_no_more(iteration, variant):
    # N = 4 on a star, steps of d = 32 ms, no link shared.  Rank 2 starts
    # the iteration D = 80 ms late: every send of rank 2 ends D later than
    # on time, rank 3's from step 1 on, rank 0's from step 2, rank 1's from
    # step 3, so the last step ends at 6d + D for every rank and the next
    # iteration starts together again: that iteration's CCT is 6d + D, the
    # others 6d, the run 18d + D.
    d, delay = 32 * MS, 80 * MS
    h = hosts(4)
    mi = ModelInput(star(h, MBIT), (ring(1, h, 16000, 3),), straggles=(Straggle(1, 2, iteration, delay),))
    res = simulate(mi, variant)
    expected = [6 * d] * 3
    expected[iteration] += delay
    assert res.jobs[1].cct_s == approx(tuple(expected))
    assert res.end_s == approx(18 * d + delay)


@pytest.mark.parametrize("variant", BOTH)
def test_a_sleeping_straggler_takes_no_packets(variant):
    # 2 ranks on a star, chunks of 4000 bytes (d = 32 ms).  Rank 1 sleeps
    # D = 80 ms before iteration 0, as the agent does (time.sleep, no socket
    # read): rank 0's chunk of step 0 waits for it, so its transfer runs
    # D..D + d, not 0..d, beside rank 1's own; step 1 follows, CCT D + 2d.
    d, delay = 32 * MS, 80 * MS
    h = hosts(2)
    res = simulate(ModelInput(star(h, MBIT), (ring(1, h, 8000, 1),), straggles=(Straggle(1, 1, 0, delay),)),
                   variant)
    sends = {(x.src, x.step): (x.send_start_s, x.send_end_s) for x in res.transfers}
    assert sends[(0, 0)] == approx((delay, delay + d))
    assert sends[(1, 0)] == approx((delay, delay + d))
    assert res.end_s == approx(delay + 2 * d)


@pytest.mark.parametrize("variant", BOTH)
def test_a_step_ends_when_its_last_byte_has_crossed_the_path(variant):
    # 2 ranks on a star, each link delays 5 ms: a path (host -> switch ->
    # host) delays 10 ms.  A 4000-byte chunk is sent in tau = 32 ms and
    # arrives 10 ms later: step 0 ends at 42 ms, step 1 is sent 42..74 ms and
    # arrives at 84 ms.  CCT = 2 tau + 4 x 5 ms = 84 ms per iteration.
    h = hosts(2)
    res = simulate(ModelInput(star(h, MBIT, delay_s=5 * MS), (ring(1, h, 8000, 2),)), variant)
    assert res.jobs[1].cct_s == approx((84 * MS, 84 * MS))
    first = next(s for s in res.steps if s.rank == 0 and s.step == 0)
    assert (first.start_s, first.end_s) == approx((0.0, 42 * MS))
    assert res.end_s == approx(168 * MS)


def _victim() -> ModelInput:
    """Job 1 (A): 4 ranks, a0 a1 on s1 and a2 a3 on s2, S = 4000 bytes (chunks
    of 1000 bytes: u = 8 ms), rank 1 (a1) 10u late.  Job 2 (B): b0 on s1, b1
    on s2, S = 2000 bytes (chunks of 1000 bytes).  Every link 1 Mbit/s."""
    left, right = ["a0", "a1", "b0"], ["a2", "a3", "b1"]
    path = dumbbell_path(left)
    jobs = (ring(1, ["a0", "a1", "a2", "a3"], 4000, 1, path), ring(2, ["b0", "b1"], 2000, 1, path))
    return ModelInput(dumbbell(left, right, MBIT), jobs, straggles=(Straggle(1, 1, 0, 80 * MS),))


@pytest.mark.parametrize(("variant", "threshold", "b_cct_u"), [
    ("baseline", 0, 4), ("symphony", 0, 2), ("symphony", 1, 3)])
def test_strict_priority_gives_the_victim_job_the_fabric(variant, threshold, b_cct_u):
    # While a1 straggles, a2 sends step 0, a3 steps 0 and 1 (over the fabric
    # s2>s1, beside B's b1 -> b0) and a0 steps 0..2; A's frontier at s1 and
    # s2 is a1's -1.
    # Baseline: on s2>s1 a3's and b1's step 0 share 0.5/0.5: both end at 2u;
    #   b1's step 1 and a3's step 1 (both queued since 1u) share again: 4u.
    #   B's CCT = 4u.
    # Symphony, threshold 0: a3's flow is at step 0, 0 - (-1) > 0: it yields
    #   on s2>s1; B runs alone: 2 steps of u, CCT 2u (its bound); a3 sends
    #   2u..3u and 3u..4u.
    # Symphony, threshold 1: step 0 is not ahead (1 > 1 fails), so step 0
    #   shares as in the baseline (B's step 0 ends at 2u); step 1 (2 - (-1)
    #   > 1) yields: b1 sends 2u..3u alone, CCT 3u.
    # A: whatever happened before, a0's step 2 ends sending at 5u < 10u, so
    #   when a1 wakes at 10u every variant is in the same state: a1 sends
    #   its steps back to back and the ring runs 6 unit steps after it:
    #   last step end 16u (worked per rank: F(1,k) = 11, 12, 13, 14, 15, 16u).
    u = 8 * MS
    res = simulate(_victim(), variant, threshold)
    assert res.jobs[2].cct_s == approx((b_cct_u * u,))
    assert res.jobs[1].cct_s == approx((16 * u,))


@pytest.mark.parametrize(("trackers", "b_cct_u"), [(None, 2), (frozenset({"s1", "s2"}), 2), (frozenset({"s1"}), 4)])
def test_only_the_switches_that_track_a_flow_mark_it(trackers, b_cct_u):
    # the victim case, Symphony, threshold 0: a3's flow yields on s2>s1 where
    # s2 tracks it (B 2u); tracked at s1 alone (symphony.track leaves with
    # s2 left out) it yields only on s1>a0, which nothing else wants: B as
    # in the baseline, 4u
    u = 8 * MS
    mi = _victim()
    a = mi.jobs[0]
    mi = replace(mi, jobs=(replace(a, trackers=None if trackers is None else (trackers,) * a.n_ranks), mi.jobs[1]))
    assert simulate(mi, "symphony", 0).jobs[2].cct_s == approx((b_cct_u * u,))
    with pytest.raises(ModelError, match="1 tracker sets for 4 ring edges"):
        simulate(replace(mi, jobs=(replace(a, trackers=(frozenset(),)), mi.jobs[1])))


def _victim_over_a_spine() -> ModelInput:
    """_victim's jobs with a spine s2 between the leaves s1 and s3: s3>s2
    runs at 2 Mbit/s, so the one link the two jobs contend for is s2>s1."""
    sw = frozenset({"s1", "s2", "s3"})
    left, right = ["a0", "a1", "b0"], ["a2", "a3", "b1"]
    links = [link for h in left for link in duplex(h, "s1", MBIT, switches=sw)]
    links += [link for h in right for link in duplex(h, "s3", MBIT, switches=sw)]
    links += duplex("s1", "s2", MBIT, switches=sw)
    links += [Link("s3>s2", 2 * MBIT, 0.0, "s3"), Link("s2>s3", MBIT, 0.0, "s2")]

    def path(a: str, b: str) -> tuple[str, ...]:
        sa, sb = ("s1" if a in left else "s3"), ("s1" if b in left else "s3")
        middle = () if sa == sb else (f"{sa}>s2", f"s2>{sb}")
        return (f"{a}>{sa}", *middle, f"{sb}>{b}")
    jobs = (ring(1, ["a0", "a1", "a2", "a3"], 4000, 1, path), ring(2, ["b0", "b1"], 2000, 1, path))
    return ModelInput(tuple(links), jobs, straggles=(Straggle(1, 1, 0, 80 * MS),))


@pytest.mark.parametrize(("verdict", "b_cct_u"), [(False, 4), (True, 2)])
def test_a_leafs_verdict_lets_the_spine_after_it_mark(verdict, b_cct_u):
    # A tracked at the leaves s1 and s3 only (symphony.track leaves or
    # verdict), Symphony, threshold 0.  a3's flow is ahead at s3 (A's
    # frontier there is a1's -1: a1 -> a2 ends at s3) from its step 0, but
    # s3>s2 has room for both jobs; they contend on s2>s1, a spine's link.
    # Leaves: s2 marks nothing, B shares s2>s1 as in the baseline, 4u.
    # Verdict: s2 marks a3's flow as s3 judged it, it yields there, B 2u.
    u = 8 * MS
    mi = _victim_over_a_spine()
    a = mi.jobs[0]
    mi = replace(mi, jobs=(replace(a, trackers=(frozenset({"s1", "s3"}),) * a.n_ranks, verdict=verdict), mi.jobs[1]))
    assert simulate(mi, "symphony", 0).jobs[2].cct_s == approx((b_cct_u * u,))
    assert simulate(mi, "baseline", 0).jobs[2].cct_s == approx((4 * u,))


@pytest.mark.parametrize("variant", BOTH)
def test_a_squeeze_slows_the_flows_that_cross_it(variant):
    # 2 ranks on a star; h1's link (both directions) runs at 0.5 Mbit/s from
    # 10 to 30 ms.  Each flow crosses one squeezed direction: 10 ms x 1 +
    # 20 ms x 0.5 = 20000 of 32000 bits by 30 ms, the other 12000 take 12 ms:
    # step 0 ends at 42 ms, step 1 (unsqueezed) at 74 ms.
    h = hosts(2)
    squeeze = tuple(CapacityChange(t, link, rate) for t, rate in ((10 * MS, MBIT / 2), (30 * MS, MBIT))
                    for link in ("h1>s1", "s1>h1"))
    res = simulate(ModelInput(star(h, MBIT), (ring(1, h, 8000, 1),), capacity_changes=squeeze), variant)
    assert res.jobs[1].cct_s == approx((74 * MS,))


@pytest.mark.parametrize(("demand", "cct_ms"), [
    # 0.75 Mbit/s to h2 for 64 ms: h1 -> h2 gets 0.25 (16000 bits by 64 ms),
    # the rest by 80 ms.  Rank 0 started step 1 at 32 ms, but its edge sends
    # it only after step 0: 80..112 ms; rank 1 sends its step 1 80..112 ms.
    (0.75 * MBIT, 112),
    # 2 Mbit/s, more than the link: it takes all of it for 64 ms, h1 -> h2
    # sends its 32 ms after that (64..96), step 1 96..128 ms.
    (2 * MBIT, 128),
])
def test_cross_traffic_is_served_first(demand, cct_ms):
    h = hosts(2)
    cross = (CrossDemand(0.0, 64 * MS, ("s1>h2",), demand),)
    res = simulate(ModelInput(star(h, MBIT), (ring(1, h, 8000, 1),), cross=cross))
    assert res.jobs[1].cct_s == approx((cct_ms * MS,))


def test_the_timeline_has_every_step_of_every_rank_like_the_agents_records():
    h = hosts(3)
    res = simulate(ModelInput(star(h, MBIT), (ring(7, h, 4000, 2),)))
    assert len(res.steps) == 3 * 2 * 4
    for s in res.steps:
        assert s.job == 7 and s.step == s.iteration * 4 + s.k
        assert s.phase == ("rs" if s.k < 2 else "ag")
        assert s.end_s >= s.start_s
    # a rank's steps follow each other: step s+1 starts when step s ends
    r0 = [s for s in res.steps if s.rank == 0]
    assert all(a.end_s == b.start_s for a, b in zip(r0, r0[1:], strict=False))


def _bench_inputs(two_jobs: bool) -> ModelInput:
    """16 hosts on a dumbbell with a 2.5:1 oversubscribed fabric, every access
    link its own rate (so hardly two transfers end together), 10 us per
    link, a squeeze, cross traffic and a straggler per iteration: one 16-rank
    job, or two 8-rank jobs spread over both sides."""
    h = hosts(16)
    left = h[:8]
    path = dumbbell_path(left)
    links = tuple(Link(x.id, x.rate_bps * (0.6 + 0.4 * (7 * i % 16) / 16) if "s1>s2" not in x.id and "s2>s1" not in x.id
                       else x.rate_bps, 1e-5, x.leaves_switch)
                  for i, x in enumerate(dumbbell(left, h[8:], 1e8, 2.5e8)))
    order = h[::2] + h[1::2]
    if two_jobs:
        jobs = (ring(1, order[:8], 8 * 4 * 250_000, 3, path), ring(2, order[8:], 8 * 4 * 150_000, 3, path))
    else:
        jobs = (ring(1, order, 16 * 4 * 250_000, 3, path),)
    squeeze = (CapacityChange(0.05, "h3>s1", 1e7), CapacityChange(0.05, "s1>h3", 1e7),
               CapacityChange(0.5, "h3>s1", 1e8), CapacityChange(0.5, "s1>h3", 1e8))
    return ModelInput(links, jobs, capacity_changes=squeeze, cross=(CrossDemand(0.1, 0.4, ("s1>s2",), 5e7),),
                      straggles=tuple(Straggle(1, 5, i, 0.05) for i in range(3)))


@pytest.mark.parametrize("two_jobs", [False, True])
@pytest.mark.parametrize("variant", BOTH)
def test_sixteen_ranks_take_well_under_a_second(two_jobs, variant):
    mi = _bench_inputs(two_jobs)
    t0 = time.perf_counter()
    res = simulate(mi, variant)
    assert time.perf_counter() - t0 < 1.0
    assert len(res.steps) == sum(j.n_ranks * 2 * (j.n_ranks - 1) * 3 for j in mi.jobs)


def test_a_link_with_no_capacity_for_good_is_reported():
    h = hosts(2)
    squeeze = (CapacityChange(0.0, "s1>h2", 0.0),)
    with pytest.raises(ModelError, match="stalled"):
        simulate(ModelInput(star(h, MBIT), (ring(1, h, 8000, 1),), capacity_changes=squeeze))


@pytest.mark.parametrize(("mi", "match"), [
    (ModelInput(star(["h1", "h2"], MBIT), (RingJob(1, ("h1", "h2"), (("h1>s1", "s1>h9"),) * 2, 8, 1),)),
     "unknown link"),
    (ModelInput(star(["h1", "h2"], MBIT), (RingJob(1, ("h1", "h2"), (("h1>s1", "s1>h2"),), 8, 1),)),
     "1 paths for 2 ring edges"),
    (ModelInput(star(["h1"], MBIT), (RingJob(1, ("h1",), (("h1>s1",),), 8, 1),)), "at least 2 ranks"),
    (ModelInput(star(["h1", "h2"], MBIT), (ring(1, ["h1", "h2"], 8, 1),), straggles=(Straggle(1, 2, 0, 1.0),)),
     "no such job, rank or iteration"),
    (ModelInput(star(["h1", "h2"], -1.0), (ring(1, ["h1", "h2"], 8, 1),)), "rate_bps"),
])
def test_bad_inputs_are_named(mi, match):
    with pytest.raises(ModelError, match=match):
        simulate(mi)


def test_bad_variant_or_threshold():
    mi = ModelInput(star(["h1", "h2"], MBIT), (ring(1, ["h1", "h2"], 8, 1),))
    with pytest.raises(ModelError, match="variant"):
        simulate(mi, "fast")
    with pytest.raises(ModelError, match="threshold"):
        simulate(mi, "symphony", -1)


def test_predict_puts_both_variants_side_by_side():
    # the victim case with threshold 0: B 4u -> 2u (-50 %), A 16u both
    u = 8 * MS
    jobs = predict(_victim(), threshold=0).jobs
    assert jobs[2].as_dict() == approx({"baseline_cct_s": 4 * u, "symphony_cct_s": 2 * u,
                                        "cct_change_pct": -50.0, "bound_s": 2 * u})
    assert (jobs[1].baseline_cct_s, jobs[1].symphony_cct_s, jobs[1].cct_change_pct) == approx((16 * u, 16 * u, 0.0))
