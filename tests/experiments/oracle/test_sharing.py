"""The sharing rules at one instant, on hand-made link sets (rates in Mbit/s
read as plain numbers)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from experiments.oracle.sharing import max_min, priority_max_min


def test_one_flow_alone_gets_its_slowest_link():
    # path over a 10 and a 4: the 4 is the bottleneck
    assert max_min([10.0, 4.0], [[0, 1]]) == [4.0]


def test_two_flows_share_a_link_equally():
    assert max_min([10.0], [[0], [0]]) == [5.0, 5.0]


def test_max_min_gives_what_a_bottlenecked_flow_leaves_to_the_other():
    # B is held to 2 by link 1, so A takes the other 8 of link 0
    assert max_min([10.0, 2.0], [[0], [0, 1]]) == [8.0, 2.0]


def test_high_priority_takes_the_link_low_gets_nothing():
    rates, exact = priority_max_min([10.0], [[0], [0]], [[], [0]])
    assert (rates, exact) == ([10.0, 0.0], True)


def test_low_priority_gets_what_high_leaves():
    # H is held to 4 by link 1, so the low flow gets 10 - 4 = 6 of link 0
    rates, _ = priority_max_min([10.0, 4.0], [[0, 1], [0]], [[], [0]])
    assert rates == [4.0, 6.0]


def test_priority_is_per_link():
    # A is low on link 0, where B is high; on link 1 A is high and C is low.
    # Link 0 (10): B first, but B is held to 3 by link 2, so A gets 7 there;
    # link 1 (10): A first with its 7, C gets the other 3.
    rates, exact = priority_max_min([10.0, 10.0, 3.0], [[0, 1], [0, 2], [1]], [[0], [], [1]])
    assert exact and rates == pytest.approx([7.0, 3.0, 3.0])


def test_blocked_flow_keeps_its_fair_share_of_its_other_links():
    # links: 0 a NIC (10, no priority), 1 a switch egress (10), 2 (4) holds H.
    # Lo waits behind H on link 1; the blocking fill alone would let X take
    # 7 of the NIC meanwhile (Lo 3).  Exact: H = 4, so link 1 leaves Lo 6,
    # and on the NIC Lo and X are equals: 5 each.
    rates, exact = priority_max_min([10.0, 10.0, 4.0], [[2, 1], [0], [0, 1]], [[], [], [1]])
    assert exact and rates == pytest.approx([4.0, 5.0, 5.0])


def test_mutual_blocking_lets_the_blocked_flows_grow_together():
    # A is low on 0 behind B, B low on 1 behind A: a cycle.  They grow as
    # equals: 5 each on both links.
    rates, exact = priority_max_min([10.0, 10.0], [[0, 1], [0, 1]], [[0], [1]])
    assert exact and rates == pytest.approx([5.0, 5.0])


def test_refinement_corrects_a_blocking_fill_that_let_a_third_flow_run():
    # A low on 0 behind B, B low on 1 behind A and C; C (high on 1, room on
    # link 2) keeps growing, so the blocking fill gives C all of link 1 and
    # A nothing.  Under strict priority A and C are the high flows of link 1:
    # 5 each; B, low there, gets what they leave: 0.  A fills only half of
    # link 0, where it is low, which is fine.
    rates, exact = priority_max_min([10.0, 10.0, 100.0], [[0, 1], [0, 1], [1, 2]], [[0], [1], []])
    assert exact and rates == pytest.approx([5.0, 0.0, 5.0])


def test_zero_capacity_freezes_its_flows_at_zero():
    assert max_min([0.0, 10.0], [[0], [1]]) == [0.0, 10.0]


@st.composite
def instances(draw):
    """Random links (capacities 0..10) and flows (paths of 1..3 links, some
    links low for some flows)."""
    n_links = draw(st.integers(1, 5))
    caps = draw(st.lists(st.sampled_from([0.0, 1.0, 2.5, 4.0, 10.0]), min_size=n_links, max_size=n_links))
    paths, low = [], []
    for _ in range(draw(st.integers(1, 6))):
        path = draw(st.lists(st.integers(0, n_links - 1), min_size=1, max_size=3, unique=True))
        paths.append(path)
        low.append([link for link in path if draw(st.booleans())])
    return caps, paths, low


def loads(paths, rates, n_links, keep=lambda f, link: True):
    out = [0.0] * n_links
    for f, path in enumerate(paths):
        for link in path:
            if keep(f, link):
                out[link] += rates[f]
    return out


def full(x: float, cap: float) -> bool:
    return x >= cap - 1e-7


@settings(max_examples=300, deadline=None)
@given(instances())
def test_max_min_every_flow_is_largest_on_a_full_link(case):
    caps, paths, _ = case
    rates = max_min(caps, paths)
    load = loads(paths, rates, len(caps))
    assert all(x <= c + 1e-7 for x, c in zip(load, caps, strict=True))
    for f, path in enumerate(paths):
        assert any(full(load[link], caps[link]) and
                   all(rates[g] <= rates[f] + 1e-7 for g, p in enumerate(paths) if link in p) for link in path)


@settings(max_examples=300, deadline=None)
@given(instances())
def test_priority_every_flow_is_largest_of_its_class_where_its_class_fills_a_link(case):
    # high on link l: the high flows fill l and f is the largest of them;
    # low on l: all flows fill l and f is the largest low flow.  When the
    # rule falls back (exact False), the rates are still feasible.
    caps, paths, low = case
    rates, exact = priority_max_min(caps, paths, low)
    load = loads(paths, rates, len(caps))
    high = loads(paths, rates, len(caps), lambda f, link: link not in low[f])
    assert all(x <= c + 1e-7 for x, c in zip(load, caps, strict=True))
    if not exact:
        return
    def same_class(f, link):
        return [rates[g] for g, p in enumerate(paths) if link in p and (link in low[g]) == (link in low[f])]

    for f, path in enumerate(paths):
        assert any((full(load[link], caps[link]) if link in low[f] else full(high[link], caps[link]))
                   and max(same_class(f, link)) <= rates[f] + 1e-7 for link in path), (f, rates)
