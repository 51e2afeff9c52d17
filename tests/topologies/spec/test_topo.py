"""Topology builders, routes, placement and control-plane plans: pure logic, no Mininet."""

import pytest

from topologies.spec.placement import place_jobs, ring_flows
from topologies.spec.topo import TopoError, build, next_ports, route
from topologies.switch import controlplane as cp


def leafspine(hosts=8, leaves=2, spines=2, **kw):
    return build({"kind": "leafspine", "hosts": hosts, "leaves": leaves, "spines": spines,
                  "host_rate_mbit": 20, "fabric_rate_mbit": 20, **kw})


def test_star_shape_and_routes():
    t = build({"kind": "star", "hosts": 3, "host_rate_mbit": 10})
    assert [s.name for s in t.switches] == ["s1"]
    assert [h.ip for h in t.hosts] == ["10.0.0.1", "10.0.0.2", "10.0.0.3"]
    hop, = route(t, "h1", "h3")
    assert (hop.switch, hop.in_port, hop.out_port) == ("s1", 1, 3)


def test_leafspine_shape_oversubscription_and_hosts_in_blocks():
    t = leafspine(hosts=8, leaves=2, spines=1, fabric_rate_mbit=40)
    groups = t.hosts_by_switch()
    assert groups == {"l1": ["h1", "h2", "h3", "h4"], "l2": ["h5", "h6", "h7", "h8"]}
    # 4 hosts x 20 Mb/s down, 1 spine x 40 Mb/s up
    assert t.params["oversubscription"] == {"l1": 2.0, "l2": 2.0}
    assert sum(1 for link in t.links if link.cls == "fabric") == 2


def test_leafspine_routes_by_destination_hash_and_are_loop_free():
    t = leafspine(hosts=8, leaves=2, spines=2)
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
    t = build({"kind": "dumbbell", "hosts": 4, "host_rate_mbit": 10, "fabric_rate_mbit": 5})
    assert t.hosts_by_switch() == {"s1": ["h1", "h2"], "s2": ["h3", "h4"]}
    assert [h.switch for h in route(t, "h1", "h4")] == ["s1", "s2"]
    assert t.link("s1-s2").rate_mbit == 5


@pytest.mark.parametrize("table, key", [
    ({"kind": "ring", "hosts": 2}, "topology.kind"),
    ({"kind": "star"}, "topology.hosts"),
    ({"kind": "star", "hosts": "4"}, "topology.hosts"),
    ({"kind": "star", "hosts": 4, "host_rate_mbit": -1}, "topology.host_rate_mbit"),
    ({"kind": "star", "hosts": 4, "colour": 1}, "topology.colour"),
    ({"kind": "leafspine", "hosts": 2, "leaves": 3}, "topology.hosts"),
])
def test_bad_topology_names_the_key(table, key):
    with pytest.raises(TopoError, match=key.replace(".", r"\.")):
        build(table)


def test_interleaved_placement_makes_every_ring_flow_cross_the_fabric():
    t = leafspine(hosts=8, leaves=2, spines=2)
    spec, = place_jobs(t, [{"ranks": 4, "message_bytes": 4000, "iterations": 2}])
    assert [r["host"] for r in spec["ranks"]] == ["h1", "h5", "h2", "h6"]
    assert [r["ip"] for r in spec["ranks"]] == ["10.0.0.1", "10.0.0.5", "10.0.0.2", "10.0.0.6"]
    assert spec["message_bytes"] == 4000 and spec["job"] == 1 and spec["data_port"] == 5000
    for src, dst, _ in ring_flows(spec):
        assert len(route(t, src, dst)) == 3


def test_two_jobs_get_distinct_hosts_ports_and_share_when_short():
    t = leafspine(hosts=4, leaves=2, spines=1)
    a, b = place_jobs(t, [{"ranks": 2}, {"ranks": 4}])
    assert {r["host"] for r in a["ranks"]} == {"h1", "h3"}
    assert len({r["host"] for r in b["ranks"]}) == 4      # shares h1, h3 with job 1
    assert (a["data_port"], b["data_port"]) == (5000, 5010)
    assert (a["job"], b["job"]) == (1, 2)


@pytest.mark.parametrize("jobs, key", [
    ([{"ranks": 1}], r"jobs\[0\]\.ranks"),
    ([{"ranks": 9}], r"jobs\[0\]\.ranks"),
    ([{"hosts": ["h1", "h99"]}], r"jobs\[0\]\.hosts"),
    ([{"ranks": 2, "data_port": 5000}, {"ranks": 2, "data_port": 5001}], r"jobs\[1\]\.data_port"),
    ([{"ranks": 2, "job": 3}, {"ranks": 2, "job": 3}], r"jobs\[1\]\.job"),
])
def test_bad_jobs_name_the_key(jobs, key):
    with pytest.raises(TopoError, match=key):
        place_jobs(leafspine(), jobs)


