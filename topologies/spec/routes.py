"""Routes over a TopoSpec (pure).

Routes are per destination, because the switch's `forward` table matches the
IPv4 destination only: shortest paths (hop count), hosts never transit, and
among equal next hops the one at (destination host index mod their number),
so routes are deterministic and flows to different hosts spread over the
spines (ECMP per flow is out of scope).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from topologies.spec.topo import TopoSpec


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


def path_links(topo: TopoSpec, src: str, dst: str, table: dict | None = None) -> list[str]:
    """Links a packet from host src to host dst crosses, in order (table:
    next_ports' answer, when the caller asks for many paths)."""
    links = [topo.ports(src)[0][2].name]
    for hop in route(topo, src, dst, table):
        links.append(topo.ports(hop.switch)[hop.out_port][2].name)
    return links
