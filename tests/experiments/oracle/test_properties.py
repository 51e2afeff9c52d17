"""Properties of the model on random scenarios: it never beats a link's byte
bound, every step of every rank finishes in both variants, an iteration never
beats the job's bandwidth bound."""

from __future__ import annotations

import bisect
import itertools

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from experiments.oracle import CapacityChange, CrossDemand, ModelInput, RingJob, Straggle, simulate
from tests.experiments.oracle.nets import dumbbell, dumbbell_path, hosts, ring, star, star_path

MBIT = 1e6
RATES = [0.5 * MBIT, 1 * MBIT, 2 * MBIT]
TOL = 1e-6


@st.composite
def scenarios(draw) -> tuple[ModelInput, int]:
    n_hosts = draw(st.integers(3, 6))
    h = hosts(n_hosts)
    rate = draw(st.sampled_from(RATES))
    if draw(st.booleans()):
        left = h[: n_hosts // 2]
        links, path = dumbbell(left, h[n_hosts // 2:], rate, draw(st.sampled_from(RATES))), dumbbell_path(left)
    else:
        links, path = star(h, rate), star_path
    jobs = []
    for j in range(draw(st.integers(1, 2))):
        members = draw(st.permutations(h))[: draw(st.integers(2, min(4, n_hosts)))]
        n = len(members)
        # a multiple of 4N bytes: equal chunks, so the bound holds exactly
        jobs.append(ring(j + 1, list(members), 4 * n * draw(st.integers(1, 200)), draw(st.integers(1, 2)), path))
    ids = [link.id for link in links]
    changes = []
    for _ in range(draw(st.integers(0, 2))):
        link = draw(st.sampled_from(ids))
        nominal = next(x.rate_bps for x in links if x.id == link)
        t0 = draw(st.floats(0.0, 0.05))
        t1 = t0 + draw(st.floats(0.001, 0.05))
        changes += [CapacityChange(t0, link, nominal * draw(st.floats(0.05, 1.0))), CapacityChange(t1, link, nominal)]
    cross = [CrossDemand(t0, t0 + draw(st.floats(0.001, 0.05)), (draw(st.sampled_from(ids)),),
                         draw(st.floats(0.1, 3.0)) * MBIT)
             for t0 in draw(st.lists(st.floats(0.0, 0.05), max_size=2))]
    straggles = [Straggle(job.job, draw(st.integers(0, job.n_ranks - 1)), draw(st.integers(0, job.iterations - 1)),
                          draw(st.floats(0.0, 0.05)))
                 for job in draw(st.lists(st.sampled_from(jobs), max_size=2))]
    mi = ModelInput(links, tuple(jobs), tuple(changes), tuple(cross), tuple(straggles))
    return mi, draw(st.integers(0, 2))


def residual(mi: ModelInput, link: str) -> tuple[list[float], list[float]]:
    """Breakpoints and the capacity left for ring flows after each (the
    capacity in force, less the cross traffic on the link, not below 0)."""
    nominal = next(x.rate_bps for x in mi.links if x.id == link)
    changes = sorted((c.t_s, i, c.rate_bps) for i, c in enumerate(mi.capacity_changes) if c.link == link)
    crosses = [x for x in mi.cross if link in x.path]
    times = sorted({0.0, *(t for t, _, _ in changes), *(t for x in crosses for t in (x.start_s, x.end_s))})
    left = []
    for t in times:
        cap = nominal
        for tc, _, rate in changes:
            if tc <= t:
                cap = rate
        load = sum(x.rate_bps for x in crosses if x.start_s <= t < x.end_s)
        left.append(max(0.0, cap - load))
    return times, left


def integral(times: list[float], left: list[float], a: float, b: float) -> float:
    total = 0.0
    first = max(0, bisect.bisect_right(times, a) - 1)
    for i in range(first, len(times)):
        lo, hi = max(a, times[i]), min(b, times[i + 1] if i + 1 < len(times) else b)
        if hi > lo:
            total += left[i] * (hi - lo)
    return total


def check_byte_bound(mi: ModelInput, result) -> None:
    """For every directed link and every window [a, b] between a transfer's
    send start and another's send end: the bits of the transfers sent wholly
    inside the window fit in what the link offered ring flows then."""
    jobs = {j.job: j for j in mi.jobs}
    for link in mi.links:
        through = [x for x in result.transfers if link.id in jobs[x.job].paths[x.src]]
        times, left = residual(mi, link.id)
        for a in sorted({x.send_start_s for x in through}):
            inside = sorted((x.send_end_s, x.bytes * 8) for x in through if x.send_start_s >= a)
            ends = [end for end, _ in inside]
            bits = list(itertools.accumulate(b for _, b in inside))
            for b_end in ends:
                carried = bits[bisect.bisect_right(ends, b_end) - 1]
                offered = integral(times, left, a, b_end)
                assert carried <= offered * (1 + TOL) + 1e-3, (link.id, a, b_end, carried, offered)


def check_every_step_finishes(job: RingJob, result) -> None:
    spi = 2 * (job.n_ranks - 1)
    mine = [s for s in result.steps if s.job == job.job]
    assert sorted((s.rank, s.step) for s in mine) == \
        [(r, s) for r in range(job.n_ranks) for s in range(spi * job.iterations)]
    assert all(s.end_s >= s.start_s for s in mine)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_the_model_never_beats_a_link_and_finishes_every_step(case):
    mi, threshold = case
    for variant in ("baseline", "symphony"):
        result = simulate(mi, variant, threshold)
        check_byte_bound(mi, result)
        for job in mi.jobs:
            check_every_step_finishes(job, result)
            # squeezes only lower a rate and straggles only delay: no
            # iteration beats the bound at the nominal rates
            assert all(c >= result.jobs[job.job].bound_s * (1 - TOL) for c in result.jobs[job.job].cct_s)
