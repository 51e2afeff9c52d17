"""Routes over a TopoSpec (pure).

Shortest paths (hop count), hosts never transit.  Among equal next hops a
switch picks as the topology's routing says (TopoSpec.routing):

- ``destination`` (the default): the one at (destination host index mod
  their number), so routes are deterministic per destination and flows to
  different hosts spread over the spines;
- ``ecmp``, ``ecmp-flow``: the candidate a hash of the packet's 5-tuple
  selects (contract.ecmp, the same hash the switches compute), so a path
  depends on the flow's ports: a ring flow's on its step (the tag is its
  source port), unless ``ecmp-flow`` masks the tag out.  Ask ``route`` with
  the packet's ``Flow``; a caller without one gets an error, not a
  per-destination path.  ``any_path_links`` is for callers that need only
  what every equal-cost path shares (docs/ecmp.md, "Where the Python
  derives paths").
"""

from __future__ import annotations

import ipaddress
from collections import deque
from dataclasses import dataclass

from contract import ecmp
from contract.tags import tag_port
from topologies.spec.topo import TopoSpec

UDP = 17


@dataclass(frozen=True)
class Flow:
    """What the ECMP hash reads of a packet besides its addresses."""
    sport: int
    dport: int
    proto: int = UDP


def ring_flow(step: int, data_port: int) -> Flow:
    """A UDP ring flow's data packets at a step: the tag in the source port."""
    return Flow(tag_port(step), data_port)


@dataclass(frozen=True)
class Hop:
    switch: str
    in_port: int
    out_port: int


def next_ports(topo: TopoSpec) -> dict[tuple[str, str], int]:
    """(switch, destination host) -> egress port, for every pair; among equal
    next hops, ports in ascending order, the one at the destination's index.
    Worked out once per topology (a cluster's routes are asked for per
    job and per ring edge); the caller must not change the table."""
    return topo.memo("next ports", topo.links, lambda: _next_ports(topo))


def _next_ports(topo: TopoSpec) -> dict[tuple[str, str], int]:
    index = {h.name: h.index for h in topo.hosts}
    return {(sw, dst): cands[index[dst] % len(cands)] for (sw, dst), cands in candidate_ports(topo).items()}


def candidate_ports(topo: TopoSpec) -> dict[tuple[str, str], tuple[int, ...]]:
    """(switch, destination host) -> every equal-cost next-hop port, ascending
    (what an ECMP group holds); one port where there is no choice."""
    return topo.memo("candidate ports", topo.links, lambda: _candidate_ports(topo))


def _candidate_ports(topo: TopoSpec) -> dict[tuple[str, str], tuple[int, ...]]:
    table = {}
    for dst in topo.hosts:
        dist = _distances(topo, dst.name)
        for sw in topo.switches:
            if sw.name in dist:
                table[(sw.name, dst.name)] = tuple(sorted(
                    port for port, (peer, _, _) in topo.ports(sw.name).items()
                    if dist.get(peer) == dist[sw.name] - 1 and (peer == dst.name or topo.is_switch(peer))))
    return table


def host_ip(topo: TopoSpec, host: str) -> int:
    ips = topo.memo("host ips", topo.hosts, lambda: {h.name: int(ipaddress.IPv4Address(h.ip)) for h in topo.hosts})
    return ips[host]


def ecmp_port(topo: TopoSpec, sw: str, src: str, dst: str, flow: Flow) -> int:
    """The port a switch's ECMP picks for a packet of `flow` from host src to dst."""
    cands = candidate_ports(topo)[(sw, dst)]
    if len(cands) == 1:
        return cands[0]
    b = ecmp.bucket(host_ip(topo, src), host_ip(topo, dst), flow.proto, flow.sport, flow.dport,
                    ecmp.SPORT_MASKS[topo.routing])
    return ecmp.pick(cands, b)


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


def hop_indices(topo: TopoSpec, src: str) -> dict[str, int]:
    """switch -> where it sits on any shortest path from host src that
    crosses it (0: src's access switch): every such path has it at the
    same hop."""
    return {node: d - 1 for node, d in _distances(topo, src).items() if topo.is_switch(node)}


