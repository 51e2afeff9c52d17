"""tc on a link's ends, one definition each: htb at a rate (a host's NIC),
netem for delay, jitter and loss, and the probe for sch_netem.

Commands are argument lists after ``tc``; the caller runs them where the
interface lives (a Mininet node, ``ip netns exec``, the root namespace).
Why the switch side gets no qdisc: docs/topologies.md.
"""

from __future__ import annotations

import functools
import subprocess
from dataclasses import dataclass

from topologies.network.names import PREFIX, new_lab_id
from topologies.spec.topo import HOST_LINK, TopoSpec

HTB_CLASS = "1:1"           # the one htb class every shaped interface has
NETEM_HANDLE = "10:"


@dataclass(frozen=True)
class LinkInfo:
    """A link as the network built it: its ends' interface names and its
    current rate (set_link_rate changes it)."""

    node1: str
    node2: str
    intf1: str
    intf2: str
    rate_mbit: float | None
    delay_ms: float
    cls: str = HOST_LINK        # "host" | "fabric"


def htb_root(dev: str) -> list[str]:
    """The htb qdisc whose default class takes all traffic."""
    return ["qdisc", "replace", "dev", dev, "root", "handle", "1:", "htb", "default", "1"]


def htb_rate(dev: str, rate_mbit: float) -> list[str]:
    """The htb class's rate (set or changed); needs htb_root first."""
    rate = f"{rate_mbit}mbit"
    return ["class", "replace", "dev", dev, "parent", "1:", "classid", HTB_CLASS, "htb", "rate", rate, "ceil", rate]


def htb(dev: str, rate_mbit: float) -> list[list[str]]:
    """Shape an interface to a rate."""
    return [htb_root(dev), htb_rate(dev, rate_mbit)]


def netem(dev: str, under_htb: bool, delay_ms: float, jitter_ms: float = 0.0, loss_pct: float = 0.0) -> list[str]:
    """Put (or, all zero, take away) a netem: under the htb class on a shaped
    interface, as the root qdisc elsewhere (a delay line, not a rate limit)."""
    where = ["parent", HTB_CLASS, "handle", NETEM_HANDLE] if under_htb else ["root", "handle", NETEM_HANDLE]
    if not (delay_ms or jitter_ms or loss_pct):
        return ["qdisc", "del", "dev", dev, *where]
    params = ["delay", f"{delay_ms}ms"] + ([f"{jitter_ms}ms"] if jitter_ms else [])
    params += ["loss", f"{loss_pct}%"] if loss_pct else []
    return ["qdisc", "replace", "dev", dev, *where, "netem", *params]


def link_infos(topo: TopoSpec, ifname) -> dict[str, LinkInfo]:
    """Every link with its ends' interface names, ifname(node, port)."""
    return {link.name: LinkInfo(link.node1, link.node2, ifname(link.node1, link.port1),
                                ifname(link.node2, link.port2), link.rate_mbit, link.delay_ms, link.cls)
            for link in topo.links}


@functools.cache
def netem_available() -> bool:
    """Whether this kernel has sch_netem: a netem qdisc on the loopback of a
    throwaway namespace (never on a real interface; `modprobe -n` is not
    everywhere and the module may be built in).  Needs root; False when
    anything fails.  Asked once per process."""
    ns = f"{PREFIX}-{new_lab_id()}-netemprobe"
    try:
        if subprocess.run(["ip", "netns", "add", ns], capture_output=True).returncode:
            return False
        r = subprocess.run(["ip", "netns", "exec", ns, "tc", *netem("lo", False, 1.0)], capture_output=True)
        return r.returncode == 0
    except OSError:
        return False
    finally:
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)
