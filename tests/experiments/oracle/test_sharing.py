"""The sharing rules at one instant, on hand-made link sets (rates in Mbit/s
read as plain numbers)."""

from __future__ import annotations

import pytest

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


def test_zero_capacity_freezes_its_flows_at_zero():
    assert max_min([0.0, 10.0], [[0], [1]]) == [0.0, 10.0]
