"""The control plane: its pure plans (n_local, flow ids and slots, forward
entries, queue rates, ARP), and its I/O half against a recording client (the
calls BMv2's SimpleSwitchThriftAPI and the twin both take) and the twin's
pure pipeline, no switch needed."""

import re

import pytest

from contract import p4names as pn
from contract.tags import TAG_MASK, tag_dscp, tag_port
from tests.harness import REPO
from tests.harness.specs import place, topo
from topologies.spec.placement import JobRequest, PlacedJob
from topologies.spec.routes import ring_flow, route
from topologies.switch import bmv2
from topologies.switch import controlplane as cp
from topologies.switch.params import EcnParams, SymphonyParams
from topologies.switch.twin import packets
from topologies.switch.twin.pipeline import Pipeline

ECN = EcnParams(kmin=4, kmax=8, pmax=0.5)


def leafspine(hosts, leaves, spines, **kw):
    return topo("leafspine", hosts, kw.pop("rate", 20), leaves=leaves, spines=spines, **kw)


# --- pure: what every switch gets ---------------------------------------------

def test_n_local_counts_the_jobs_flows_crossing_each_switch():
    t = leafspine(8, 2, 2)
    job, = place(t, 4)
    # ring h1 -> h5 -> h2 -> h6 -> h1: all four flows cross both leaves;
    # spines by destination: h5 (idx 4) p1, h2 (idx 1) p2, h6 (idx 5) p2, h1 (idx 0) p1
    counts = cp.n_local(t, [job])
    assert counts == {("l1", 1): 4, ("l2", 1): 4, ("p1", 1): 2, ("p2", 1): 2}


def test_flow_entries_dense_ids_slots_and_limits():
    t = topo("star", 4)
    jobs = place(t, 2, 2)
    flows = cp.flow_entries(t, jobs, SymphonyParams(threshold=2))
    entries, slots = flows["s1"]
    assert [e.flow_id for e in entries] == [0, 1, 2, 3]
    assert slots == {1: 0, 2: 1}
    assert [(e.job_slot, e.n_local, e.dport, e.enabled, e.threshold) for e in entries] == [
        (0, 2, 5000, 1, 2), (0, 2, 5000, 1, 2), (1, 2, 5010, 1, 2), (1, 2, 5010, 1, 2)]
    base = cp.flow_entries(t, jobs, SymphonyParams(threshold=2, enabled=False))["s1"][0]
    assert {e.enabled for e in base} == {0}
    with pytest.raises(ValueError, match="flow slots"):
        cp.flow_entries(t, jobs, SymphonyParams(threshold=2), max_flows=3)
    with pytest.raises(ValueError, match="job slots"):
        cp.flow_entries(t, jobs, SymphonyParams(threshold=2), max_jobs=1)


# a flow on one leaf (h1 -> h2, h3 <-> h4) and flows between the leaves
# (h2 -> h5, h5 -> h1) on a two-spine fabric: l1 holds h1..h4, l2 h5..h8
TRACKED_JOBS = [PlacedJob(1, 5000, "udp", ("h1", "h2", "h5")), PlacedJob(2, 5010, "udp", ("h3", "h4"))]


def test_track_path_is_the_default_and_tracks_every_switch_a_flow_may_cross():
    t = leafspine(8, 2, 2, routing="ecmp")
    counts = cp.n_local(t, TRACKED_JOBS)
    assert counts == cp.n_local(t, TRACKED_JOBS, track="path")
    # under ecmp both spines count both of job 1's flows between the leaves
    assert counts == {("l1", 1): 3, ("l2", 1): 2, ("p1", 1): 2, ("p2", 1): 2, ("l1", 2): 2}
    assert cp.flow_entries(t, TRACKED_JOBS, SymphonyParams()) == \
        cp.flow_entries(t, TRACKED_JOBS, SymphonyParams(track="path"))