def route(topo: TopoSpec, src: str, dst: str, table: dict | None = None, flow: Flow | None = None) -> list[Hop]:
    """Switch hops a packet from host src to host dst takes (table:
    next_ports' answer; flow: the packet's ports, which an ECMP topology
    needs)."""
    use_hash = ecmp.is_ecmp(topo.routing)
    if use_hash and flow is None:
        raise ValueError(f"routing {topo.routing!r}: a path from {src} to {dst} depends on the flow's ports; "
                         "pass flow= (or any_path_links for what every equal-cost path shares)")
    table = table if table is not None or use_hash else next_ports(topo)
    hops = []
    node, in_port = topo.access_switch(src)
    while True:
        out = ecmp_port(topo, node, src, dst, flow) if use_hash else table[(node, dst)]
        hops.append(Hop(node, in_port, out))
        peer, peer_port, _ = topo.ports(node)[out]
        if peer == dst:
            return hops
        if len(hops) > len(topo.switches):
            raise RuntimeError(f"routing loop from {src} to {dst}")
        node, in_port = peer, peer_port


def path_links(topo: TopoSpec, src: str, dst: str, table: dict | None = None, flow: Flow | None = None) -> list[str]:
    """Links a packet from host src to host dst crosses, in order (table:
    next_ports' answer, when the caller asks for many paths; flow: as route)."""
    links = [topo.ports(src)[0][2].name]
    for hop in route(topo, src, dst, table, flow):
        links.append(topo.ports(hop.switch)[hop.out_port][2].name)
    return links


def any_path_links(topo: TopoSpec, src: str, dst: str, table: dict | None = None) -> list[str]:
    """One shortest path's links (the per-destination one), whatever the
    routing: for callers that need only what every equal-cost path between
    two hosts shares, its length and its links' classes, rates and delays.
    Every topology kind builds its fabric links of one class with one rate
    and delay (topo.build), and equal-cost paths cross the same classes in
    the same order, so those figures do not depend on the path."""
    links = [topo.ports(src)[0][2].name]
    table = table if table is not None else next_ports(topo)
    node, _ = topo.access_switch(src)
    while True:
        out = table[(node, dst)]
        peer, _, link = topo.ports(node)[out]
        links.append(link.name)
        if peer == dst:
            return links
        node = peer


def ring_switches(topo: TopoSpec, src: str, dst: str, dport: int, table: dict | None = None) -> list[str]:
    """The switches a UDP ring flow's data may cross over all its steps, in
    hop order: its one route per destination or under ``ecmp-flow`` (whose
    hash leaves the step tag out, so every step takes the path of step 0);
    under ``ecmp`` every switch on some shortest path (switches_between),
    since each step's tag hashes anew."""
    if topo.routing == "ecmp":
        return switches_between(topo, src, dst)
    flow = ring_flow(0, dport) if ecmp.is_ecmp(topo.routing) else None
    return [hop.switch for hop in route(topo, src, dst, table, flow)]


def ring_egresses(topo: TopoSpec, src: str, dst: str, dport: int, table: dict | None = None
                  ) -> list[tuple[str, int]]:
    """(switch, egress port) of every switch queue a UDP ring flow's data
    may leave by over all its steps (as ring_switches): under ``ecmp`` every
    equal-cost port of every switch between."""
    if topo.routing == "ecmp":
        cands = candidate_ports(topo)
        return [(sw, p) for sw in switches_between(topo, src, dst) for p in cands[(sw, dst)]]
    flow = ring_flow(0, dport) if ecmp.is_ecmp(topo.routing) else None
    return [(hop.switch, hop.out_port) for hop in route(topo, src, dst, table, flow)]


def switches_between(topo: TopoSpec, src: str, dst: str) -> list[str]:
    """Every switch on some shortest path from host src to host dst, in
    hop order then name: where a flow may go under ECMP (what the control
    plane installs its entry on)."""
    cands = candidate_ports(topo)
    layer, seen = [topo.access_switch(src)[0]], []
    while layer:
        seen += layer
        nxt = {topo.ports(sw)[p][0] for sw in layer for p in cands[(sw, dst)]} - {dst}
        layer = sorted(nxt)
    return seen
