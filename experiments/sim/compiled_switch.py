"""The compiled switch (symphony_engine.SwitchCore, engine/src/switch.hpp)
seen from the control plane as the twin's SwitchCore: the same control
methods with the same checks and messages, so LocalTwinClient (and with it
topologies.switch.controlplane.install) drives it as it drives the twin.

What stays in Python, once per control call: BMv2's value strings parsed
and checked by the twin's own tables (tables.Table, which also remain the
record of what is installed, for dumps), register and counter checks as
pipeline.Pipeline makes them, and the seeds' init keys and netem's
distribution tables the compiled parts cannot compute without the project.
Everything per packet is C++.

Also here: ``from_frame`` and ``to_frame``, the parser and the deparser
between real frames and descriptors, for the conformance vectors (whose
frames may be malformed: from_frame reports those drops as the twin's parser
names them).
"""

from __future__ import annotations

import hashlib
import ipaddress
from types import SimpleNamespace

import symphony_engine as E
from contract import p4names as N
from contract.lateness import Lateness
from topologies.spec.netem import NetemParams
from topologies.switch.twin import delayline
from topologies.switch.twin.core import DIRECTIONS
from topologies.switch.twin.pipeline import CounterValue, Pipeline, ipv4_checksum, parse
from topologies.switch.twin.queues import DEFAULT_DEPTH, EgressQueue
from topologies.switch.twin.tables import Table, TwinError


def init_key(seed: int | str) -> list[int]:
    """The MT19937 init key random.Random(seed) uses (CPython's random_seed):
    the 32-bit words of abs(int), least significant first, [0] for 0; a str
    is first the int of its UTF-8 bytes followed by their SHA-512 digest."""
    if isinstance(seed, str):
        raw = seed.encode()
        seed = int.from_bytes(raw + hashlib.sha512(raw).digest(), "big")
    n = abs(int(seed))
    key = []
    while True:
        key.append(n & 0xFFFFFFFF)
        n >>= 32
        if not n:
            return key


def netem_spec(p: NetemParams) -> E.NetemSpec:
    s = E.NetemSpec()
    s.delay_ms, s.jitter_ms, s.loss_pct = float(p.delay_ms), float(p.jitter_ms), float(p.loss_pct)
    s.correlation_pct, s.reorder_pct = float(p.correlation_pct), float(p.reorder_pct)
    s.distribution, s.limit = p.distribution, int(p.limit)
    return s


def netem_table(p: NetemParams) -> list[int]:
    """The distribution table a line with these parameters draws from
    (delayline.DelayLine.set builds one only where a jitter draws from it)."""
    if p.jitter_ms and p.distribution != "uniform":
        return list(delayline.table(p.distribution))
    return []


# --- frames <-> descriptors -----------------------------------------------------

def from_frame(frame: bytes) -> E.Pkt | str:
    """The descriptor of a frame as the twin's parser reads it
    (pipeline.parse), or the drop reason of one a descriptor
    cannot carry (truncated, not IPv4, IPv4 options or another version).
    A fragment or another protocol carries proto 0: the parser read no L4
    header.  TTL and routing are the compiled ingress's to judge."""
    n = len(frame)
    head = parse(frame, n)
    if type(head) is str:
        return head
    udp, tcp = head
    proto = 17 if udp else 6 if tcp else 0
    ttl = frame[22]
    pkt = E.Pkt()
    pkt.src_ip = int.from_bytes(frame[26:30], "big")
    pkt.dst_ip = int.from_bytes(frame[30:34], "big")
    pkt.proto, pkt.tos, pkt.ttl, pkt.len = proto, frame[15], ttl, n
    pkt.ip_flags = frame[20] >> 5
    if proto:
        pkt.sport = int.from_bytes(frame[34:36], "big")
        pkt.dport = int.from_bytes(frame[36:38], "big")
    return pkt


def to_frame(frame: bytes, dst_mac: int, pkt: E.Pkt) -> bytes:
    """The deparser: `frame` as the pipeline sends it with `pkt`'s TTL,
    ECN and IPv4 flags (pipeline.Pipeline.ingress's MAC rewrite, egress's
    checksum)."""
    buf = bytearray(frame)
    buf[6:12] = frame[0:6]
    buf[0:6] = dst_mac.to_bytes(6, "big")
    buf[15] = pkt.tos
    buf[20] = (pkt.ip_flags << 5) | (frame[20] & 0x1F)
    buf[22] = pkt.ttl
    buf[24:26] = ipv4_checksum(buf, 14).to_bytes(2, "big")
    return bytes(buf)


