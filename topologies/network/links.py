"""tc on a link's ends, one definition each: htb at a rate (a host's NIC),
netem for delay, jitter and loss, the probe for sch_netem, and the one
decision of how delays and netem jitter are applied on a target
(``delay_via``); the MTU a link needs for the jobs' data frames
(``mtu_for``, ``set_mtu``).

Commands are argument lists after ``tc``; the caller runs them where the
interface lives (a Mininet node, ``ip netns exec``, the root namespace).
Why the switch side gets no qdisc: docs/topologies.md.
"""

from __future__ import annotations

import functools
import subprocess
from dataclasses import dataclass

from contract.absent import pretends_absent
from topologies.network.names import PREFIX
from topologies.network.state import StateFile
from topologies.spec.netem import DEFAULT_LIMIT, NetemParams
from topologies.spec.topo import HOST_LINK, TopoSpec

HTB_CLASS = "1:1"           # the one htb class every shaped interface has
DEFAULT_MTU = 1500
ETHERNET_HEADER = 14
NETEM_HANDLE = "10:"
# how link delays and netem jitter are applied: tc netem (the kernel has
# sch_netem), the twin's delay lines (soft target without it), or not at all
# (bmv2 without it: delays left out, netem jitter squeezes the rate instead)
VIA_NETEM, VIA_TWIN, VIA_FALLBACK = "netem", "twin", "fallback"


def delay_via(target: str, has_netem: bool) -> str:
    """The one place that decides how a network on `target` ("soft" |
    "bmv2") applies link delays and netem jitter, where the kernel has
    sch_netem or not."""
    if has_netem:
        return VIA_NETEM
    return VIA_TWIN if target == "soft" else VIA_FALLBACK


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


def netem(dev: str, under_htb: bool, p: NetemParams) -> list[str]:
    """Put (or, all zero, take away) a netem: under the htb class on a shaped
    interface, as the root qdisc elsewhere (a delay line, not a rate limit).
    The distribution goes to tc only with a jitter ("uniform" is tc's own
    default and has no table); reorder takes tc's default gap 1."""
    where = ["parent", HTB_CLASS, "handle", NETEM_HANDLE] if under_htb else ["root", "handle", NETEM_HANDLE]
    if not p.active:
        return ["qdisc", "del", "dev", dev, *where]
    args = ["delay", f"{p.delay_ms}ms"]
    if p.jitter_ms:
        args += [f"{p.jitter_ms}ms"] + ([f"{p.correlation_pct}%"] if p.correlation_pct else [])
        args += ["distribution", p.distribution] if p.distribution != "uniform" else []
    args += ["loss", f"{p.loss_pct}%"] if p.loss_pct else []
    args += ["reorder", f"{p.reorder_pct}%"] if p.reorder_pct else []
    args += ["limit", str(p.limit)] if p.limit != DEFAULT_LIMIT else []
    return ["qdisc", "replace", "dev", dev, *where, "netem", *args]


def mtu_for(frame_bytes: int | None) -> int | None:
    """The MTU every link needs for data frames of frame_bytes (Ethernet
    header on, as the pacer and htb count them); None when the default 1500
    holds them.  Without it the kernel would fragment a larger datagram, and
    a switch would read the step tag of its first fragment only."""
    if not frame_bytes or frame_bytes - ETHERNET_HEADER <= DEFAULT_MTU:
        return None
    return frame_bytes - ETHERNET_HEADER


def set_mtu(dev: str, mtu: int) -> list[str]:
    """`ip` arguments that set an interface's MTU."""
    return ["link", "set", "dev", dev, "mtu", str(mtu)]


def link_infos(topo: TopoSpec, ifname) -> dict[str, LinkInfo]:
    """Every link with its ends' interface names, ifname(node, port)."""
    return {link.name: LinkInfo(link.node1, link.node2, ifname(link.node1, link.port1),
                                ifname(link.node2, link.port2), link.rate_mbit, link.delay_ms, link.cls)
            for link in topo.links}


@functools.cache
def netem_available() -> bool:
    """Whether this kernel has sch_netem: a netem qdisc on the loopback of a
    throwaway namespace (never on a real interface; `modprobe -n` is not
    everywhere and the module may be built in), registered with a state
    file as every lab is.  Needs root; False when anything fails, and
    where SYMPHONY_ABSENT names netem (contract/absent.py).  Asked once per
    process."""
    if pretends_absent("netem"):
        return False
    try:
        state = StateFile.claim("netem probe")
    except OSError:
        return False
    ns = f"{PREFIX}-{state.id}-netemprobe"
    try:
        if subprocess.run(["ip", "netns", "add", ns], capture_output=True).returncode:
            return False
        r = subprocess.run(["ip", "netns", "exec", ns, "tc", *netem("lo", False, NetemParams(1.0))],
                           capture_output=True)
        return r.returncode == 0
    except OSError:
        return False
    finally:
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        state.remove()
