"""Topology builders: shapes, addresses, rates per class, structural errors."""

import pytest

from tests.harness.specs import topo
from topologies.spec.topo import TopoError, TopoParams, build


def leafspine(hosts=8, leaves=2, spines=2, fabric_rate_mbit=20):
    return topo("leafspine", hosts, 20, leaves=leaves, spines=spines, fabric_rate_mbit=fabric_rate_mbit)


def test_star_shape_and_addresses():
    t = topo("star", 3, 10)
    assert [s.name for s in t.switches] == ["s1"]
    assert [h.ip for h in t.hosts] == ["10.0.0.1", "10.0.0.2", "10.0.0.3"]
    assert t.host("h3").mac == "00:00:00:00:00:03"
    assert t.queue_depth == 64 and t.link("h1-s1").rate_mbit == 10


def test_leafspine_shape_oversubscription_and_hosts_in_blocks():
    t = leafspine(hosts=8, leaves=2, spines=1, fabric_rate_mbit=40)
    groups = t.hosts_by_switch()
    assert groups == {"l1": ["h1", "h2", "h3", "h4"], "l2": ["h5", "h6", "h7", "h8"]}
    # 4 hosts x 20 Mb/s down, 1 spine x 40 Mb/s up
    assert t.params["oversubscription"] == {"l1": 2.0, "l2": 2.0}
    assert sum(1 for link in t.links if link.cls == "fabric") == 2


def test_dumbbell_halves_and_fabric_rate_defaults_to_the_host_rate():
    t = topo("dumbbell", 4, 10, fabric_rate_mbit=5, queue_depth_pkts=30)
    assert t.hosts_by_switch() == {"s1": ["h1", "h2"], "s2": ["h3", "h4"]}
    assert t.link("s1-s2").rate_mbit == 5 and t.queue_depth == 30
    assert topo("dumbbell", 2, 10).link("s1-s2").rate_mbit == 10


@pytest.mark.parametrize("params, key", [
    (TopoParams("ring", 2), "topology.kind"),
    (TopoParams("leafspine", 2, leaves=3), "topology.hosts"),
])
def test_what_cannot_be_built_names_the_key(params, key):
    with pytest.raises(TopoError, match=key.replace(".", r"\.")):
        build(params)