def ip(addr: str) -> int:
    return int(ipaddress.IPv4Address(addr))


# --- the control plane ------------------------------------------------------------

class CompiledPipeline:
    """pipeline.Pipeline's control-plane calls (SimpleSwitchThriftAPI's names
    and argument order) over a compiled Pipeline: entries parsed and kept by
    the twin's Table objects, then handed over as ints."""

    _table = Pipeline._table
    _index = Pipeline._index

    def __init__(self, compiled: E.Pipeline):
        self.compiled = compiled
        self.tables = {name: Table(spec) for name, spec in N.TABLES.items()}

    def table_add(self, table: str, action: str, match_keys: list, action_params: list, prio=None) -> int:
        t = self._table(table)
        handle = t.add(action, list(match_keys), list(action_params), prio)
        kind, *where = t.handles[handle]
        if kind == "exact":
            keys, entry = list(where[0]), t.exact[where[0]]
        elif kind == "lpm":
            plen, value = where
            keys, entry = [value, plen], t.lpm[plen][value]
        else:
            _, lo, hi, _, entry = next(r for r in t.ranges if r[3] == handle)
            keys = [lo, hi]
        self.compiled.table_add(table, entry.action, keys, list(entry.params), entry.prio)
        return handle

    def table_set_default(self, table: str, action: str, action_params: list | None = None) -> None:
        t = self._table(table)
        t.set_default(action, list(action_params or []))
        self.compiled.table_set_default(table, t.default.action, list(t.default.params))

    def table_clear(self, table: str) -> None:
        self._table(table).clear()
        self.compiled.table_clear(table)

    @staticmethod
    def _register_spec(name: str) -> N.Register:
        try:
            return N.REGISTERS[name]
        except (KeyError, TypeError):
            raise TwinError(f"unknown register {name!r} (has {', '.join(N.REGISTERS)})") from None

    def register_read(self, name: str, index=None):
        spec = self._register_spec(name)
        if index is None:
            return list(self.compiled.register_cells(name))
        return self.compiled.register_read(name, self._index(name, spec.size, index))

    def register_write(self, name: str, index, value) -> None:
        spec = self._register_spec(name)
        try:
            value = int(value)
        except (TypeError, ValueError):
            raise TwinError(f"{name}: value {value!r} is not an integer") from None
        if not 0 <= value < (1 << spec.width):
            raise TwinError(f"{name}: value {value} does not fit in {spec.width} bits")
        self.compiled.register_write(name, self._index(name, spec.size, index), value)

    def register_reset(self, name: str) -> None:
        self._register_spec(name)
        self.compiled.register_reset(name)

    def counter_read(self, name: str, index) -> CounterValue:
        if name not in N.COUNTERS:
            raise TwinError(f"unknown counter {name!r} (has {', '.join(N.COUNTERS)})")
        return CounterValue(*self.compiled.counter_read(name, self._index(name, N.COUNTERS[name].size, index)))

    @property
    def drops(self) -> dict[str, int]:
        return self.compiled.drops()

    def dump(self) -> dict:
        """pipeline.Pipeline.dump's shape."""
        cells = {n: self.compiled.counter_cells(n) for n in N.COUNTERS}
        return {
            "registers": {n: list(self.compiled.register_cells(n)) for n in N.REGISTERS},
            "counters": {n: {str(i): {"packets": p, "bytes": b} for i, (p, b) in enumerate(v) if p or b}
                         for n, v in cells.items()},
            "drops": self.drops,
            "tables": {n: t.entries() for n, t in self.tables.items()},
        }


