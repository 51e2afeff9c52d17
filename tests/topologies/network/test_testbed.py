"""TestbedNetwork: nothing is built before start, a switch dump that finds the disk full (no file, a clear
error), and each topology on the soft target (the twin), one network per
topology shared by its assertions: every host reaches every other (ping and
UDP), an egress queue pushed past Kmax marks ECN-capable packets CE, and the
switch counters read back into switches/<name>.json."""

import errno
import json
import subprocess
import sys
import time

import pytest

from contract.exits import is_disk_full
from contract.tags import tag_port
from tests.harness.probes import ECHO, MESH, RECV, SEND
from tests.harness.specs import make_net
from topologies.network.names import PREFIX
from topologies.network.shell import list_links
from topologies.spec.routes import route
from topologies.switch import controlplane as cp
from topologies.switch.params import EcnParams, SymphonyParams
from topologies.switch.twin.pipeline import Pipeline

RATE = 10          # Mb/s on every link: about 833 full-size packets/s per port
ECN = EcnParams(kmin=2, kmax=6, pmax=0.2)

TOPOLOGIES = {
    # (kind, hosts, topology keywords, ranks of the job, incast: two senders
    # -> one receiver across the switch under test)
    "star": ("star", 3, {}, 3, ("h1", "h2", "h3")),
    # two spines: the per-flow counters on the path show the destination-hash
    # spine choice on the wire (a packet via the other spine would not count)
    "leafspine": ("leafspine", 4, {"leaves": 2, "spines": 2}, 4, ("h1", "h2", "h3")),
    "dumbbell": ("dumbbell", 4, {}, 4, ("h1", "h2", "h3")),
}


def test_nothing_is_built_before_start():
    net = make_net("leafspine", 4, jobs=(4,), leaves=2)
    assert net.jobs[0].hosts == ("h1", "h3", "h2", "h4")
    assert net.net is None and net.state is None and net.plans == {}       # nothing was built


@pytest.mark.root
def test_a_job_the_switches_cannot_track_fails_before_anything_is_built(tmp_path):
    net = make_net("star", 2, jobs=(2,), run_dir=tmp_path, net_kw={"symphony": SymphonyParams(threshold=1 << 14)})
    with pytest.raises(ValueError, match="threshold"):
        net.start()
    assert net.net is None and net.state is None


@pytest.mark.root
def test_a_dump_that_finds_the_disk_full_leaves_no_file_and_says_which(tmp_path):
    """A full disk once left a 0-byte switches/<name>.json: each file is
    now written whole or not at all, and the error names the switch and the
    file and keeps ENOSPC (the runner records a full disk)."""
    net = make_net("leafspine", 4, jobs=(4,), leaves=2)
    net.plans = cp.plan(net.topo, net.jobs, net.symphony, cp.ASSUMED_PACKET_BYTES)
    net.clients.update({name: Pipeline() for name in net.plans})     # a twin pipeline reads back as a client
    small = tmp_path / "small"
    small.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8k", "tmpfs", str(small)], check=True)
    try:
        with pytest.raises(OSError) as err:
            net.dump_switches(small / "switches")
        assert list((small / "switches").iterdir()) == []
    finally:
        subprocess.run(["umount", "-l", str(small)], check=False)
    exc = err.value
    first = next(iter(net.clients))
    assert exc.errno == errno.ENOSPC and is_disk_full(exc)
    assert str(exc) == (f"[Errno {errno.ENOSPC}] cannot write switch {first}'s registers and counters: "
                        f"No space left on device: '{small / 'switches' / first}.json'")


@pytest.fixture(scope="module", params=sorted(TOPOLOGIES))
def net(request, tmp_path_factory):
    kind, hosts, params, ranks, incast = TOPOLOGIES[request.param]
    n = make_net(kind, hosts, RATE, jobs=(ranks,), fabric_rate_mbit=RATE, queue_depth_pkts=64, **params,
                 run_dir=tmp_path_factory.mktemp(request.param),
                 net_kw={"ecn": ECN, "symphony": SymphonyParams(threshold=1, k_sym=1, p_sym=1.0, enabled=True)})
    with n:
        n.incast = incast
        yield n
    assert not [x for x in list_links() if x.startswith(f"{PREFIX}{n.id}")]


@pytest.mark.root
def test_all_pairs_ping(net):
    hosts = [h.name for h in net.topo.hosts]
    for src in hosts:
        for dst in hosts:
            if src != dst:
                r = net.cmd(src, "ping", "-c1", "-W2", net.topo.host(dst).ip)
                assert r.returncode == 0, f"{src} -> {dst}: {r.stdout[-300:]}"
    assert net.dead_switches() == []


@pytest.mark.root
def test_all_pairs_udp_exchange(net):
    port = 7000
    ips = {h.name: h.ip for h in net.topo.hosts}
    servers = [net.popen(h, [sys.executable, "-c", ECHO, ip, str(port)]) for h, ip in ips.items()]
    time.sleep(0.3)
    for h, ip in ips.items():
        peers = [p for n, p in ips.items() if n != h]
        r = net.cmd(h, sys.executable, "-c", MESH, ip, str(port), *peers)
        assert r.returncode == 0, r.stderr
        assert sorted(json.loads(r.stdout)) == sorted(peers), f"{h}: {r.stdout}"
    for s in servers:
        assert s.poll() is None


@pytest.mark.root
def test_ecn_marks_past_kmax_and_counters_read_back(net, tmp_path):
    a, b, dst = net.incast
    job = net.jobs[0]
    dport = job.data_port
    dst_ip = net.topo.host(dst).ip
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
    print(f"\n{net.topo.kind}: sent {sent}, received {got['n']}, CE {got['ce']}")
    # the switches on the path counted the queue marks at their egress ports
    # (the queue builds where the two senders first share a port)
    files = net.dump_switches(tmp_path / "switches")
    assert set(files) == {s.name for s in net.topo.switches}
    marks = 0
    for hop in route(net.topo, a, dst):
        dump = json.loads(files[hop.switch].read_text())
        marks += dump["counters"]["queue_marks"][str(hop.out_port)]["packets"]
    assert marks > 0
    assert set(dump["registers"]) >= {"flow_step", "step_count", "frontier"}
    # the tracked ring flow into dst is installed exactly on the switches of
    # its route and counted packets at each of them
    ring = list(job.hosts)
    prev = ring[(ring.index(dst) - 1) % len(ring)]
    assert prev in (a, b)
    on_path = [h.switch for h in route(net.topo, prev, dst)]
    for sw in net.topo.switches:
        d = json.loads(files[sw.name].read_text())
        fids = [f["flow_id"] for f in d["flows"]
                if f["src_ip"] == net.topo.host(prev).ip and f["dst_ip"] == dst_ip]
        if sw.name in on_path:
            assert d["counters"]["pkts"][str(fids[0])]["packets"] > 0, sw.name
        else:
            assert fids == [], sw.name


@pytest.mark.root
def test_names_and_no_warnings(net):
    # every switch end in the root namespace carries the prefix and the id;
    # ethtool/sysctl on them worked (their problems would be warnings)
    assert all(info.intf2.startswith(f"{PREFIX}{net.id}") for info in net.links.values())
    assert net.warnings == []
