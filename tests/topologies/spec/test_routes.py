"""Routes: per destination, loop-free, equal uplinks chosen by the destination's index."""

from tests.harness.specs import topo
from topologies.spec.routes import next_ports, path_links, route


def test_star_route_is_one_hop():
    hop, = route(topo("star", 3, 10), "h1", "h3")
    assert (hop.switch, hop.in_port, hop.out_port) == ("s1", 1, 3)


def test_leafspine_routes_by_destination_hash_and_are_loop_free():
    t = topo("leafspine", 8, 20, leaves=2, spines=2)
    table = next_ports(t)
    for src in t.hosts:
        for dst in t.hosts:
            if src != dst:
                hops = route(t, src.name, dst.name, table)
                same_leaf = t.access_switch(src.name)[0] == t.access_switch(dst.name)[0]
                assert len(hops) == (1 if same_leaf else 3)
    # the spine depends only on the destination: h5 (index 4) -> p1, h6 -> p2
    assert route(t, "h1", "h5")[1].switch == "p1"
    assert route(t, "h2", "h5")[1].switch == "p1"
    assert route(t, "h1", "h6")[1].switch == "p2"


def test_dumbbell_crosses_bottleneck():
    t = topo("dumbbell", 4, 10, fabric_rate_mbit=5)
    assert [h.switch for h in route(t, "h1", "h4")] == ["s1", "s2"]


def test_path_links_in_order():
    t = topo("leafspine", 4, 20, leaves=2, spines=2)
    # h3 (index 2) is reached through p1
    assert path_links(t, "h1", "h3") == ["h1-l1", "l1-p1", "l2-p1", "h3-l2"]
    assert path_links(t, "h1", "h2") == ["h1-l1", "h2-l1"]
