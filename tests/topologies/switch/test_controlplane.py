"""The control plane's I/O half against a recording client (the calls BMv2's
SimpleSwitchThriftAPI and the twin both take), no switch needed."""

import pytest

from contract import p4names as pn
from contract.tags import TAG_MASK
from topologies.spec.placement import place_jobs
from topologies.spec.topo import build, route
from topologies.switch import controlplane as cp


class Recorder:
    """Stands in for SimpleSwitchThriftAPI / TwinClient: records every call;
    reads return zeros of the right size."""

    def __init__(self, refused=0):
        self.calls = []
        self.refused = refused      # entries a BMv2 would have refused (p4-utils only prints)

    def __getattr__(self, name):
        def call(*args):
            self.calls.append((name, *args))
            if name == "register_read":
                return [0] * pn.REGISTERS[args[0]].size
            if name == "counter_read":
                return {"packets": 7, "bytes": 7000}
            if name == "table_num_entries":
                return sum(1 for c in self.calls if c[0] == "table_add" and c[1] == args[0]) - self.refused
            return None
        return call

    def of(self, name):
        return [c[1:] for c in self.calls if c[0] == name]


@pytest.fixture
def installed():
    topo = build({"kind": "leafspine", "hosts": 4, "leaves": 2, "spines": 1,
                  "host_rate_mbit": 12, "fabric_rate_mbit": 6, "queue_depth_pkts": 40})
    specs = place_jobs(topo, [{"ranks": 4}])
    plans = cp.plan(topo, specs, threshold=3, enabled=True, depth=40)
    client = Recorder()
    cp.install(client, plans["l1"], {"kmin": 4, "kmax": 8, "pmax": 0.5},
               {"k_sym": 2, "p_sym": 0.25})
    return topo, plans["l1"], client


def test_forward_and_flow_entries_in_bmv2_formats(installed):
    topo, plan, client = installed
    fwd = client.of("table_add")
    assert ("forward", "ipv4_forward", ["10.0.0.3/32"], ["00:00:00:00:00:03", "3"]) in fwd
    tracks = [c for c in fwd if c[0] == "symphony_flows"]
    # ring h1 -> h3 -> h2 -> h4 -> h1: all four flows cross l1, n_local 4
    assert len(tracks) == 4
    assert tracks[0] == ("symphony_flows", "track", ["10.0.0.1", "10.0.0.3", "5000"], ["0", "0", "4", "3", "1", "0"])


def test_job_state_starts_before_step_zero(installed):
    _, plan, client = installed
    writes = client.of("register_write")
    assert [w for w in writes if w[0] == "flow_step"] == [("flow_step", i, TAG_MASK) for i in range(4)]
    assert ("frontier", 0, TAG_MASK) in writes
    assert sorted(w[1] for w in writes if w[0] == "step_count") == list(range(pn.W))


