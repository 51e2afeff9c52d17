"""Link shaping: the tc commands (pure), then on the soft target: the host
side is shaped with htb, the switch side carries no qdisc (the twin queues
there), a requested delay either shows as netem or is reported in
`warnings`, and set_link_rate squeezes a link's throughput, at its bit rate
(the twin's queues drain in bits/s, not in full-size packet slots)."""

import json
import subprocess
import sys

import pytest

from tests.harness.probes import RECV, SEND
from tests.harness.specs import make_net
from topologies.network.links import htb, htb_rate, netem, netem_available
from topologies.network.names import PREFIX
from topologies.network.shell import list_netns


def test_htb_commands():
    assert htb("h1-eth0", 8) == [
        ["qdisc", "replace", "dev", "h1-eth0", "root", "handle", "1:", "htb", "default", "1"],
        ["class", "replace", "dev", "h1-eth0", "parent", "1:", "classid", "1:1", "htb", "rate", "8mbit",
         "ceil", "8mbit"]]
    assert htb_rate("eth0", 2.5)[-4:] == ["rate", "2.5mbit", "ceil", "2.5mbit"]


def test_netem_commands():
    assert netem("eth0", False, 5) == ["qdisc", "replace", "dev", "eth0", "root", "handle", "10:",
                                       "netem", "delay", "5ms"]
    assert netem("eth0", True, 0, 0, 1.5) == ["qdisc", "replace", "dev", "eth0", "parent", "1:1", "handle", "10:",
                                              "netem", "delay", "0ms", "loss", "1.5%"]
    assert netem("eth0", True, 0) == ["qdisc", "del", "dev", "eth0", "parent", "1:1", "handle", "10:"]


@pytest.mark.root
def test_netem_probe_leaves_no_namespace():
    assert netem_available() in (True, False)
    assert not [ns for ns in list_netns() if ns.startswith(PREFIX) and ns.endswith("-netemprobe")]


@pytest.fixture(scope="module")
def net(tmp_path_factory):
    n = make_net("star", 2, 8, jobs=(2,), host_delay_ms=5, run_dir=tmp_path_factory.mktemp("links"))
    with n:
        yield n


@pytest.mark.root
def test_host_side_htb_switch_side_bare(net):
    info = net.links["h1-s1"]
    out = net.cmd("h1", "tc", "class", "show", "dev", info.intf1).stdout
    assert "htb" in out and "8Mbit" in out
    qdisc = subprocess.run(["tc", "qdisc", "show", "dev", info.intf2], capture_output=True, text=True).stdout
    assert not any(q in qdisc for q in ("htb", "tbf", "netem")), qdisc


@pytest.mark.root
def test_delay_is_applied_or_reported(net):
    out = net.cmd("h1", "tc", "qdisc", "show", "dev", net.links["h1-s1"].intf1).stdout
    if netem_available():
        assert "netem" in out and "delay 5" in out
    else:
        assert "netem" not in out
        assert any("sch_netem" in w for w in net.warnings), net.warnings


def rate_mbit(net, seconds=1.0):
    """Receiver-side goodput h1 -> h2 over `seconds` of a saturating sender."""
    dst = net.topo.host("h2").ip
    recv = net.popen("h2", [sys.executable, "-c", RECV, dst, "7100", "0.5"], stdout=subprocess.PIPE, text=True)
    assert recv.stdout.readline().strip() == "ready"
    send = net.popen("h1", [sys.executable, "-c", SEND, dst, "7100", "7101", str(seconds)],
                     stdout=subprocess.PIPE, text=True)
    send.communicate(timeout=30)
    got = json.loads(recv.communicate(timeout=30)[0].strip().splitlines()[-1])
    # first to last packet: a sender's backlog in the NIC queue drains after it stops
    return (got["n"] - 1) * 1242 * 8 / got["secs"] / 1e6   # SEND's 1200-byte payload in a 1242-byte frame


@pytest.mark.root
def test_set_link_rate_squeezes_and_restores(net):
    # the twin drains at the link's bit rate (set_queue_rate_bps): 1242-byte
    # frames arrive at close to the link rate (with the old 1500-byte packet
    # slots they came at 8 x 1242/1500 = 6.6 Mb/s)
    full = rate_mbit(net)
    net.set_link_rate("h1-s1", 2)          # h1's NIC (htb) on the path
    squeezed = rate_mbit(net)
    assert net.links["h1-s1"].rate_mbit == 2
    net.set_link_rate("h1-s1", 8)
    net.set_link_rate("h2-s1", 2)          # the twin's egress port towards h2
    port_squeezed = rate_mbit(net)
    net.set_link_rate("h2-s1", 8)
    assert net.clients["s1"].stats()["ports"]["2"]["bps"] == 8e6
    print(f"\nh1 -> h2 frames: {full:.2f} Mb/s at 8, {squeezed:.2f} Mb/s with h1's NIC at 2, "
          f"{port_squeezed:.2f} Mb/s with the switch port at 2 "
          f"(UDP payload: x {1200 / 1242:.3f})")
    assert 0.9 * 8 < full < 1.05 * 8
    assert 0.9 * 2 < squeezed < 1.05 * 2
    assert 0.9 * 2 < port_squeezed < 1.05 * 2