@pytest.mark.parametrize("routing", ["ecmp", "destination"])
def test_track_leaves_installs_a_flow_at_its_two_access_switches_only(routing):
    t = leafspine(8, 2, 2, routing=routing)
    counts = cp.n_local(t, TRACKED_JOBS, track="leaves")
    assert counts == {("l1", 1): 3, ("l2", 1): 2, ("l1", 2): 2}
    for (sw, job), n in counts.items():       # n_local: the job's flows with an end on the leaf
        ends = [{t.access_switch(s)[0], t.access_switch(d)[0]} for s, d, _ in TRACKED_JOBS[job - 1].ring_flows()]
        assert n == sum(sw in e for e in ends)
    flows = cp.flow_entries(t, TRACKED_JOBS, SymphonyParams(track="leaves"))
    assert flows["p1"] == flows["p2"] == ([], {})
    entries, slots = flows["l1"]
    assert slots == {1: 0, 2: 1} and [e.flow_id for e in entries] == [0, 1, 2, 3, 4]
    assert [(e.src_ip, e.job, e.n_local) for e in entries] == [
        (t.host(h).ip, job, n) for h, job, n in (("h1", 1, 3), ("h2", 1, 3), ("h5", 1, 3), ("h3", 2, 2), ("h4", 2, 2))]
    # the spines' routes, ECMP groups and queues (their ECN marking) are the path's
    path, leaves = (cp.plan(t, TRACKED_JOBS, SymphonyParams(track=track)) for track in ("path", "leaves"))
    for sw in ("p1", "p2", "l1", "l2"):
        assert (leaves[sw].forward, leaves[sw].ecmp, leaves[sw].queues) == \
            (path[sw].forward, path[sw].ecmp, path[sw].queues)
    assert not leaves["p1"].flows and not leaves["p1"].jobs


# a ring over four leaves with every edge across them (l1 holds h1..h4)
RING4 = PlacedJob(1, 5000, "udp", ("h1", "h5", "h9", "h13", "h2", "h6", "h10", "h14"))


def test_track_groups_counts_the_flows_that_meet_at_each_step():
    """Under ecmp on four spines a spine sees one group of the job's flows at
    a step: each flow's n_local there is how many flows it meets at every
    step it crosses that spine, what step_count must count to."""
    t = leafspine(16, 4, 4, routing="ecmp")
    counts = cp.flow_n_local(t, [RING4], track="groups")
    flows = RING4.ring_flows()
    met = 0
    for k in range(64):
        paths = {f: {hop.switch for hop in route(t, f[0], f[1], flow=ring_flow(k, f[2]))} for f in flows}
        for f, path in paths.items():
            for sw in path:
                assert counts[(sw, 1, *f)] == sum(sw in p for p in paths.values())
                met += counts[(sw, 1, *f)] > 1 and sw.startswith("p")
    assert met                                           # some flows do share a spine
    assert {sw for sw, *_ in counts} == {sw for sw, _ in cp.n_local(t, [RING4])}   # installed where path is
    assert {counts[("l1", 1, *f)] for f in flows if "l1" in (t.access_switch(f[0])[0], t.access_switch(f[1])[0])} \
        == {cp.n_local(t, [RING4])[("l1", 1)]}          # a leaf sees every flow of its hosts at every step


@pytest.mark.parametrize("routing", ["destination", "ecmp-flow"])
def test_track_groups_is_path_where_a_flow_keeps_one_path(routing):
    t = leafspine(16, 4, 4, routing=routing)
    assert cp.flow_entries(t, [RING4], SymphonyParams(track="groups")) == \
        cp.flow_entries(t, [RING4], SymphonyParams(track="path"))


def test_track_groups_refuses_spines_that_regroup_every_step():
    t = leafspine(16, 4, 3, routing="ecmp")
    with pytest.raises(ValueError, match=r"^symphony\.track groups: switch l1 spreads over 3 equal-cost ports, "):
        cp.flow_entries(t, [RING4], SymphonyParams(track="groups"))


