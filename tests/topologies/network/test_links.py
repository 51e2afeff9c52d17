"""Link shaping's tc commands and the one choice of how delays are applied
(pure), and the sch_netem probe (how a network applies them:
test_link_control.py)."""

import pytest

from topologies.network.links import delay_via, htb, htb_rate, netem, netem_available
from topologies.network.names import PREFIX
from topologies.network.shell import list_netns
from topologies.spec.netem import NetemParams


def test_htb_commands():
    assert htb("h1-eth0", 8) == [
        ["qdisc", "replace", "dev", "h1-eth0", "root", "handle", "1:", "htb", "default", "1"],
        ["class", "replace", "dev", "h1-eth0", "parent", "1:", "classid", "1:1", "htb", "rate", "8mbit",
         "ceil", "8mbit"]]
    assert htb_rate("eth0", 2.5)[-4:] == ["rate", "2.5mbit", "ceil", "2.5mbit"]


def test_netem_commands():
    assert netem("eth0", False, NetemParams(5)) == ["qdisc", "replace", "dev", "eth0", "root", "handle", "10:",
                                                    "netem", "delay", "5ms"]
    assert netem("eth0", True, NetemParams(0, 0, 1.5)) == [
        "qdisc", "replace", "dev", "eth0", "parent", "1:1", "handle", "10:", "netem", "delay", "0ms", "loss", "1.5%"]
    assert netem("eth0", True, NetemParams()) == ["qdisc", "del", "dev", "eth0", "parent", "1:1", "handle", "10:"]
    # netem's own syntax: delay TIME JITTER CORRELATION, distribution only
    # with a jitter (uniform is tc's default and has no table), reorder
    p = NetemParams(10, 2, 0.5, "pareto", correlation_pct=25, reorder_pct=5, limit=500)
    assert netem("eth0", False, p)[8:] == ["delay", "10ms", "2ms", "25%", "distribution", "pareto",
                                           "loss", "0.5%", "reorder", "5%", "limit", "500"]
    assert netem("eth0", False, NetemParams(10, 0, distribution="normal"))[8:] == ["delay", "10ms"]
    assert netem("eth0", False, NetemParams(10, 3))[8:] == ["delay", "10ms", "3ms"]


def test_one_place_decides_how_delays_are_applied():
    assert delay_via("soft", True) == delay_via("bmv2", True) == "netem"
    assert delay_via("soft", False) == "twin"
    assert delay_via("bmv2", False) == "fallback"


@pytest.mark.root
def test_netem_probe_leaves_no_namespace():
    assert netem_available() in (True, False)
    assert not [ns for ns in list_netns() if ns.startswith(PREFIX) and ns.endswith("-netemprobe")]
