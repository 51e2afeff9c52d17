"""How this project prepares interfaces and hosts for raw-frame switches.

The twin (and the CE-marking test forwarder) copy whole frames between
interfaces, so the kernel must put MTU-sized frames with full checksums on
the wire: veth would otherwise hand a raw socket 64 KB GSO frames whose
checksums were left for a NIC to fill.  The Mininet nodes, the namespace lab
and the test rigs all take their settings from here, each running the
commands its own way (Mininet's node.cmd, ``ip netns exec``, ...).
"""

from __future__ import annotations

from contract.tags import TAG_PORT_BASE

OFFLOADS_OFF = ("rx", "off", "tx", "off", "sg", "off", "tso", "off", "gso", "off", "gro", "off")


def offloads_off(ifname: str) -> tuple[str, ...]:
    return ("ethtool", "-K", ifname, *OFFLOADS_OFF)


def ipv6_off(conf: str) -> tuple[str, ...]:
    """IPv6 off on one interface (or "all"/"default"): its router
    solicitations would only add noise to what a switch counts."""
    return ("sysctl", "-qw", f"net.ipv6.conf.{conf}.disable_ipv6=1")


def switch_port_commands(ifname: str) -> list[tuple[str, ...]]:
    """A root-namespace interface a raw-frame switch reads and writes."""
    return [offloads_off(ifname), ipv6_off(ifname)]


def host_sysctls() -> list[tuple[str, ...]]:
    """Every emulated host: the step tags occupy the top of the port space,
    so the kernel must not hand them out as ephemeral ports; TCP mode asks
    for ECN (there is no per-socket switch for cubic)."""
    return [("sysctl", "-qw", f"net.ipv4.ip_local_reserved_ports={TAG_PORT_BASE}-65535"),
            ("sysctl", "-qw", "net.ipv4.tcp_ecn=1")]