def test_tracking_switches_is_the_one_rule():
    t = leafspine(8, 2, 2, routing="ecmp")
    assert cp.tracking_switches(t, "h1", "h5", 5000) == ["l1", "p1", "p2", "l2"]
    assert cp.tracking_switches(t, "h1", "h5", 5000, "leaves") == ["l1", "l2"]
    assert cp.tracking_switches(t, "h1", "h2", 5000, "leaves") == ["l1"]
    assert cp.tracking_switches(t, "h1", "h5", 5000, "verdict") == ["l1", "l2"]
    known = r"\(known: path, leaves, groups, verdict\)$"
    with pytest.raises(ValueError, match=r"^symphony\.track: unknown track 'spines' " + known):
        cp.tracking_switches(t, "h1", "h5", 5000, "spines")


def test_forward_entries_cover_every_host_on_every_switch():
    t = leafspine(6, 3, 2)
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
    t = topo("dumbbell", 2, 12, fabric_rate_mbit=6, queue_depth_pkts=30)
    qs = cp.port_queues(t)["s1"]
    assert [(q.port, q.link, q.pps, q.depth) for q in qs] == [(1, "h1-s1", 1000, 30), (2, "s1-s2", 500, 30)]
    assert [q.bps for q in qs] == [12_000_000, 6_000_000]     # the twin's unit: the link's bits/s
    assert cp.rate_to_bps(None) is None


def test_arp_entries_all_pairs():
    arp = cp.arp_entries(topo("star", 3))
    assert arp["h1"] == [("10.0.0.2", "00:00:00:00:00:02"), ("10.0.0.3", "00:00:00:00:00:03")]


# --- I/O: a plan through a client ------------------------------------------------


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
    t = leafspine(4, 2, 1, rate=12, fabric_rate_mbit=6, queue_depth_pkts=40)
    plans = cp.plan(t, place(t, 4), SymphonyParams(threshold=3))
    client = Recorder()
    cp.install(client, plans["l1"], ECN, SymphonyParams(threshold=3, k_sym=2, p_sym=0.25, gate_pkts=40))
    return t, plans["l1"], client


