"""Bmv2Switch's command line without p4-utils (issue 50): a stand-in for
p4utils.mininetlib.node.P4Switch, enough for the class to be made, shows
that the network starts simple_switch with the command line of
topologies.switch.bmv2.simple_switch_command, the one the conformance rig
and experiments.bench.bmv2 use: its ports, a log level, nothing per packet."""

from __future__ import annotations

import sys
import types

from topologies.network.nodes import bmv2_switch_class
from topologies.switch.bmv2 import simple_switch_command, simple_switch_log_options


class FakeIntf:
    def __init__(self, name: str, ip: str | None = None):
        self.name, self._ip = name, ip

    def IP(self):           # Mininet's name
        return self._ip


def test_the_network_starts_simple_switch_with_the_shared_command_line(monkeypatch):
    node = types.ModuleType("p4utils.mininetlib.node")
    node.P4Switch = type("P4Switch", (), {})
    for name in ("p4utils", "p4utils.mininetlib"):
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    monkeypatch.setitem(sys.modules, "p4utils.mininetlib.node", node)
    cls = bmv2_switch_class()
    sw = cls.__new__(cls)
    sw.intfs = {0: FakeIntf("lo", "127.0.0.1"), 1: FakeIntf("sym1s1-eth1"), 2: FakeIntf("sym1s1-eth2")}
    sw.thrift_port, sw.device_id, sw.json_path, sw.sw_bin = 9095, 3, "/b/symphony.json", "simple_switch"
    sw.ipc_path, sw.log_level = "/run/sym/s1-notifications.ipc", "warn"
    args = sw.add_arguments()
    assert args == simple_switch_command(9095, {1: "sym1s1-eth1", 2: "sym1s1-eth2"}, "/b/symphony.json",
                                         "/run/sym/s1-notifications.ipc", device_id=3,
                                         options=simple_switch_log_options("warn"))
    assert "--nanolog" not in args and "--pcap" not in args and "--debugger" not in args
    assert args[-3:] == ["--", "--priority-queues", "2"] and "0@lo" not in args
