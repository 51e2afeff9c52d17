"""Topology builders, as plain data (no Mininet, no I/O).

``build(TopoParams) -> TopoSpec``: hosts, switches and links with per-class
rate and delay, and the egress queue depth of every switch port.  The values
are taken as they come: the experiment config checks their ranges; build
raises TopoError only where no topology can be made (an unknown kind, fewer
hosts than leaves).  Kinds and address plan: docs/topologies.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from contract.ecmp import DEFAULT_ROUTING, ROUTINGS

KINDS = ("star", "leafspine", "dumbbell")
HOST_LINK = "host"
FABRIC_LINK = "fabric"


class TopoError(ValueError):
    """No topology or placement can be made as asked: the message names the key."""


@dataclass(frozen=True)
class TopoParams:
    """A [topology] table.  Rates in Mb/s (None: unlimited; fabric None:
    the host rate), delays in ms, the queue depth in packets (BMv2's default);
    leaves and spines count for leafspine only.  control_priority: control
    frames (ACKs, CNPs) leave every switch port ahead of queued data, as
    BMv2's control-frame queue always lets them (topologies.switch.bmv2);
    off, the twin's ports are one first-in first-out queue.  routing: how a
    switch picks among equal-cost next hops (contract.ecmp.ROUTINGS; per
    destination, or a hash of the 5-tuple: docs/ecmp.md)."""

    kind: str
    hosts: int
    host_rate_mbit: float | None = None
    fabric_rate_mbit: float | None = None
    host_delay_ms: float = 0.0
    fabric_delay_ms: float = 0.0
    queue_depth_pkts: int = 64
    leaves: int = 2
    spines: int = 1
    control_priority: bool = False
    routing: str = DEFAULT_ROUTING


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


@dataclass
class TopoSpec:
    kind: str
    hosts: list[HostSpec]
    switches: list[SwitchSpec]
    links: list[LinkSpec]
    queue_depth: int                              # packets, every switch egress queue
    params: dict = field(default_factory=dict)    # derived figures: leafspine oversubscription
    control_priority: bool = False                # TopoParams.control_priority
    routing: str = DEFAULT_ROUTING                # TopoParams.routing

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
        return name in self.memo("switch names", self.switches, lambda: {s.name for s in self.switches})

    def link(self, name: str) -> LinkSpec:
        for link in self.links:
            if link.name == name:
                return link
        raise KeyError(f"no link {name!r}")

    def ports(self, node: str) -> dict[int, tuple[str, int, LinkSpec]]:
        """port -> (peer node, peer port, link) for one node."""
        ends = self.memo("ports", self.links, self._port_ends).get(node, ())
        return {port: (peer, peer_port, self.links[i]) for port, peer, peer_port, i in ends}

    def _port_ends(self) -> dict[str, list[tuple[int, str, int, int]]]:
        out: dict[str, list[tuple[int, str, int, int]]] = {}
        for i, link in enumerate(self.links):
            out.setdefault(link.node1, []).append((link.port1, link.node2, link.port2, i))
            out.setdefault(link.node2, []).append((link.port2, link.node1, link.port1, i))
        return out

    def memo(self, name: str, of: list, build):
        """A lookup table over `of`, built once: routes over a cluster ask
        for ports and switches millions of times, and a scan of every link
        per question made a 1,024-host config's resolution take minutes.
        Rebuilt when `of` changes length (the builder appends); a link
        replaced in place is read fresh (ports keeps its position)."""
        cache = self.__dict__.setdefault("_indices", {})
        hit = cache.get(name)
        if hit is None or hit[0] != len(of):
            hit = cache[name] = (len(of), build())
        return hit[1]

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
    return HostSpec(f"h{n}", i, f"10.0.{n // 256}.{n % 256}", f"00:00:00:00:{n // 256:02x}:{n % 256:02x}")


class _Builder:
    def __init__(self, p: TopoParams):
        self.kind = p.kind
        fabric_rate = p.host_rate_mbit if p.fabric_rate_mbit is None else p.fabric_rate_mbit
        self.rates = {HOST_LINK: p.host_rate_mbit, FABRIC_LINK: fabric_rate}
        self.delays = {HOST_LINK: p.host_delay_ms, FABRIC_LINK: p.fabric_delay_ms}
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


def build(p: TopoParams) -> TopoSpec:
    """The topology of a [topology] table."""
    if p.kind not in KINDS:
        raise TopoError(f"topology.kind: expected one of {', '.join(KINDS)}, got {p.kind!r}")
    if p.routing not in ROUTINGS:
        raise TopoError(f"topology.routing: expected one of {', '.join(ROUTINGS)}, got {p.routing!r}")
    b = _Builder(p)
    params: dict = {}
    if p.kind == "star":
        s = b.switch("s1", "star")
        for _ in range(p.hosts):
            b.link(b.host(), s, HOST_LINK)
    elif p.kind == "dumbbell":
        left, right = b.switch("s1", "left"), b.switch("s2", "right")
        half = (p.hosts + 1) // 2
        for i in range(p.hosts):
            b.link(b.host(), left if i < half else right, HOST_LINK)
        b.link(left, right, FABRIC_LINK)
    else:
        if p.hosts < p.leaves:
            raise TopoError(f"topology.hosts: need at least one host per leaf ({p.leaves}), got {p.hosts}")
        leaves = [b.switch(f"l{i + 1}", "leaf") for i in range(p.leaves)]
        spines = [b.switch(f"p{i + 1}", "spine") for i in range(p.spines)]
        # blocks: leaf i gets hosts [start_i, start_{i+1}), sizes differing by at most one
        for i in range(p.hosts):
            b.link(b.host(), leaves[i * p.leaves // p.hosts], HOST_LINK)
        for leaf in leaves:
            for spine in spines:
                b.link(leaf, spine, FABRIC_LINK)
        params["oversubscription"] = oversubscription(b, leaves, p.spines)
    return TopoSpec(p.kind, b.hosts, b.switches, b.links, p.queue_depth_pkts, params, p.control_priority,
                    p.routing)


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