def test_forward_and_flow_entries_in_bmv2_formats(installed):
    _, plan, client = installed
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
    assert client.of("table_set_default") == [("sym_ecn", "set_sym_ecn", ["2", str(pn.PROB_ONE // 4), "40"])]


def test_track_verdict_installs_as_leaves_and_turns_the_verdict_on():
    t = leafspine(8, 2, 2, routing="ecmp")
    leaves, verdict = (cp.plan(t, TRACKED_JOBS, SymphonyParams(track=track)) for track in ("leaves", "verdict"))
    assert verdict == leaves
    client = Recorder()
    cp.install(client, verdict["p1"], ECN, SymphonyParams(track="verdict"))
    assert client.of("table_set_default")[-1] == ("sym_verdict", "set_verdict", ["1"])
    client = Recorder()
    cp.install(client, leaves["p1"], ECN, SymphonyParams(track="leaves"))
    assert all(c[0] != "sym_verdict" for c in client.of("table_set_default"))


def test_queue_rate_and_depth_per_port_never_port_zero(installed):
    _, plan, client = installed
    assert client.of("set_queue_depth") == [(40, 1), (40, 2), (40, 3)]
    # host ports at 12 Mb/s = 1000 pps, the spine port at 6 Mb/s = 500 pps; each port's
    # control-frame queue (priority 1, never 0: p4-utils' "every queue") in 128-byte
    # frames: 12 Mb/s = 11719 pps, 6 Mb/s = 5859 pps
    assert client.of("set_queue_rate") == [(1000, 1), (11719, 1, 1), (1000, 2), (11719, 2, 1),
                                           (500, 3), (5859, 3, 1)]
    assert [(q.pps, q.ctrl_pps) for q in plan.queues] == [(1000, 11719), (1000, 11719), (500, 5859)]
    assert client.of("set_queue_rate_bps") == []


def test_control_priority_gives_the_twins_ports_a_control_lane_and_bmv2_nothing_new():
    t = leafspine(4, 2, 1, rate=12, fabric_rate_mbit=6, queue_depth_pkts=40, control_priority=True)
    plan = cp.plan(t, place(t, 4), SymphonyParams())["l1"]
    assert all(q.ctrl_lane for q in plan.queues)
    twin, bmv2 = Recorder(), Recorder()
    cp.install(twin, plan, ECN, SymphonyParams(), rate_unit="bps")
    cp.install(bmv2, plan, ECN, SymphonyParams(), rate_unit="pps")
    assert twin.of("set_ctrl_lane") == [(True, 1), (True, 2), (True, 3)]
    assert bmv2.of("set_ctrl_lane") == []           # its control-frame queue is the program's
    off = cp.plan(leafspine(4, 2, 1, rate=12), place(t, 4), SymphonyParams())["l1"]
    assert not any(q.ctrl_lane for q in off.queues)


def test_the_twins_control_frames_are_the_programs():
    def frame(n, ecn):
        return packets.build("10.0.0.1", "10.0.0.2", ecn=ecn, frame_len=n)
    assert bmv2.is_ctrl_frame(frame(70, 0)) and bmv2.is_ctrl_frame(frame(128, 0))
    assert not bmv2.is_ctrl_frame(frame(129, 0))                         # too long
    assert not bmv2.is_ctrl_frame(frame(70, 2)) and not bmv2.is_ctrl_frame(frame(1462, 2))   # ECN-capable


def test_bmv2_control_frame_queue_agrees_with_the_program():
    """The control plane's idea of the control-frame queue is the v1model
    program's (p4/v1model/main.p4's SYM_V1_CTRL_* and its priority rule)."""
    text = (REPO / "p4" / "v1model" / "main.p4").read_text()
    defines = dict(re.findall(r"#define\s+(SYM_V1_\w+)\s+(\d+)", text))
    assert int(defines["SYM_V1_CTRL_FRAME_BYTES"]) == bmv2.CTRL_FRAME_BYTES
    assert int(defines["SYM_V1_CTRL_PRIORITY"]) == bmv2.CTRL_PRIORITY < bmv2.PRIORITY_QUEUES
    assert re.search(r"std_meta\.packet_length <= SYM_V1_CTRL_FRAME_BYTES && hdr\.ipv4\.ecn == 2w0\)\s*\{"
                     r"\s*std_meta\.priority = SYM_V1_CTRL_PRIORITY;", text)
    assert bmv2.SIMPLE_SWITCH_TARGET_ARGS == ("--priority-queues", str(bmv2.PRIORITY_QUEUES))
    assert cp.rate_to_ctrl_pps(None) is None and cp.rate_to_ctrl_pps(0.001) == 1


def test_twin_queues_drain_at_the_links_bit_rate():
    # the soft target: the same ports and depths, rates in bits/s, no pps call
    t = leafspine(4, 2, 1, rate=12, fabric_rate_mbit=6, queue_depth_pkts=40)
    plans = cp.plan(t, place(t, 4), SymphonyParams(threshold=3))
    client = Recorder()
    cp.install(client, plans["l1"], ECN, SymphonyParams(), cp.rate_unit("soft"))
    assert client.of("set_queue_depth") == [(40, 1), (40, 2), (40, 3)]
    assert client.of("set_queue_rate_bps") == [(12_000_000, 1), (12_000_000, 2), (6_000_000, 3)]
    assert client.of("set_queue_rate") == []
    assert (cp.rate_unit("soft"), cp.rate_unit("bmv2")) == ("bps", "pps")
    # set_link_rate's path: one port, in the target's unit
    cp.set_port_rate(client, 3, 0.6, "bps")
    cp.set_port_rate(client, 3, 0.6, "pps")
    assert client.of("set_queue_rate_bps")[-1] == (600_000, 3)
    assert client.of("set_queue_rate") == [(50, 3), (586, 3, 1)]
    with pytest.raises(ValueError, match="unit"):
        cp.install(Recorder(), plans["l1"], ECN, SymphonyParams(), "bytes")


def test_dump_reads_every_register_and_the_used_counters(installed):
    _, plan, client = installed
    dump = cp.dump_switch(client, plan)
    assert set(dump["registers"]) == set(pn.REGISTERS)
    assert len(dump["registers"]["step_count"]) == pn.STEP_SLOTS
    assert set(dump["counters"]) == set(pn.COUNTERS)
    assert sorted(dump["counters"]["pkts"]) == ["0", "1", "2", "3"]
    assert sorted(dump["counters"]["queue_marks"]) == sorted(dump["counters"]["verdict_marks"]) == ["1", "2", "3"]
    assert dump["counters"]["sym_marks"]["0"] == {"packets": 7, "bytes": 7000}
    assert dump["jobs"] == {"1": 0}


# --- the plan installed into the twin's pure pipeline: packets follow the routes

class PipelineClient:
    """The twin's pure pipeline plus the two queue calls its process handles."""

    def __init__(self):
        self.pipe = Pipeline(seed=1)
        self.queues = {}

    def __getattr__(self, name):
        return getattr(self.pipe, name)

    def set_queue_depth(self, depth, port):
        self.queues.setdefault(port, {})["depth"] = depth

    def set_queue_rate(self, pps, port, priority=None):
        self.queues.setdefault(port, {})["ctrl_pps" if priority else "pps"] = pps


def walk(topo, switches, src, dst, sport, dport, qdepth=0, **build_kw):
    """Send one frame from host src hop by hop through the pipelines; returns
    (host reached, frame there, switches crossed)."""
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
    topo = leafspine(6, 3, 2, rate=10, fabric_rate_mbit=None)
    job, = place(topo, 3)
    plans = cp.plan(topo, [job], SymphonyParams())
    switches = {}
    for name, p in plans.items():
        switches[name] = PipelineClient()
        cp.install(switches[name], p, EcnParams(kmin=2, kmax=6, pmax=0.2), SymphonyParams(k_sym=1, p_sym=1.0))
    for src in topo.hosts:
        for dst in topo.hosts:
            if src != dst:
                reached, frame, crossed = walk(topo, switches, src.name, dst.name, 40000, 7000)
                assert reached == dst.name
                assert packets.fields(frame)["eth_dst"] == dst.mac
                assert crossed == [h.switch for h in route(topo, src.name, dst.name)]
    # a ring flow's packet past Kmax arrives CE and is counted at each switch it crossed
    a, b = job.hosts[0], job.hosts[1]
    reached, frame, crossed = walk(topo, switches, a, b, tag_port(0), job.data_port, qdepth=7)
    assert reached == b and packets.fields(frame)["ecn"] == 3
    marks = []
    for sw in crossed:
        dump = cp.dump_switch(switches[sw], plans[sw])
        assert sum(c["packets"] for c in dump["counters"]["pkts"].values()) == 1
        marks.append(sum(c["packets"] for c in dump["counters"]["queue_marks"].values()))
    assert marks[0] == 1 and sum(marks) == 1      # later switches see CE, no longer ECT
    # with no queue nothing is marked, even an outpacing flow (K_sym = 1)
    _, frame, _ = walk(topo, switches, a, b, tag_port(1), job.data_port, qdepth=0)
    assert packets.fields(frame)["ecn"] == 2
    # one packet waiting, below Kmin: only Symphony marks, since this flow runs
    # ahead of the job's other flows (step 2, frontier still before step 0)
    _, frame, crossed = walk(topo, switches, a, b, tag_port(2), job.data_port, qdepth=1)
    assert packets.fields(frame)["ecn"] == 3
    dump = cp.dump_switch(switches[crossed[0]], plans[crossed[0]])
    assert sum(c["packets"] for c in dump["counters"]["sym_marks"].values()) == 1
    assert switches["l1"].queues[1] == {"depth": 64, "pps": cp.rate_to_pps(10), "ctrl_pps": cp.rate_to_ctrl_pps(10)}


def test_garbage_from_a_ranks_address_shows_in_the_dump_as_step_jumps():
    """Issue 18: tags far from a ring flow's newest step, sent from its own
    address and port, are counted per flow in switches/<name>.json's
    step_jumps and move none of the flow's registers."""
    topo = leafspine(4, 2, 1, rate=10, fabric_rate_mbit=None)
    job, = place(topo, 2)
    plans = cp.plan(topo, [job], SymphonyParams())
    switches = {name: PipelineClient() for name in plans}
    for name, p in plans.items():
        cp.install(switches[name], p, EcnParams(), SymphonyParams())
    a, b = job.hosts
    _, _, crossed = walk(topo, switches, a, b, tag_port(0), job.data_port)
    before = {sw: cp.dump_switch(switches[sw], plans[sw])["registers"] for sw in crossed}
    for step in (9000, 3000, 16000, 100):
        walk(topo, switches, a, b, tag_port(step), job.data_port, qdepth=3)
    for sw in crossed:
        dump = cp.dump_switch(switches[sw], plans[sw])
        flow = next(f for f in plans[sw].flows if f.src_ip == topo.host(a).ip)
        assert dump["counters"]["step_jumps"][str(flow.flow_id)] == {"packets": 4, "bytes": 4 * 106}
        assert dump["registers"] == before[sw]
        assert sum(c["packets"] for c in dump["counters"]["sym_marks"].values()) == 0


def test_refused_entries_fail_the_install():
    t = topo("star", 2)
    plans = cp.plan(t, place(t, 2), SymphonyParams())
    with pytest.raises(RuntimeError, match="table forward holds 1 entries, 2 installed"):
        cp.install(Recorder(refused=1), plans["s1"], EcnParams(kmin=1, kmax=2, pmax=0.1), SymphonyParams())


def test_tcp_job_installed_in_its_mode_and_tracked_by_dscp():
    """A TCP job's flows carry tcp = 1 and start at the 6-bit tag before step
    0 (63); its segments are counted by (src, dst, TCP dport) with the step
    in the DSCP, next to a UDP job on the same switches."""
    topo = leafspine(4, 2, 1, rate=10, fabric_rate_mbit=None)
    jobs = place(topo, JobRequest(1, 4, 5000, "tcp"), JobRequest(2, 2, 5010, "udp"))
    plans = cp.plan(topo, jobs, SymphonyParams())
    client = Recorder()
    cp.install(client, plans["l1"], EcnParams(), SymphonyParams())
    tracks = [c for c in client.of("table_add") if c[0] == "symphony_flows"]
    tcp_port, udp_port = jobs[0].data_port, jobs[1].data_port
    assert {t[3][5] for t in tracks if t[2][2] == str(tcp_port)} == {"1"}
    assert {t[3][5] for t in tracks if t[2][2] == str(udp_port)} == {"0"}
    writes = client.of("register_write")
    tcp_ids = [f.flow_id for f in plans["l1"].flows if f.tcp]
    assert tcp_ids and all(("flow_step", i, pn.DSCP_TAG_MASK) in writes for i in tcp_ids)
    assert ("frontier", plans["l1"].jobs[jobs[0].job], pn.DSCP_TAG_MASK) in writes
    assert ("frontier", plans["l1"].jobs[jobs[1].job], TAG_MASK) in writes

    switches = {}
    for name, p in plans.items():
        switches[name] = PipelineClient()
        cp.install(switches[name], p, EcnParams(), SymphonyParams(k_sym=1, p_sym=1.0))
    a, b = jobs[0].hosts[:2]
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
    return PlacedJob(job, 5000, transport, tuple(f"h{r + 1}" for r in range(n)))


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
    t = topo("star", 2)
    with pytest.raises(ValueError, match="threshold"):
        cp.plan(t, place(t, 2, transport="tcp"), SymphonyParams(threshold=40))