class CompiledSwitch:
    """core.SwitchCore's settings, stats and dumps over a compiled SwitchCore
    (``core``: one a world made, or a new one).  The data path is the core's
    own (``self.core``)."""

    def __init__(self, name: str, ports: dict[int, str], queue_depth: int = DEFAULT_DEPTH, seed: int = 0,
                 core: E.SwitchCore | None = None):
        self.name = name
        self.seed = seed
        self.queue_depth = queue_depth
        self.ports = dict(ports)
        self.core = core if core is not None else E.SwitchCore(name, list(self.ports.items()), queue_depth,
                                                               init_key(seed))
        self.pipeline = CompiledPipeline(self.core.pipeline)
        self.netem: dict[str, dict[int, NetemParams]] = {d: {} for d in DIRECTIONS}   # what each line was set to
        self.warnings: list[str] = []

    # --- settings (core.SwitchCore's) ---------------------------------------------
    def set_queue_depth(self, depth: int, egress_port: int | None = None, priority=None) -> None:
        depth = int(depth)
        if depth < 1:
            raise ValueError(f"queue depth must be >= 1 packet, got {depth}")
        for p in self._ports_for(egress_port):
            self.core.set_queue_depth(p, depth)

    def set_queue_rate(self, pps: float | None, egress_port: int | None = None, priority=None) -> None:
        pps = EgressQueue._check_rate(pps, "packets/s")
        for p in self._ports_for(egress_port):
            self.core.set_queue_rate(p, pps)

    def set_queue_rate_bps(self, bps: float | None, egress_port: int | None = None, priority=None) -> None:
        bps = EgressQueue._check_rate(bps, "bits/s")
        for p in self._ports_for(egress_port):
            self.core.set_queue_rate_bps(p, bps)

    def set_ctrl_lane(self, on: bool, egress_port: int | None = None) -> None:
        for p in self._ports_for(egress_port):
            self.core.set_ctrl_lane(p, bool(on))

    def set_netem(self, params: dict | None = None, egress_port: int | None = None,
                  direction: str = "egress") -> None:
        if direction not in DIRECTIONS:
            raise ValueError(f"netem direction must be one of {', '.join(DIRECTIONS)}, got {direction!r}")
        p = NetemParams.from_dict(params or {})
        spec, table = netem_spec(p), netem_table(p)
        for port in self._ports_for(egress_port):
            if port in self.netem[direction] or p.active:
                key = init_key(f"{self.seed}:{self.name}:{port}:{direction}")
                self.core.set_netem(port, direction, spec, table, key)
                self.netem[direction][port] = p

    def reset_state(self) -> None:
        self.core.reset_state()
        self.pipeline = CompiledPipeline(self.core.pipeline)
        self.netem = {d: {} for d in DIRECTIONS}

    def _ports_for(self, egress_port) -> list[int]:
        # SimpleSwitchThriftAPI's convention: no port (or port 0) means every port
        if not egress_port:
            return list(self.ports)
        if int(egress_port) not in self.ports:
            raise ValueError(f"switch {self.name} has no port {egress_port}")
        return [int(egress_port)]

    # --- stats and dumps (core.SwitchCore's shapes) ----------------------------------
    def port_stats(self) -> dict:
        ports = {}
        for p, ifname in self.ports.items():
            q = self.core.queue(p)
            d = dict(self.core.port_counters(p), ifname=ifname, queue=len(q), depth=q.depth, pps=q.pps, bps=q.bps)
            if not q.unlimited:
                d["fidelity"] = EgressQueue.figures(_figures_view(q))
            for direction in DIRECTIONS:
                line = self.core.line(direction, p)
                if line is not None:
                    d[f"netem_{direction}"] = {**self.netem[direction][p].as_dict(), **line.stats, "held": len(line)}
            ports[str(p)] = d
        return {"name": self.name, "ports": ports, "pipeline_drops": self.pipeline.drops,
                "no_port_drops": self.core.no_port_drops, "warnings": list(self.warnings)}

    def dump(self) -> dict:
        d = self.pipeline.dump()
        d["stats"] = self.port_stats()
        return d


def _figures_view(q: E.EgressQueue) -> SimpleNamespace:
    """What queues.EgressQueue.figures reads, from a compiled queue, so the
    figures have one definition."""
    raw = q.lateness
    late = Lateness()
    late.counts, late.n, late.total, late.max = dict(raw["counts"]), raw["n"], raw["total"], raw["max"]
    return SimpleNamespace(service_s=q.service_s, lost_s=q.lost_s, bytes_out=q.bytes_out, late=late)


__all__ = ["CompiledPipeline", "CompiledSwitch", "from_frame", "init_key", "ip", "netem_spec", "netem_table",
           "to_frame"]
