"""Topology builders and routes, as plain data (no Mininet, no I/O).

A topology is a list of hosts, switches and links with per-class rate and
delay.  Routes are destination-based, because the switch's `forward` table
matches on the IPv4 destination only: every switch picks one egress port per
destination host.  Among equal-cost next hops (a leaf's uplinks) it picks by
a hash of the destination (its host index modulo the number of candidates),
so routes are deterministic and flows to different hosts spread over the
spines; ECMP per flow is out of scope.

Kinds:
- ``star``: one switch ``s1``, hosts h1..hN;
- ``leafspine``: leaves l1..lL, spines p1..pS, every leaf linked to every
  spine, hosts spread over the leaves in blocks (h1..hk on l1, ...);
- ``dumbbell``: two switches s1, s2 joined by one fabric link (the
  bottleneck), first half of the hosts on s1, the rest on s2.

Host links are class "host", switch-to-switch links class "fabric".
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

KINDS = ("star", "leafspine", "dumbbell")
HOST_LINK = "host"
FABRIC_LINK = "fabric"

# Mininet's default address plan: hosts in 10.0.0.0/8, h<i> = 10.0.0.<i>
IP_BASE = "10.0.0.0/8"
MAX_HOSTS = 250


class TopoError(ValueError):
    """A bad [topology] table: the message names the key."""


@dataclass(frozen=True)
class HostSpec:
    name: str
    index: int          # 0-based; the route hash uses it
    ip: str             # without prefix length
    mac: str


@dataclass(frozen=True)
class SwitchSpec:
    name: str
    device_id: int      # 0-based: BMv2 --device-id, also the thrift port offset
    role: str           # "star" | "leaf" | "spine" | "left" | "right"


@dataclass(frozen=True)
class LinkSpec:
    name: str           # "<node1>-<node2>"
    node1: str
    port1: int          # hosts use port 0 (eth0), switches count from 1
    node2: str
    port2: int
    cls: str            # HOST_LINK | FABRIC_LINK
    rate_mbit: float | None
    delay_ms: float


@dataclass(frozen=True)
class Hop:
    switch: str
    in_port: int
    out_port: int


@dataclass
class TopoSpec:
    kind: str
    hosts: list[HostSpec]
    switches: list[SwitchSpec]
    links: list[LinkSpec]
    params: dict = field(default_factory=dict)

    # --- lookups -------------------------------------------------------------
    def host(self, name: str) -> HostSpec:
        for h in self.hosts:
            if h.name == name:
                return h
        raise KeyError(f"no host {name!r}")

    def switch(self, name: str) -> SwitchSpec:
        for s in self.switches:
            if s.name == name:
                return s
        raise KeyError(f"no switch {name!r}")

    def is_switch(self, name: str) -> bool:
        return any(s.name == name for s in self.switches)

    def link(self, name: str) -> LinkSpec:
        for link in self.links:
            if link.name == name:
                return link
        raise KeyError(f"no link {name!r}")

    def ports(self, node: str) -> dict[int, tuple[str, int, LinkSpec]]:
        """port -> (peer node, peer port, link) for one node."""
        out = {}
        for link in self.links:
            if link.node1 == node:
                out[link.port1] = (link.node2, link.port2, link)
            elif link.node2 == node:
                out[link.port2] = (link.node1, link.port1, link)
        return out

    def access_switch(self, host: str) -> tuple[str, int]:
        """(switch, switch port) the host hangs off."""
        (peer, peer_port, _), = self.ports(host).values()
        return peer, peer_port

    def hosts_by_switch(self) -> dict[str, list[str]]:
        groups: dict[str, list[str]] = {}
        for h in self.hosts:
            groups.setdefault(self.access_switch(h.name)[0], []).append(h.name)
        return groups


# --- builders ------------------------------------------------------------------

def host_spec(i: int) -> HostSpec:
    n = i + 1
    return HostSpec(f"h{n}", i, f"10.0.{n // 256}.{n % 256}", "00:00:00:00:%02x:%02x" % (n // 256, n % 256))


class _Builder:
    def __init__(self, kind: str, host_rate, fabric_rate, host_delay, fabric_delay):
        self.kind = kind
        self.rates = {HOST_LINK: host_rate, FABRIC_LINK: fabric_rate}
        self.delays = {HOST_LINK: host_delay, FABRIC_LINK: fabric_delay}
        self.hosts: list[HostSpec] = []
        self.switches: list[SwitchSpec] = []
        self.links: list[LinkSpec] = []
        self.next_port: dict[str, int] = {}

    def switch(self, name: str, role: str) -> str:
        self.switches.append(SwitchSpec(name, len(self.switches), role))
        self.next_port[name] = 1
        return name

    def host(self) -> str:
        h = host_spec(len(self.hosts))
        self.hosts.append(h)
        self.next_port[h.name] = 0
        return h.name

    def link(self, a: str, b: str, cls: str) -> None:
        pa, pb = self.next_port[a], self.next_port[b]
        self.next_port[a] += 1
        self.next_port[b] += 1
        self.links.append(LinkSpec(f"{a}-{b}", a, pa, b, pb, cls, self.rates[cls], self.delays[cls]))

    def done(self, params: dict) -> TopoSpec:
        return TopoSpec(self.kind, self.hosts, self.switches, self.links, params)


def _num(table: dict, key: str, default, lo: float, integer: bool = False, allow_none=False):
    v = table.get(key, default)
    if v is None and allow_none:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or (integer and not isinstance(v, int)):
        kind = "an integer" if integer else "a number"
        raise TopoError(f"topology.{key}: expected {kind}, got {v!r}")
    if v < lo:
        raise TopoError(f"topology.{key}: must be >= {lo}, got {v!r}")
    return v


TOPO_KEYS = {"kind", "hosts", "leaves", "spines", "host_rate_mbit", "fabric_rate_mbit",
             "host_delay_ms", "fabric_delay_ms", "queue_depth_pkts"}
DEFAULT_QUEUE_DEPTH = 64     # BMv2's default egress queue depth, packets


def build(table: dict) -> TopoSpec:
    """Build a topology from the config's [topology] table."""
    if not isinstance(table, dict):
        raise TopoError("topology: expected a table")
    unknown = sorted(set(table) - TOPO_KEYS)
    if unknown:
        raise TopoError(f"topology.{unknown[0]}: unknown key (known: {', '.join(sorted(TOPO_KEYS))})")
    kind = table.get("kind")
    if kind not in KINDS:
        raise TopoError(f"topology.kind: expected one of {', '.join(KINDS)}, got {kind!r}")
    n_hosts = _num(table, "hosts", None if kind != "dumbbell" else 4, 2, integer=True)
    if n_hosts > MAX_HOSTS:
        raise TopoError(f"topology.hosts: at most {MAX_HOSTS}, got {n_hosts}")
    host_rate = _num(table, "host_rate_mbit", None, 0.001, allow_none=True)
    fabric_rate = _num(table, "fabric_rate_mbit", host_rate, 0.001, allow_none=True)
    host_delay = _num(table, "host_delay_ms", 0.0, 0.0)
    fabric_delay = _num(table, "fabric_delay_ms", 0.0, 0.0)
    depth = _num(table, "queue_depth_pkts", DEFAULT_QUEUE_DEPTH, 1, integer=True)
    b = _Builder(kind, host_rate, fabric_rate, host_delay, fabric_delay)
    params = {"queue_depth_pkts": depth}
    if kind == "star":
        s = b.switch("s1", "star")
        for _ in range(n_hosts):
            b.link(b.host(), s, HOST_LINK)
    elif kind == "dumbbell":
        left, right = b.switch("s1", "left"), b.switch("s2", "right")
        half = (n_hosts + 1) // 2
        for i in range(n_hosts):
            b.link(b.host(), left if i < half else right, HOST_LINK)
        b.link(left, right, FABRIC_LINK)
    else:
        n_leaves = _num(table, "leaves", 2, 1, integer=True)
        n_spines = _num(table, "spines", 1, 1, integer=True)
        if n_hosts < n_leaves:
            raise TopoError(f"topology.hosts: need at least one host per leaf ({n_leaves}), got {n_hosts}")
        leaves = [b.switch(f"l{i + 1}", "leaf") for i in range(n_leaves)]
        spines = [b.switch(f"p{i + 1}", "spine") for i in range(n_spines)]
        # blocks: leaf i gets hosts [start_i, start_{i+1}), sizes differing by at most one
        for i in range(n_hosts):
            b.link(b.host(), leaves[i * n_leaves // n_hosts], HOST_LINK)
        for leaf in leaves:
            for spine in spines:
                b.link(leaf, spine, FABRIC_LINK)
        params["oversubscription"] = oversubscription(b, leaves, n_spines)
    return b.done(params)


def oversubscription(b: _Builder, leaves: list[str], n_spines: int) -> dict[str, float | None]:
    """Per leaf: host-facing capacity over spine-facing capacity (None when
    a rate is unlimited)."""
    out = {}
    for leaf in leaves:
        n_down = sum(1 for link in b.links if link.cls == HOST_LINK and link.node2 == leaf)
        host_rate, fabric_rate = b.rates[HOST_LINK], b.rates[FABRIC_LINK]
        out[leaf] = (None if not host_rate or not fabric_rate
                     else round(n_down * host_rate / (n_spines * fabric_rate), 6))
    return out


# --- routes ----------------------------------------------------------------------

def next_ports(topo: TopoSpec) -> dict[tuple[str, str], int]:
    """(switch, destination host) -> egress port, for every pair.

    Shortest paths (hop count) with hosts never used as transit; among equal
    next hops the one at position (destination index mod count), ports in
    ascending order."""
    table = {}
    for dst in topo.hosts:
        dist = _distances(topo, dst.name)
        for sw in topo.switches:
            if sw.name not in dist:
                continue
            cands = sorted(port for port, (peer, _, _) in topo.ports(sw.name).items()
                           if dist.get(peer) == dist[sw.name] - 1
                           and (peer == dst.name or topo.is_switch(peer)))
            table[(sw.name, dst.name)] = cands[dst.index % len(cands)]
    return table


def _distances(topo: TopoSpec, dst: str) -> dict[str, int]:
    dist = {dst: 0}
    queue = deque([dst])
    while queue:
        node = queue.popleft()
        if node != dst and not topo.is_switch(node):
            continue            # hosts do not forward
        for peer, _, _ in topo.ports(node).values():
            if peer not in dist:
                dist[peer] = dist[node] + 1
                queue.append(peer)
    return dist


def route(topo: TopoSpec, src: str, dst: str, table: dict | None = None) -> list[Hop]:
    """Switch hops a packet from host src to host dst takes."""
    table = table if table is not None else next_ports(topo)
    hops = []
    node, in_port = topo.access_switch(src)
    while True:
        out = table[(node, dst)]
        hops.append(Hop(node, in_port, out))
        peer, peer_port, _ = topo.ports(node)[out]
        if peer == dst:
            return hops
        if len(hops) > len(topo.switches):
            raise RuntimeError(f"routing loop from {src} to {dst}")
        node, in_port = peer, peer_port


def link_on_port(topo: TopoSpec, switch: str, port: int) -> LinkSpec:
    return topo.ports(switch)[port][2]