def test_n_local_counts_the_jobs_flows_crossing_each_switch():
    t = leafspine(hosts=8, leaves=2, spines=2)
    spec, = place_jobs(t, [{"ranks": 4}])
    # ring h1 -> h5 -> h2 -> h6 -> h1: all four flows cross both leaves;
    # spines by destination: h5 (idx 4) p1, h2 (idx 1) p2, h6 (idx 5) p2, h1 (idx 0) p1
    counts = cp.n_local(t, [spec])
    assert counts == {("l1", 1): 4, ("l2", 1): 4, ("p1", 1): 2, ("p2", 1): 2}


def test_flow_entries_dense_ids_slots_and_limits():
    t = build({"kind": "star", "hosts": 4})
    specs = place_jobs(t, [{"ranks": 2}, {"ranks": 2}])
    flows = cp.flow_entries(t, specs, threshold=2, enabled=True)
    entries, slots = flows["s1"]
    assert [e.flow_id for e in entries] == [0, 1, 2, 3]
    assert slots == {1: 0, 2: 1}
    assert [(e.job_slot, e.n_local, e.dport, e.enabled, e.threshold) for e in entries] == [
        (0, 2, 5000, 1, 2), (0, 2, 5000, 1, 2), (1, 2, 5010, 1, 2), (1, 2, 5010, 1, 2)]
    base = cp.flow_entries(t, specs, threshold=2, enabled=False)["s1"][0]
    assert {e.enabled for e in base} == {0}
    with pytest.raises(ValueError, match="flow slots"):
        cp.flow_entries(t, specs, 2, True, max_flows=3)
    with pytest.raises(ValueError, match="job slots"):
        cp.flow_entries(t, specs, 2, True, max_jobs=1)


def test_forward_entries_cover_every_host_on_every_switch():
    t = leafspine(hosts=6, leaves=3, spines=2)
    fwd = cp.forward_entries(t)
    for sw in t.switches:
        assert sorted(e.prefix for e in fwd[sw.name]) == sorted(f"{h.ip}/32" for h in t.hosts)
    h6 = t.host("h6")
    entry, = [e for e in fwd["p1"] if e.prefix == f"{h6.ip}/32"]
    assert entry.dst_mac == h6.mac
    peer, _, _ = t.ports("p1")[entry.port]
    assert peer == t.access_switch("h6")[0]


def test_queue_rates_in_packets_per_second():
    assert cp.rate_to_pps(12) == 1000          # 12 Mb/s / (8 x 1500 B)
    assert cp.rate_to_pps(None) is None
    t = build({"kind": "dumbbell", "hosts": 2, "host_rate_mbit": 12, "fabric_rate_mbit": 6,
               "queue_depth_pkts": 30})
    qs = cp.port_queues(t, 30)["s1"]
    assert [(q.port, q.link, q.pps, q.depth) for q in qs] == [(1, "h1-s1", 1000, 30), (2, "s1-s2", 500, 30)]
    assert [q.bps for q in qs] == [12_000_000, 6_000_000]     # the twin's unit: the link's bits/s
    assert cp.rate_to_bps(None) is None


def test_arp_entries_all_pairs():
    t = build({"kind": "star", "hosts": 3})
    arp = cp.arp_entries(t)
    assert arp["h1"] == [("10.0.0.2", "00:00:00:00:00:02"), ("10.0.0.3", "00:00:00:00:00:03")]


def test_network_job_specs_are_jobspecs_without_starting_anything():
    from topologies.network.testbed import TestbedNetwork
    net = TestbedNetwork({"kind": "leafspine", "hosts": 4, "leaves": 2},
                         [{"ranks": 4, "message_bytes": 16000, "iterations": 2}], target="soft")
    spec, = net.job_specs
    assert spec.ips == ["10.0.0.1", "10.0.0.3", "10.0.0.2", "10.0.0.4"]
    assert spec.message_bytes == 16000 and spec.data_port == 5000
    assert net.net is None and net.state is None          # nothing was built


def test_link_names_known_before_start_and_netem_commands():
    from topologies.network.testbed import TestbedNetwork
    net = TestbedNetwork({"kind": "dumbbell", "hosts": 2, "host_rate_mbit": 10, "fabric_delay_ms": 2},
                         [{"ranks": 2}], target="soft")
    info = net.links["h1-s1"]
    assert (info.intf1, info.intf2) == ("h1-eth0", f"sym{net.id}s1e1")
    assert net.links["s1-s2"].delay_ms == 2 and net.links["s1-s2"].cls == "fabric"
    # shaped host end: netem under the htb class; switch ends: root netem
    assert net.netem_commands("h1-s1", 5, 1, 0.5) == [
        ("h1", ["qdisc", "replace", "dev", "h1-eth0", "parent", "1:1", "handle", "10:",
                "netem", "delay", "5ms", "1ms", "loss", "0.5%"]),
        (None, ["qdisc", "replace", "dev", f"sym{net.id}s1e1", "root", "handle", "10:",
                "netem", "delay", "5ms", "1ms", "loss", "0.5%"])]
    assert [c[1][:2] for c in net.netem_commands("s1-s2", 0, 0, 0)] == [["qdisc", "del"]] * 2
