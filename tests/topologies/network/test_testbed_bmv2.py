"""The BMv2 path: the same network on simple_switch through p4-utils' P4Switch,
with the control plane over Thrift.  Skipped (with the reason) where the BMv2
toolchain is missing; the soft target covers the same behaviour in
tests/topologies/network/test_testbed.py."""

import json
import subprocess
import sys

import pytest

from contract.tags import tag_port
from tests.harness.probes import RECV, SEND
from tests.harness.specs import make_net
from topologies.network.names import PREFIX
from topologies.network.shell import list_links
from topologies.switch.params import EcnParams
from topologies.switch.targets import BMV2_JSON

pytestmark = [pytest.mark.root, pytest.mark.bmv2]


@pytest.fixture(scope="module")
def net(tmp_path_factory):
    if not BMV2_JSON.exists():
        pytest.skip(f"{BMV2_JSON} missing: run `make p4` first")
    n = make_net("star", 3, 10, jobs=(3,), queue_depth_pkts=64, target="bmv2",
                 run_dir=tmp_path_factory.mktemp("bmv2"),
                 net_kw={"ecn": EcnParams(kmin=2, kmax=6, pmax=0.2), "json_path": str(BMV2_JSON)})
    with n:
        yield n
    assert not [x for x in list_links() if x.startswith(f"{PREFIX}{n.id}")]


def test_target_is_bmv2_with_a_thrift_port_per_switch(net):
    assert net.target == "bmv2"
    ports = {sw.thrift_port for sw in net.net.switches}
    assert len(ports) == len(net.net.switches)


def test_all_pairs_ping(net):
    for src in net.topo.hosts:
        for dst in net.topo.hosts:
            if src != dst:
                r = net.cmd(src.name, "ping", "-c1", "-W2", dst.ip)
                assert r.returncode == 0, f"{src.name} -> {dst.name}"


def test_ecn_marks_and_counters(net, tmp_path):
    dport = net.jobs[0].data_port
    dst_ip = net.topo.host("h3").ip
    recv = net.popen("h3", [sys.executable, "-c", RECV, dst_ip, str(dport), "1.5"], stdout=subprocess.PIPE, text=True)
    assert recv.stdout.readline().strip() == "ready"
    senders = [net.popen(h, [sys.executable, "-c", SEND, dst_ip, str(dport), str(tag_port(0)), "1.5"],
                         stdout=subprocess.PIPE, text=True) for h in ("h1", "h2")]
    for s in senders:
        s.communicate(timeout=30)
    got = json.loads(recv.communicate(timeout=30)[0].strip().splitlines()[-1])
    assert got["ce"] > 0
    files = net.dump_switches(tmp_path)
    dump = json.loads(files["s1"].read_text())
    assert dump["counters"]["queue_marks"]["3"]["packets"] > 0


def test_set_link_rate_goes_through_set_queue_rate(net):
    net.set_link_rate("h3-s1", 5)
    assert net.links["h3-s1"].rate_mbit == 5
    net.set_link_rate("h3-s1", 10)
