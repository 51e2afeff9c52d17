"""A network's links (topologies/network/link_control.py): their names and
netem commands known before anything is built; then on the soft target: the
host side is shaped with htb, the switch side carries no qdisc (the twin
queues there), a requested delay shows in ping's RTT (tc netem where the
kernel has it, else the twin's delay lines, both directions of host and
fabric links), and set_link_rate squeezes a link's throughput, at its bit
rate (the twin's queues drain in bits/s, not in full-size packet slots)."""

import json
import statistics
import subprocess
import sys

import pytest

from tests.harness.probes import RECV, SEND
from tests.harness.specs import make_net
from topologies.spec.netem import NetemParams


def test_link_names_known_before_start_and_netem_commands():
    net = make_net("dumbbell", 2, 10, jobs=(2,), fabric_delay_ms=2)
    info = net.links["h1-s1"]
    assert (info.intf1, info.intf2) == ("h1-eth0", f"sym{net.id}s1e1")
    assert net.links["s1-s2"].delay_ms == 2 and net.links["s1-s2"].cls == "fabric"
    # shaped host end: netem under the htb class; switch ends: root netem
    assert net.netem_commands("h1-s1", NetemParams(5, 1, 0.5)) == [
        ("h1", ["qdisc", "replace", "dev", "h1-eth0", "parent", "1:1", "handle", "10:",
                "netem", "delay", "5ms", "1ms", "loss", "0.5%"]),
        (None, ["qdisc", "replace", "dev", f"sym{net.id}s1e1", "root", "handle", "10:",
                "netem", "delay", "5ms", "1ms", "loss", "0.5%"])]
    assert [c[1][:2] for c in net.netem_commands("s1-s2", NetemParams())] == [["qdisc", "del"]] * 2


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


def floor_rtts(kind, hosts, rate, pairs):
    """The median ping RTT of each pair on the same topology without delays:
    the frames' time on the links and the processing, which the configured
    delay comes on top of (a millisecond or two on a busy machine)."""
    n = make_net(kind, hosts, rate, jobs=(2,))
    with n:
        return [median_rtt(n, a, b) for a, b in pairs]


def added_delay_ok(added_ms: float, configured_ms: float, passes: int) -> bool:
    """What the delays add to the RTT: the configured delay within 10 %, and
    the delay lines' own wake-ups, 0.1-0.2 ms a pass on a quiet machine and
    up to 0.3 on a busy one (CI measured 2.15 ms over 12 on six passes: one
    per link each way).  A delay applied twice, or one way only, still fails."""
    return configured_ms * 0.9 <= added_ms < configured_ms * 1.1 + 0.3 * passes


def median_rtt(net, src, dst, count=60):
    """The median, not the mean: on a busy machine a few pings wait for the
    delay lines' processes to be scheduled (CI saw a mean 1.1 ms over)."""
    r = net.cmd(src, "ping", "-n", "-c", str(count), "-i", "0.02", net.topo.host(dst).ip)
    rtts = [float(x.split("time=")[1].split()[0]) for x in r.stdout.splitlines() if "time=" in x]
    assert len(rtts) >= count - 2, r.stdout[-300:]
    return statistics.median(rtts)


@pytest.mark.root
def test_two_hosts_show_the_configured_rtt(net):
    """host_delay_ms = 5 on both links: 4 x 5 ms per round trip (each link
    delays both ways), plus ping's 98-byte frames' serialisation at 8 Mb/s
    (0.1 ms a hop) and the processing."""
    out = net.cmd("h1", "tc", "qdisc", "show", "dev", net.links["h1-s1"].intf1).stdout
    assert net.link_delays() == {"link_delays_ms": {"h1-s1": 5.0, "h2-s1": 5.0}, "link_delays_via": net.via}
    if net.via == "netem":
        assert "netem" in out and "delay 5" in out
    else:
        assert net.via == "twin" and "netem" not in out and net.warnings == []
        ports = net.clients["s1"].stats()["ports"]
        for port in ("1", "2"):     # each port towards a host: what leaves it and what arrives
            assert ports[port]["netem_egress"]["delay_ms"] == ports[port]["netem_ingress"]["delay_ms"] == 5
    rtt = median_rtt(net, "h1", "h2")
    floor = floor_rtts("star", 2, 8, [("h1", "h2")])[0]
    print(f"\nRTT h1 -> h2 with 5 ms on each link: {rtt:.2f} ms (configured 20, {floor:.2f} without delays)")
    assert 20.0 <= rtt and added_delay_ok(rtt - floor, 20.0, passes=4)


@pytest.mark.root
def test_fabric_delay_is_covered_by_each_switchs_egress(tmp_path):
    n = make_net("dumbbell", 4, 20, jobs=(2,), host_delay_ms=1, fabric_delay_ms=4, run_dir=tmp_path)
    with n:
        same, across = median_rtt(n, "h1", "h2"), median_rtt(n, "h1", "h3")
    floor_same, floor_across = floor_rtts("dumbbell", 4, 20, [("h1", "h2"), ("h1", "h3")])
    print(f"\nRTT same switch {same:.2f} ms (configured 4, {floor_same:.2f} without delays), "
          f"across the fabric {across:.2f} ms (configured 12, {floor_across:.2f} without delays)")
    assert 4.0 <= same and added_delay_ok(same - floor_same, 4.0, passes=4)
    assert 12.0 <= across and added_delay_ok(across - floor_across, 12.0, passes=6)


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
