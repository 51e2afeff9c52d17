"""Routes under an ECMP routing: the switches' hash picks the spine, so a ring
flow's path depends on its step's tag (ecmp) or not (ecmp-flow)."""

from __future__ import annotations

import pytest

from tests.harness.specs import topo
from topologies.spec.routes import (
    any_path_links,
    candidate_ports,
    path_links,
    ring_egresses,
    ring_flow,
    ring_switches,
    route,
)


def spines(t, src, dst, steps, dport=5000):
    return {route(t, src, dst, flow=ring_flow(k, dport))[1].switch for k in steps}


def test_ecmp_needs_the_flow():
    t = topo("leafspine", 8, 20, leaves=2, spines=4, routing="ecmp")
    with pytest.raises(ValueError, match="depends on the flow's ports"):
        route(t, "h1", "h5")


def test_ecmp_moves_a_ring_flow_with_its_step_and_ecmp_flow_does_not():
    t = topo("leafspine", 8, 20, leaves=2, spines=4, routing="ecmp")
    assert len(spines(t, "h1", "h5", range(64))) == 4
    f = topo("leafspine", 8, 20, leaves=2, spines=4, routing="ecmp-flow")
    assert len(spines(f, "h1", "h5", range(64))) == 1
    d = topo("leafspine", 8, 20, leaves=2, spines=4)
    assert spines(d, "h1", "h5", range(64)) == {route(d, "h1", "h5")[1].switch}


def test_candidates_and_where_a_flow_may_go():
    t = topo("leafspine", 8, 20, leaves=2, spines=3, routing="ecmp")
    assert candidate_ports(t)[("l1", "h5")] == (5, 6, 7)
    assert candidate_ports(t)[("p1", "h5")] == (2,)
    assert ring_switches(t, "h1", "h5", 5000) == ["l1", "p1", "p2", "p3", "l2"]
    assert ring_switches(t, "h1", "h2", 5000) == ["l1"]
    assert len(ring_egresses(t, "h1", "h5", 5000)) == 3 + 3 + 1     # l1's uplinks, a spine's downlink each, l2's port
    f = topo("leafspine", 8, 20, leaves=2, spines=3, routing="ecmp-flow")
    assert len(ring_switches(f, "h1", "h5", 5000)) == 3


def test_any_path_is_as_long_as_every_path():
    t = topo("leafspine", 8, 20, leaves=2, spines=4, routing="ecmp")
    for k in range(16):
        assert len(path_links(t, "h1", "h6", flow=ring_flow(k, 5000))) == len(any_path_links(t, "h1", "h6")) == 4


def spine_partition(t, flows, step):
    """The ring flows grouped by the spine each crosses at this step's tag."""
    groups: dict[str, set[int]] = {}
    for i, (src, dst) in enumerate(flows):
        groups.setdefault(route(t, src, dst, flow=ring_flow(step, 5000))[1].switch, set()).add(i)
    return frozenset(frozenset(g) for g in groups.values())


def test_a_steps_tag_relabels_the_spines_a_jobs_flows_share():
    """CRC-32 is affine over XOR and a power-of-two spine count takes the
    bucket's low bits, so one tag shifts every flow of a step by the same
    XOR: a job's flows that share a spine at one step share one at every
    step (docs/ecmp.md); a count that is no power of two breaks that."""
    hosts = [f"h{i}" for i in (1, 5, 9, 13, 2, 6, 10, 14)]   # a ring over 4 leaves, every edge across them
    flows = list(zip(hosts, hosts[1:] + hosts[:1], strict=True))
    t = topo("leafspine", 16, 20, leaves=4, spines=4, routing="ecmp")
    assert len({spine_partition(t, flows, k) for k in range(64)}) == 1
    assert len(spines(t, "h1", "h5", range(64))) == 4     # while each flow still moves
    odd = topo("leafspine", 16, 20, leaves=4, spines=3, routing="ecmp")
    assert len({spine_partition(odd, flows, k) for k in range(64)}) > 1
