"""A network's links, set up and changed: the MTU on every end, htb at the
link's rate on a host end (the host's NIC), the link's delay as tc netem on
both ends or in the twins' delay lines, the check that each took effect, and
the changes a run makes (set_rate, set_netem: the jitter's squeezes and netem
entries).

How delays and netem are applied is decided once (``links.delay_via``, in
``via``).  A switch end carries no qdisc: the switch drains its egress port
at the link's rate itself, where the program sees the queue
(docs/topologies.md, "Rates and delays"); it is reached through the
switch's control client (``clients``: switch -> client, filled as the
control plane starts).  A host end is reached with ``pexec(host, *cmd)``
(Mininet's node.pexec: (stdout, stderr, exit code)), a switch end's
interface in the root namespace directly.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from dataclasses import replace

from topologies.network.links import (
    VIA_FALLBACK,
    VIA_NETEM,
    VIA_TWIN,
    LinkInfo,
    delay_via,
    htb,
    htb_rate,
    htb_root,
    netem,
    set_mtu,
)
from topologies.network.nodes import tune_root_intf
from topologies.spec.netem import NetemParams, delay_points
from topologies.spec.topo import TopoSpec
from topologies.switch import controlplane as cp

NO_DELAY_LINE = "this kernel has no sch_netem and the bmv2 target has no delay line"


class NetworkError(RuntimeError):
    """The network could not be built or changed as asked (one-line message);
    raised by TestbedNetwork and by its links (here, below it)."""


class LinkControl:
    """The links of one network (module docstring).  Made before anything
    is built, so link names and netem commands are known early; then, as
    TestbedNetwork.start goes: set_target once the target is known,
    configure once the interfaces exist, twin_delays once the switches'
    clients are there, check last."""

    def __init__(self, topo: TopoSpec, links: dict[str, LinkInfo], pexec: Callable, clients: dict,
                 mtu: int | None = None, packet_bytes: int = cp.ASSUMED_PACKET_BYTES):
        self.topo = topo
        self.links = links              # name -> LinkInfo, its rate as set now
        self.pexec = pexec
        self.clients = clients
        self.mtu = mtu                  # None: the default
        self.packet_bytes = packet_bytes   # bmv2's packets/s count frames of this size
        self.via: str | None = None     # links.delay_via's answer, from set_target
        self.rate_unit = "pps"          # the switches' queue rate unit (controlplane.rate_unit), from set_target

    def set_target(self, target: str, has_netem: bool) -> None:
        """How delays and netem apply (links.delay_via) and the unit of the
        switches' queue rates, on this target."""
        self.via, self.rate_unit = delay_via(target, has_netem), cp.rate_unit(target)

    def configure(self) -> list[str]:
        """Every end's MTU, offloads and IPv6 off on the switch ends, htb on
        the host ends of links with a rate, tc netem where via is netem (the
        twins' delay lines wait for the control plane: twin_delays).
        Returns warnings."""
        warnings = []
        if self.via == VIA_FALLBACK and any(link.delay_ms for link in self.topo.links):
            warnings.append(f"link delay requested but {NO_DELAY_LINE}: links run without the delay")
        for name, info in self.links.items():
            for node, intf in self.ends(name):
                if self.mtu:
                    code, out, err = self._run(node, "ip", *set_mtu(intf, self.mtu))
                    if code:
                        raise NetworkError(f"link {name}: MTU {self.mtu} on {node or 'root'}:{intf}: "
                                           f"{(err or out).strip()}")
                if node is None:
                    warnings.extend(tune_root_intf(intf))
                elif info.rate_mbit:
                    for args in htb(intf, info.rate_mbit):
                        self._tc(node, *args)
            if info.delay_ms and self.via == VIA_NETEM:
                self.set_netem(name)
        return warnings

    def twin_delays(self) -> None:
        """Each link's delay in the twins' delay lines (via twin), once the
        switches' clients are there."""
        if self.via == VIA_TWIN:
            for name, info in self.links.items():
                if info.delay_ms:
                    self._twin_netem(name, NetemParams(info.delay_ms))

    def check(self) -> None:
        """Each requested link property must show in tc's output (Mininet's
        TCLink only prints an error when a qdisc is missing)."""
        for name, info in self.links.items():
            for node, intf in self.ends(name):
                if node is not None and info.rate_mbit:
                    out = self._run(node, "tc", "class", "show", "dev", intf)[1]
                    if "htb" not in out or "rate" not in out:
                        raise NetworkError(f"link {name}: htb rate {info.rate_mbit} Mb/s did not take effect "
                                           f"on {node}:{intf} ({out.strip() or 'no class'})")
                if info.delay_ms and self.via == VIA_NETEM:
                    out = self._run(node, "tc", "qdisc", "show", "dev", intf)[1]
                    if "netem" not in out:
                        raise NetworkError(f"link {name}: netem delay {info.delay_ms} ms did not take effect "
                                           f"on {node or 'root'}:{intf}")

    def ends(self, link: str) -> list[tuple[str | None, str]]:
        """(host name, or None for the root namespace; interface) of both ends."""
        info = self._info(link)
        return [(None if self.topo.is_switch(node) else node, intf)
                for node, intf in ((info.node1, info.intf1), (info.node2, info.intf2))]

    def netem_commands(self, link: str, p: NetemParams) -> list[tuple[str | None, list[str]]]:
        """(host or None, tc arguments) that put (or, all zero, take away) a
        netem on both ends of a link: under the htb class on a shaped host end."""
        shaped = self._info(link).rate_mbit
        return [(node, netem(intf, bool(node is not None and shaped), p)) for node, intf in self.ends(link)]

    def set_netem(self, link: str, delay_ms: float | None = None, jitter_ms: float = 0.0,
                  loss_pct: float = 0.0, distribution: str = "uniform", correlation_pct: float = 0.0,
                  reorder_pct: float = 0.0) -> None:
        """Delay (plus jitter), loss and reordering on a link, both
        directions (topologies.spec.netem.NetemParams); delay None: the
        link's configured delay.  All zero removes it.  tc netem or the
        twins' delay lines, as via says; NetworkError where neither exists
        (bmv2 without sch_netem)."""
        delay = self._info(link).delay_ms if delay_ms is None else delay_ms
        p = NetemParams(delay, jitter_ms, loss_pct, distribution, correlation_pct, reorder_pct)
        if self.via == VIA_TWIN:
            self._twin_netem(link, p)
            return
        if self.via != VIA_NETEM:
            raise NetworkError(f"{NO_DELAY_LINE}: netem jitter cannot run here (use kind 'rate')")
        for node, args in self.netem_commands(link, p):
            if args[1] == "del":
                try:
                    self._tc(node, *args)
                except NetworkError:
                    pass            # no netem there: nothing to remove
            else:
                self._tc(node, *args)

    def set_rate(self, link: str, rate_mbit: float) -> None:
        """Squeeze or restore a link: the switch egress queue(s) of the link
        drain at the new rate; the host side (its NIC) is re-shaped."""
        if not isinstance(rate_mbit, (int, float)) or isinstance(rate_mbit, bool) or rate_mbit <= 0:
            raise ValueError(f"set_link_rate: rate must be a positive number of Mb/s, got {rate_mbit!r}")
        info = self._info(link)
        spec = self.topo.link(link)
        for node, port, intf in ((spec.node1, spec.port1, info.intf1), (spec.node2, spec.port2, info.intf2)):
            if self.topo.is_switch(node):
                client = self.clients.get(node)
                if client is not None:
                    cp.set_port_rate(client, port, rate_mbit, self.rate_unit, self.packet_bytes)
            else:
                if not info.rate_mbit:      # an unshaped host end gets its htb now
                    self._tc(node, *htb_root(intf))
                self._tc(node, *htb_rate(intf, rate_mbit))
        self.links[link] = replace(info, rate_mbit=rate_mbit)

    def delays(self) -> dict:
        """For meta.json: each link's delay as applied (ms, each direction)
        and how (links.delay_via)."""
        applied = self.via in (VIA_NETEM, VIA_TWIN)
        return {"link_delays_ms": {name: float(info.delay_ms) if applied else 0.0 for name, info in self.links.items()},
                "link_delays_via": self.via}

    def _info(self, link: str) -> LinkInfo:
        if link not in self.links:
            raise KeyError(f"no link {link!r} (links: {', '.join(self.links)})")
        return self.links[link]

    def _twin_netem(self, link: str, p: NetemParams) -> None:
        """netem in the twins, where topologies.spec.netem.delay_points puts it."""
        for switch, port, direction in delay_points(self.topo, link):
            self.clients[switch].set_netem(p, port, direction)

    def _run(self, host: str | None, *cmd: str) -> tuple[int, str, str]:
        """(exit code, stdout, stderr) of a command on a host or, None, in the root namespace."""
        if host is None:
            r = subprocess.run(cmd, capture_output=True, text=True)
            return r.returncode, r.stdout, r.stderr
        out, err, code = self.pexec(host, *cmd)
        return code, out, err

    def _tc(self, host: str | None, *args: str) -> None:
        code, out, err = self._run(host, "tc", *args)
        if code:
            raise NetworkError(f"tc {' '.join(args)} on {host or 'root'}: {(err or out).strip()}")