def test_ecn_ranges_and_symphony_defaults(installed):
    _, _, client = installed
    ranges = [c for c in client.of("table_add") if c[0] == "queue_ecn"]
    # depths 5..8 ramp to Pmax = 0.5, then everything past Kmax marks
    assert [(c[2][0], int(c[3][0])) for c in ranges] == [
        ("5->5", 8192), ("6->6", 16384), ("7->7", 24576), ("8->8", 32768),
        (f"9->{(1 << pn.QDEPTH_BITS) - 1}", pn.PROB_ONE)]
    assert [c[4] for c in ranges] == [1, 2, 3, 4, 5]          # priorities from 1: 0 would mean "all"
    assert client.of("table_set_default") == [("sym_ecn", "set_sym_ecn", ["2", str(pn.PROB_ONE // 4)])]


def test_queue_rate_and_depth_per_port_never_port_zero(installed):
    _, plan, client = installed
    assert client.of("set_queue_depth") == [(40, 1), (40, 2), (40, 3)]
    # host ports at 12 Mb/s = 1000 pps, the spine port at 6 Mb/s = 500 pps
    assert client.of("set_queue_rate") == [(1000, 1), (1000, 2), (500, 3)]
    assert client.of("set_queue_rate_bps") == []


def test_twin_queues_drain_at_the_links_bit_rate():
    # the soft target: the same ports and depths, rates in bits/s, no pps call
    topo = build({"kind": "leafspine", "hosts": 4, "leaves": 2, "spines": 1,
                  "host_rate_mbit": 12, "fabric_rate_mbit": 6, "queue_depth_pkts": 40})
    plans = cp.plan(topo, place_jobs(topo, [{"ranks": 4}]), threshold=3, enabled=True, depth=40)
    client = Recorder()
    cp.install(client, plans["l1"], {"kmin": 4, "kmax": 8, "pmax": 0.5}, {}, cp.rate_unit("soft"))
    assert client.of("set_queue_depth") == [(40, 1), (40, 2), (40, 3)]
    assert client.of("set_queue_rate_bps") == [(12_000_000, 1), (12_000_000, 2), (6_000_000, 3)]
    assert client.of("set_queue_rate") == []
    assert (cp.rate_unit("soft"), cp.rate_unit("bmv2")) == ("bps", "pps")
    # set_link_rate's path: one port, in the target's unit
    cp.set_port_rate(client, 3, 0.6, "bps")
    cp.set_port_rate(client, 3, 0.6, "pps")
    assert client.of("set_queue_rate_bps")[-1] == (600_000, 3) and client.of("set_queue_rate") == [(50, 3)]
    with pytest.raises(ValueError, match="unit"):
        cp.install(Recorder(), plans["l1"], {"kmin": 4, "kmax": 8, "pmax": 0.5}, {}, "bytes")


def test_dump_reads_every_register_and_the_used_counters(installed):
    _, plan, client = installed
    dump = cp.dump_switch(client, plan)
    assert set(dump["registers"]) == set(pn.REGISTERS)
    assert len(dump["registers"]["step_count"]) == pn.STEP_SLOTS
    assert set(dump["counters"]) == set(pn.COUNTERS)
    assert sorted(dump["counters"]["pkts"]) == ["0", "1", "2", "3"]
    assert sorted(dump["counters"]["queue_marks"]) == ["1", "2", "3"]
    assert dump["counters"]["sym_marks"]["0"] == {"packets": 7, "bytes": 7000}
    assert dump["jobs"] == {"1": 0}




# --- the plan installed into the twin's pure pipeline: packets follow the routes

class PipelineClient:
    """The twin's pure pipeline plus the two queue calls its process handles."""

    def __init__(self):
        from topologies.switch.twin.pipeline import Pipeline
        self.pipe = Pipeline(seed=1)
        self.queues = {}

    def __getattr__(self, name):
        return getattr(self.pipe, name)

    def set_queue_depth(self, depth, port):
        self.queues.setdefault(port, {})["depth"] = depth

    def set_queue_rate(self, pps, port):
        self.queues.setdefault(port, {})["pps"] = pps




def walk(topo, switches, src, dst, sport, dport, qdepth=0, **build_kw):
    """Send one frame from host src hop by hop through the pipelines; returns
    (host reached, frame there, switches crossed)."""
    from topologies.switch.twin import packets
    s, d = topo.host(src), topo.host(dst)
    frame = packets.build(s.ip, d.ip, sport=sport, dport=dport, ecn=2, eth_src=s.mac, eth_dst=d.mac, **build_kw)
    node, port = topo.access_switch(src)
    crossed = []
    while topo.is_switch(node):
        crossed.append(node)
        out, frame, _ = switches[node].pipe.process(port, frame, qdepth)
        assert out is not None, f"dropped at {node}"
        node, port, _ = topo.ports(node)[out]
    return node, frame, crossed


def test_installed_plan_routes_marks_and_counts_in_the_twin_pipeline():
    from contract.tags import tag_port
    from topologies.switch.twin import packets
    topo = build({"kind": "leafspine", "hosts": 6, "leaves": 3, "spines": 2, "host_rate_mbit": 10})
    specs = place_jobs(topo, [{"ranks": 3}])
    plans = cp.plan(topo, specs, threshold=1, enabled=True, depth=64)
    switches = {}
    for name, p in plans.items():
        switches[name] = PipelineClient()
        cp.install(switches[name], p, {"kmin": 2, "kmax": 6, "pmax": 0.2}, {"k_sym": 1, "p_sym": 1.0})
    for src in topo.hosts:
        for dst in topo.hosts:
            if src != dst:
                reached, frame, crossed = walk(topo, switches, src.name, dst.name, 40000, 7000)
                assert reached == dst.name
                assert packets.fields(frame)["eth_dst"] == dst.mac
                assert crossed == [h.switch for h in route(topo, src.name, dst.name)]
    # a ring flow's packet past Kmax arrives CE and is counted at each switch it crossed
    ring = [r["host"] for r in specs[0]["ranks"]]
    a, b = ring[0], ring[1]
    reached, frame, crossed = walk(topo, switches, a, b, tag_port(0), specs[0]["data_port"], qdepth=7)
    assert reached == b and packets.fields(frame)["ecn"] == 3
    marks = []
    for sw in crossed:
        dump = cp.dump_switch(switches[sw], plans[sw])
        assert sum(c["packets"] for c in dump["counters"]["pkts"].values()) == 1
        marks.append(sum(c["packets"] for c in dump["counters"]["queue_marks"].values()))
    assert marks[0] == 1 and sum(marks) == 1      # later switches see CE, no longer ECT
    # with no queue nothing is marked, even an outpacing flow (K_sym = 1)
    _, frame, _ = walk(topo, switches, a, b, tag_port(1), specs[0]["data_port"], qdepth=0)
    assert packets.fields(frame)["ecn"] == 2
    # one packet waiting, below Kmin: only Symphony marks, since this flow runs
    # ahead of the job's other flows (step 2, frontier still before step 0)
    _, frame, crossed = walk(topo, switches, a, b, tag_port(2), specs[0]["data_port"], qdepth=1)
    assert packets.fields(frame)["ecn"] == 3
    dump = cp.dump_switch(switches[crossed[0]], plans[crossed[0]])
    assert sum(c["packets"] for c in dump["counters"]["sym_marks"].values()) == 1
    assert switches["l1"].queues[1] == {"depth": 64, "pps": cp.rate_to_pps(10)}


def test_refused_entries_fail_the_install():
    topo = build({"kind": "star", "hosts": 2})
    plans = cp.plan(topo, place_jobs(topo, [{"ranks": 2}]), threshold=1, enabled=True, depth=64)
    with pytest.raises(RuntimeError, match="table forward holds 1 entries, 2 installed"):
        cp.install(Recorder(refused=1), plans["s1"], {"kmin": 1, "kmax": 2, "pmax": 0.1}, {})


def test_tcp_job_installed_in_its_mode_and_tracked_by_dscp():
    """A TCP job's flows carry tcp = 1 and start at the 6-bit tag before step
    0 (63); its segments are counted by (src, dst, TCP dport) with the step
    in the DSCP, next to a UDP job on the same switches."""
    from contract.tags import tag_dscp, tag_port
    from topologies.switch.twin import packets
    topo = build({"kind": "leafspine", "hosts": 4, "leaves": 2, "spines": 1, "host_rate_mbit": 10})
    specs = place_jobs(topo, [{"ranks": 4, "transport": "tcp"}, {"ranks": 2, "transport": "udp"}])
    plans = cp.plan(topo, specs, threshold=1, enabled=True, depth=64)
    client = Recorder()
    cp.install(client, plans["l1"], {"kmin": 5, "kmax": 20, "pmax": 0.2}, {})
    tracks = [c for c in client.of("table_add") if c[0] == "symphony_flows"]
    tcp_port, udp_port = specs[0]["data_port"], specs[1]["data_port"]
    assert {t[3][5] for t in tracks if t[2][2] == str(tcp_port)} == {"1"}
    assert {t[3][5] for t in tracks if t[2][2] == str(udp_port)} == {"0"}
    writes = client.of("register_write")
    tcp_ids = [f.flow_id for f in plans["l1"].flows if f.tcp]
    assert tcp_ids and all(("flow_step", i, pn.DSCP_TAG_MASK) in writes for i in tcp_ids)
    assert ("frontier", plans["l1"].jobs[specs[0]["job"]], pn.DSCP_TAG_MASK) in writes
    assert ("frontier", plans["l1"].jobs[specs[1]["job"]], TAG_MASK) in writes

    switches = {}
    for name, p in plans.items():
        switches[name] = PipelineClient()
        cp.install(switches[name], p, {"kmin": 5, "kmax": 20, "pmax": 0.2}, {"k_sym": 1, "p_sym": 1.0})
    a, b = (r["host"] for r in specs[0]["ranks"][:2])
    tcp = dict(proto="tcp")
    for step in (0, 1):
        reached, frame, crossed = walk(topo, switches, a, b, 40001, tcp_port, qdepth=1, dscp=tag_dscp(step), **tcp)
        assert reached == b and packets.fields(frame)["dscp"] == step
    # step 1 is 2 ahead of the frontier (63, before step 0) > threshold 1, one packet waits: Symphony marks
    assert packets.fields(frame)["ecn"] == 3
    for sw in crossed:
        dump = cp.dump_switch(switches[sw], plans[sw])
        fid = next(f["flow_id"] for f in dump["flows"] if f["dport"] == tcp_port and f["tcp"] == 1
                   and f["src_ip"] == topo.host(a).ip and f["dst_ip"] == topo.host(b).ip)
        assert dump["counters"]["pkts"][str(fid)]["packets"] == 2
        assert dump["registers"]["flow_step"][fid] == 1
    # the same key over UDP with a source-port tag is not this flow: not counted
    walk(topo, switches, a, b, tag_port(2), tcp_port)
    assert cp.dump_switch(switches[crossed[0]], plans[crossed[0]])["registers"]["flow_step"][fid] == 1


def _ring(job, n, transport):
    return {"job": job, "data_port": 5000, "transport": transport,
            "ranks": [{"rank": r, "ip": f"10.0.{r // 200}.{r % 200 + 1}"} for r in range(n)]}


def test_jobs_larger_than_their_tag_are_refused():
    cp.check_jobs([_ring(1, pn.max_ranks(True), "tcp"), _ring(2, pn.max_ranks(False), "udp")], threshold=1)
    with pytest.raises(ValueError, match=r"job 3: transport tcp carries the step in a 6-bit DSCP tag.*"
                                         r"at most 32 ranks, got 33"):
        cp.check_jobs([_ring(3, 33, "tcp")], threshold=1)
    with pytest.raises(ValueError, match="at most 64 ranks, got 65"):
        cp.check_jobs([_ring(4, 65, "udp")], threshold=1)
    with pytest.raises(ValueError, match=r"threshold must be in 0\.\.31, got 32"):
        cp.check_jobs([_ring(5, 4, "tcp")], threshold=32)
    cp.check_jobs([_ring(6, 4, "udp")], threshold=32)
    # the plan refuses them before anything is installed
    topo = build({"kind": "star", "hosts": 2})
    with pytest.raises(ValueError, match="threshold"):
        cp.plan(topo, place_jobs(topo, [{"ranks": 2, "transport": "tcp"}]), threshold=40, enabled=True, depth=64)
