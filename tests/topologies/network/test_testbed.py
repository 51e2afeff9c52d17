"""Each topology on the soft target (the twin), one network per topology
shared by its assertions: every host reaches every other (ping and UDP), an
egress queue pushed past Kmax marks ECN-capable packets CE, and the switch
counters read back into switches/<name>.json."""

import json
import sys
import time

import pytest

from tests.harness.probes import ECHO, MESH, RECV, SEND
from topologies.network.lab import list_links
from topologies.network.names import PREFIX

pytestmark = pytest.mark.root

RATE = 10          # Mb/s on every link: about 833 full-size packets/s per port
ECN = {"kmin": 2, "kmax": 6, "pmax": 0.2}

TOPOLOGIES = {
    # (topology, jobs, incast: two senders -> one receiver across the switch under test)
    "star": ({"kind": "star", "hosts": 3}, [{"ranks": 3}], ("h1", "h2", "h3")),
    # two spines: the per-flow counters on the path show the destination-hash
    # spine choice on the wire (a packet via the other spine would not count)
    "leafspine": ({"kind": "leafspine", "hosts": 4, "leaves": 2, "spines": 2}, [{"ranks": 4}],
                  ("h1", "h2", "h3")),
    "dumbbell": ({"kind": "dumbbell", "hosts": 4}, [{"ranks": 4}], ("h1", "h2", "h3")),
}


@pytest.fixture(scope="module", params=sorted(TOPOLOGIES))
def net(request, tmp_path_factory):
    from topologies.network.testbed import TestbedNetwork
    topo, jobs, incast = TOPOLOGIES[request.param]
    topo = {**topo, "host_rate_mbit": RATE, "fabric_rate_mbit": RATE, "queue_depth_pkts": 64}
    run_dir = tmp_path_factory.mktemp(request.param)
    n = TestbedNetwork(topo, jobs, target="soft", run_dir=run_dir, ecn=ECN,
                       symphony={"threshold": 1, "k_sym": 1, "p_sym": 1.0, "enabled": True})
    with n:
        n.incast = incast
        yield n
    assert not [x for x in list_links() if x.startswith(f"{PREFIX}{n.id}")]


def test_all_pairs_ping(net):
    hosts = [h.name for h in net.spec.hosts]
    for src in hosts:
        for dst in hosts:
            if src != dst:
                r = net.cmd(src, "ping", "-c1", "-W2", net.spec.host(dst).ip)
                assert r.returncode == 0, f"{src} -> {dst}: {r.stdout[-300:]}"
    assert net.dead_switches() == []


def test_all_pairs_udp_exchange(net):
    port = 7000
    ips = {h.name: h.ip for h in net.spec.hosts}
    servers = [net.popen(h, [sys.executable, "-c", ECHO, ip, str(port)]) for h, ip in ips.items()]
    time.sleep(0.3)
    for h, ip in ips.items():
        peers = [p for n, p in ips.items() if n != h]
        r = net.cmd(h, sys.executable, "-c", MESH, ip, str(port), *peers)
        assert r.returncode == 0, r.stderr
        assert sorted(json.loads(r.stdout)) == sorted(peers), f"{h}: {r.stdout}"
    for s in servers:
        assert s.poll() is None


def test_ecn_marks_past_kmax_and_counters_read_back(net, tmp_path):
    import subprocess

    from contract.tags import tag_port
    from topologies.spec.topo import route
    a, b, dst = net.incast
    spec = net.job_dicts[0]
    dport = spec["data_port"]
    dst_ip = net.spec.host(dst).ip
    recv = net.popen(dst, [sys.executable, "-c", RECV, dst_ip, str(dport), "1.5"],
                     stdout=subprocess.PIPE, text=True)
    assert recv.stdout.readline().strip() == "ready"
    # two senders at the host rate each into one host port: the switch's egress
    # queue to dst fills past Kmax; one of them is a ring flow of the job (tracked)
    senders = [net.popen(h, [sys.executable, "-c", SEND, dst_ip, str(dport), str(tag_port(0)), "1.5"],
                         stdout=subprocess.PIPE, text=True) for h in (a, b)]
    sent = [int(s.communicate(timeout=30)[0]) for s in senders]
    out, _ = recv.communicate(timeout=30)
    got = json.loads(out.strip().splitlines()[-1])
    assert got["n"] > 0
    assert got["ce"] > 0, f"no CE marks: {got}, sent {sent}"
    print(f"\n{net.spec.kind}: sent {sent}, received {got['n']}, CE {got['ce']}")
    # the switches on the path counted the queue marks at their egress ports
    # (the queue builds where the two senders first share a port)
    files = net.dump_switches(tmp_path / "switches")
    assert set(files) == {s.name for s in net.spec.switches}
    marks = 0
    for hop in route(net.spec, a, dst):
        dump = json.loads(files[hop.switch].read_text())
        marks += dump["counters"]["queue_marks"][str(hop.out_port)]["packets"]
    assert marks > 0
    assert set(dump["registers"]) >= {"flow_step", "step_count", "frontier"}
    # the tracked ring flow into dst is installed exactly on the switches of
    # its route and counted packets at each of them
    ring = [r["host"] for r in spec["ranks"]]
    prev = ring[(ring.index(dst) - 1) % len(ring)]
    assert prev in (a, b)
    on_path = [h.switch for h in route(net.spec, prev, dst)]
    for sw in net.spec.switches:
        d = json.loads(files[sw.name].read_text())
        fids = [f["flow_id"] for f in d["flows"]
                if f["src_ip"] == net.spec.host(prev).ip and f["dst_ip"] == dst_ip]
        if sw.name in on_path:
            assert d["counters"]["pkts"][str(fids[0])]["packets"] > 0, sw.name
        else:
            assert fids == [], sw.name


def test_names_and_no_warnings(net):
    # every switch end in the root namespace carries the prefix and the id;
    # ethtool/sysctl on them worked (their problems would be warnings)
    assert all(info.intf2.startswith(f"{PREFIX}{net.id}") for info in net.links.values())
    assert net.warnings == []
