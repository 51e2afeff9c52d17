"""The BMv2 path: the same network on simple_switch through p4-utils' P4Switch,
with the control plane over Thrift; a stale program refused before anything
is built; teardown closes the Thrift connections.  Skipped (with the reason)
where the BMv2 toolchain is missing; the soft target covers the same
behaviour in tests/topologies/network/test_testbed.py."""

import gc
import json
import os
import subprocess
import sys
import warnings

import pytest

from contract.tags import tag_port
from tests.harness.probes import RECV, SEND
from tests.harness.specs import make_net
from topologies.network.names import PREFIX
from topologies.network.shell import list_links
from topologies.network.testbed import NetworkError
from topologies.switch.params import EcnParams
from topologies.switch.targets import BMV2_JSON, bmv2_program_stale

pytestmark = [pytest.mark.root, pytest.mark.bmv2]


@pytest.fixture(scope="module")
def net(tmp_path_factory):
    stale = bmv2_program_stale()
    if stale:
        pytest.skip(stale)
    n = make_net("star", 3, 10, jobs=(3,), queue_depth_pkts=64, target="bmv2",
                 run_dir=tmp_path_factory.mktemp("bmv2"),
                 net_kw={"ecn": EcnParams(kmin=2, kmax=6, pmax=0.2), "json_path": str(BMV2_JSON)})
    with n:
        yield n
    assert not [x for x in list_links() if x.startswith(f"{PREFIX}{n.id}")]
    # teardown closed the switches' Thrift connections: dropping the clients
    # warns of no unclosed socket (an error under `-W error`)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        n.clients.clear()
        gc.collect()
    assert [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)] == []


def test_a_stale_program_is_refused_before_anything_is_built(tmp_path):
    old = tmp_path / "symphony.json"
    old.write_text(BMV2_JSON.read_text() if BMV2_JSON.exists() else "{}")
    os.utime(old, (0, 0))                      # older than every P4 source
    n = make_net("star", 2, jobs=(2,), target="bmv2", run_dir=tmp_path, net_kw={"json_path": str(old)})
    with pytest.raises(NetworkError) as err:
        n.start()
    message = str(err.value)
    assert f"{old} is older than p4/" in message and "`make p4`" in message and "\n" not in message
    assert n.net is None and n.state is None


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
