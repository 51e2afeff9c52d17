"""The Symphony pipeline in Python: the software twin of p4/symphony.p4.

Pure: no sockets, no clocks.  The same tables, registers, counters, widths and
wrap-around as the P4 program (names from contract/p4names.py), driven by
the control-plane calls BMv2 takes (table_add, register_read, ...).  The
process around it (topologies/switch/twin/switch.py) adds ports and queues; the
conformance vectors (p4/tests/) and the property tests drive it directly.

Data path, as p4/include/control.p4:
  ingress: parse -> drop malformed / non-IPv4 / TTL <= 1 -> forward (LPM;
           ecmp_forward: the 5-tuple's bucket, contract.ecmp, -> ecmp_select) ->
           tagged UDP or TCP? symphony_flows on (src, dst, L4 dport) ->
           the entry's mode matches the protocol? -> pkts, flow_step
           (a new step within the flow's step window; a jump beyond it is
           counted in step_jumps and moves nothing), step_count (new steps
           only), frontier -> outpacing (never for a jump), in serial
           arithmetic on the mode's tag (14-bit UDP port, 6-bit DSCP)
  egress:  ECT packets only: queue_ecn (by enq_qdepth) OR Symphony
           (enabled, outpacing, the gate open, q >= K_sym, probability
           P_sym) -> CE; ahead_run counts per port the packets Symphony
           would mark in a row (the gate: open while below its size, or
           always when the size is 0); sym_verdict on: a tracked flow's
           packet carries this switch's candidacy in the reserved IPv4
           flag, and an untracked one carrying it is a candidate, its
           marks counted per port in verdict_marks;
           counters by cause; IPv4 checksum recomputed (as v1model's
           update_checksum does for every valid IPv4 header).
"""

from __future__ import annotations

import random
import struct
from collections import namedtuple
from dataclasses import dataclass

from contract import ecmp
from contract import p4names as N
from contract.tags import VERDICT_BYTE, VERDICT_MASK
from topologies.switch.twin.tables import Table, TwinError

CounterValue = namedtuple("CounterValue", "packets bytes")

ETH_LEN, IPV4_LEN, UDP_LEN, TCP_LEN = 14, 20, 8, 20
HEADERS = ETH_LEN + IPV4_LEN         # what the pipeline rewrites; the rest passes through
# ingress keeps its decision per header fields for frames this long (every
# length check of the parser passed: a TCP header's 54 bytes), at most this many
DECIDED_LEN = ETH_LEN + IPV4_LEN + TCP_LEN
DECIDED_MAX = 1 << 16
QDEPTH_MAX = (1 << N.QDEPTH_BITS) - 1

_HDR10 = struct.Struct("!10H")
# per mode (tcp 0 or 1): the tag's mask and half range, and the step window
_MASK = (N.tag_mask(False), N.tag_mask(True))
_HALF = (N.tag_half(False), N.tag_half(True))
_WINDOW = (N.step_window(False), N.step_window(True))


def after(a: int, b: int, tcp: bool | int = False) -> bool:
    """Serial-number 'a is after b' on the mode's tag (P4's SYM_AFTER,
    SYM_AFTER_DSCP when tcp)."""
    d = (a - b) & _MASK[tcp]
    return d != 0 and d < _HALF[tcp]


def step_move(step: int, newest: int, tcp: bool | int = False) -> str:
    """What a tracked packet's tag is to its flow's newest step (P4's
    SYM_NEW / SYM_JUMP, and their _DSCP forms when tcp): "new" when 1..window
    after it, "jump" when more than the window away either way, else "old"."""
    mask, window = _MASK[tcp], _WINDOW[tcp]
    d = (step - newest) & mask
    if 0 < d <= window:
        return "new"
    return "jump" if window < d < mask + 1 - window else "old"


def ipv4_checksum(hdr: bytes | bytearray, offset: int = 0) -> int:
    """Internet checksum of the 20-byte IPv4 header at `offset`, as if its
    checksum field were zero."""
    words = _HDR10.unpack_from(hdr, offset)
    s = sum(words) - words[5]
    s = (s & 0xFFFF) + (s >> 16)
    s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def parse(frame: bytes, n: int) -> str | tuple[bool, bool]:
    """The P4 parser on a frame's first n bytes: a drop reason
    (parser_error, not_ipv4; bad_ipv4 or ttl for an IPv4 header other than
    a version 4 of 20 bytes, as ingress names them), or whether a UDP and
    a TCP header were parsed (a fragment or another protocol has neither).
    The twin's ingress and the compiled engine's frame reader
    (experiments/sim/compiled_switch.from_frame) share it."""
    if n < ETH_LEN:
        return "parser_error"
    if frame[12] != 0x08 or frame[13] != 0x00:
        return "not_ipv4"
    if n < ETH_LEN + IPV4_LEN:
        return "parser_error"
    vihl = frame[14]
    version, ihl = vihl >> 4, vihl & 0xF
    frag = ((frame[20] & 0x1F) << 8) | frame[21]
    proto = frame[23]
    udp = tcp = False
    if version == 4 and ihl == 5 and frag == 0:
        if proto == 17:
            if n < ETH_LEN + IPV4_LEN + UDP_LEN:
                return "parser_error"
            udp = True
        elif proto == 6:
            if n < ETH_LEN + IPV4_LEN + TCP_LEN:
                return "parser_error"
            tcp = True
    if version != 4 or ihl != 5:
        return "bad_ipv4" if frame[22] > 1 else "ttl"
    return udp, tcp


@dataclass(slots=True)
class Packet:
    """One packet between ingress and egress: the headers the pipeline may
    change (Ethernet and IPv4: MACs, TTL, ECN, checksum), the frame it came
    in (the rest goes out as it came: one copy of a large frame, not two),
    its length and its metadata."""
    frame: bytearray
    in_port: int
    whole: bytes = b""
    length: int = 0
    egress_port: int | None = None
    drop: str | None = None          # why ingress dropped it (None: forwarded)
    tracked: bool = False
    flow_id: int = 0
    job_slot: int = 0
    enabled: int = 0
    tcp: int = 0                     # the flow's mode (track()'s tcp)
    step: int = 0
    jump: bool = False               # beyond the flow's step window (step_move)
    complete: bool = False
    frontier: int = 0
    outpacing: bool = False
    qdepth: int = 0
    queue_mark: bool = False
    sym_mark: bool = False


class Pipeline:
    def __init__(self, seed: int = 0):
        self.rng = random.Random(seed)
        self.tables = {name: Table(spec) for name, spec in N.TABLES.items()}
        self.registers = {name: [0] * r.size for name, r in N.REGISTERS.items()}
        self.counters = {name: [[0, 0] for _ in range(c.size)] for name, c in N.COUNTERS.items()}
        self.drops: dict[str, int] = {}
        self._forward = self.tables[N.FORWARD]
        self._ecmp = self.tables[N.ECMP_SELECT]
        self._flows = self.tables[N.SYMPHONY_FLOWS]
        self._queue_ecn = self.tables[N.QUEUE_ECN]
        self._sym_ecn = self.tables[N.SYM_ECN]
        self._sym_verdict = self.tables[N.SYM_VERDICT]
        self._decided: dict[bytes, str | tuple] = {}      # ingress's decisions (ingress)
        self._flow_step = self.registers[N.FLOW_STEP]
        self._step_count = self.registers[N.STEP_COUNT]
        self._frontier = self.registers[N.FRONTIER]
        self._ahead_run = self.registers[N.AHEAD_RUN]

    # --- control plane (SimpleSwitchThriftAPI's names and argument order) ---
    def _table(self, name: str) -> Table:
        try:
            return self.tables[name]
        except KeyError:
            raise TwinError(f"unknown table {name!r} (has {', '.join(self.tables)})") from None

    def table_add(self, table: str, action: str, match_keys: list, action_params: list, prio=None) -> int:
        self._decided.clear()
        return self._table(table).add(action, list(match_keys), list(action_params), prio)

    def table_set_default(self, table: str, action: str, action_params: list | None = None) -> None:
        self._decided.clear()
        self._table(table).set_default(action, list(action_params or []))

    def table_clear(self, table: str) -> None:
        self._decided.clear()
        self._table(table).clear()

    def _register(self, name: str) -> list[int]:
        try:
            return self.registers[name]
        except KeyError:
            raise TwinError(f"unknown register {name!r} (has {', '.join(self.registers)})") from None

    def _index(self, name: str, size: int, index) -> int:
        try:
            index = int(index)
        except (TypeError, ValueError):
            raise TwinError(f"{name}: index {index!r} is not an integer") from None
        if not 0 <= index < size:
            raise TwinError(f"{name}: index {index} out of range 0..{size - 1}")
        return index

    def register_read(self, name: str, index=None):
        reg = self._register(name)
        if index is None:
            return list(reg)
        return reg[self._index(name, len(reg), index)]

    def register_write(self, name: str, index, value) -> None:
        reg = self._register(name)
        width = N.REGISTERS[name].width
        try:
            value = int(value)
        except (TypeError, ValueError):
            raise TwinError(f"{name}: value {value!r} is not an integer") from None
        if not 0 <= value < (1 << width):
            raise TwinError(f"{name}: value {value} does not fit in {width} bits")
        reg[self._index(name, len(reg), index)] = value

    def register_reset(self, name: str) -> None:
        reg = self._register(name)
        reg[:] = [0] * len(reg)

    def _counter(self, name: str) -> list:
        try:
            return self.counters[name]
        except KeyError:
            raise TwinError(f"unknown counter {name!r} (has {', '.join(self.counters)})") from None

    def counter_read(self, name: str, index) -> CounterValue:
        c = self._counter(name)
        return CounterValue(*c[self._index(name, len(c), index)])

    def dump(self) -> dict:
        """Every register and every non-zero counter cell (switches/<name>.json)."""
        return {
            "registers": {n: list(v) for n, v in self.registers.items()},
            "counters": {n: {str(i): {"packets": p, "bytes": b} for i, (p, b) in enumerate(v) if p or b}
                         for n, v in self.counters.items()},
            "drops": dict(self.drops),
            "tables": {n: t.entries() for n, t in self.tables.items()},
        }

    # --- data path ----------------------------------------------------------
    def _drop(self, pkt: Packet, reason: str) -> Packet:
        pkt.drop = reason
        self.drops[reason] = self.drops.get(reason, 0) + 1
        return pkt

    def ingress(self, in_port: int, frame: bytes) -> Packet:
        """Parser + ingress.  Never raises on packet bytes: anything the P4
        parser would reject (a truncated header) is dropped and counted.

        What the parser and the tables decide depends on a few header fields
        only (``_decide``); the decision is kept per those fields until a
        table changes, so a flow's packets are parsed once per step, TTL
        and ECN codepoint.  The registers and counters move per packet."""
        n = len(frame)
        pkt = Packet(bytearray(frame[:HEADERS]), in_port, whole=frame, length=n)
        if n >= DECIDED_LEN:
            key = b"".join((frame[12:16], frame[20:24], frame[26:38]))
            decision = self._decided.get(key)
            if decision is None:
                if len(self._decided) >= DECIDED_MAX:
                    self._decided.clear()
                decision = self._decided[key] = self._decide(frame, n)
        else:
            decision = self._decide(frame, n)
        if type(decision) is str:
            return self._drop(pkt, decision)
        port, dst_mac, flow, step = decision
        buf = pkt.frame
        buf[6:12] = buf[0:6]
        buf[0:6] = dst_mac
        buf[22] -= 1
        pkt.egress_port = port
        if flow is not None:
            self._track(pkt, flow, step, n)
        return pkt

    def _decide(self, frame: bytes, n: int) -> str | tuple:
        """The parser's and the tables' decision on a frame: a drop reason,
        or (egress port, destination MAC, the symphony_flows entry's
        parameters or None, the step tag).  Reads only the Ethernet type,
        the IPv4 version, IHL, TOS, fragment offset, TTL, protocol and
        addresses, and the L4 ports (what ``ingress`` keys its decisions by)."""
        head = parse(frame, n)
        if type(head) is str:
            return head
        udp, tcp = head
        ttl = frame[22]
        if ttl <= 1:
            return "ttl"
        dst = int.from_bytes(frame[30:34], "big")
        entry = self._forward.lookup_lpm(dst)
        if entry is None or entry.action not in ("ipv4_forward", "ecmp_forward"):
            return "no_route"
        if entry.action == "ecmp_forward":
            dst_mac, group, sport_mask = entry.params
            port = self._ecmp_port(frame, udp or tcp, group, sport_mask)
            if port is None:
                return "no_route"
        else:
            dst_mac, port = entry.params
        # candidates: tagged UDP (top two bits of the source port) or TCP
        # (tag in the DSCP); both have the destination port at bytes 36-37
        flow, step = None, 0
        if (udp and frame[34] >= 0xC0) or tcp:
            src = int.from_bytes(frame[26:30], "big")
            dport = (frame[36] << 8) | frame[37]             # meta.l4_dport
            entry = self._flows.exact.get((src, dst, dport))
            if entry is not None and entry.action == "track" and entry.params[5] == int(tcp):
                flow = entry.params
                step = frame[15] >> 2 if tcp else ((frame[34] << 8) | frame[35]) & N.TAG_MASK
        return port, dst_mac.to_bytes(6, "big"), flow, step

    def _ecmp_port(self, frame: bytes, l4: bool, group: int, sport_mask: int) -> int | None:
        """EcmpHash then ecmp_select: the bucket of the 5-tuple (protocol
        and ports 0 where the parser read no L4 header, as the parser's
        meta.l4_* hold them: contract.ecmp), its entry's port; None on a
        miss (the table's default drops)."""
        proto, sport, dport = ((frame[23], (frame[34] << 8) | frame[35], (frame[36] << 8) | frame[37]) if l4
                               else (0, 0, 0))
        b = ecmp.bucket(int.from_bytes(frame[26:30], "big"), int.from_bytes(frame[30:34], "big"), proto,
                        sport, dport, sport_mask)
        entry = self._ecmp.exact.get((group, b))
        return entry.params[0] if entry is not None and entry.action == "ecmp_port" else None

    def _track(self, pkt: Packet, params: tuple, step: int, length: int) -> None:
        flow_id, job_slot, n_local, threshold, enabled, tcp = params
        pkt.tracked, pkt.flow_id, pkt.job_slot, pkt.enabled, pkt.step = True, flow_id, job_slot, enabled, step
        pkt.tcp = tcp
        n_local_m1 = (n_local - 1) & 0xFF                       # bit<8> arithmetic, as in track()
        if flow_id >= N.MAX_FLOWS or job_slot >= N.MAX_JOBS:
            # BMv2 ignores out-of-range register accesses; the control plane
            # never installs such ids (symphony_state checks them)
            pkt.tracked = False
            return
        cell = self.counters[N.PKTS][flow_id]
        cell[0] += 1
        cell[1] += length
        move = step_move(step, self._flow_step[flow_id], tcp)   # FlowStepUpdate
        if move == "jump":
            self._count(N.STEP_JUMPS, flow_id, length)
            pkt.jump = True
        elif move == "new":
            self._flow_step[flow_id] = step
            slot = N.step_slot(job_slot, step)                   # StepCountUpdate
            count = self._step_count[slot]
            if count >= n_local_m1:
                self._step_count[slot] = 0
                pkt.complete = True
            else:
                self._step_count[slot] = (count + 1) & 0xFFFF
        current = self._frontier[job_slot]                       # FrontierUpdate
        if pkt.complete and after(step, current, tcp):
            current = self._frontier[job_slot] = step
        pkt.frontier = current
        ahead = (step - current) & _MASK[tcp]
        pkt.outpacing = ahead < _HALF[tcp] and ahead > threshold and not pkt.jump

    def egress(self, pkt: Packet, qdepth: int) -> bytes:
        """Egress with the queue depth the packet saw at enqueue (packets),
        then the deparser's checksum.  Returns the frame to send."""
        qdepth = min(max(int(qdepth), 0), QDEPTH_MAX)
        pkt.qdepth = qdepth
        buf = pkt.frame
        ecn = buf[15] & 3
        if ecn == 1 or ecn == 2:
            r_queue = self.rng.getrandbits(16)
            r_sym = self.rng.getrandbits(16)
            entry = self._queue_ecn.lookup_range(qdepth)
            q_prob = entry.params[0] if entry is not None and entry.action == "queue_mark_prob" else 0
            k_sym, p_sym, gate = self._sym_ecn.default.params
            pkt.queue_mark = r_queue < q_prob
            candidate = self._verdict(buf, pkt, pkt.tracked and pkt.enabled == 1 and pkt.outpacing)
            run = self._run_ahead(pkt.egress_port, candidate)
            pkt.sym_mark = (candidate and (gate == 0 or run < gate)
                            and qdepth >= k_sym and r_sym < p_sym)
            n = pkt.length
            if pkt.queue_mark or pkt.sym_mark:
                buf[15] |= 3
            if pkt.queue_mark:
                self._count(N.QUEUE_MARKS, pkt.egress_port, n)
                if pkt.tracked:
                    self._count(N.FLOW_QUEUE_MARKS, pkt.flow_id, n)
            if pkt.sym_mark:
                if pkt.tracked:
                    self._count(N.SYM_MARKS, pkt.flow_id, n)
                else:
                    self._count(N.VERDICT_MARKS, pkt.egress_port, n)
        buf[24:26] = ipv4_checksum(buf, 14).to_bytes(2, "big")
        return b"".join((buf, memoryview(pkt.whole)[HEADERS:]))

    def _verdict(self, buf: bytearray, pkt: Packet, own: bool) -> bool:
        """sym_verdict: off, the switch's own candidacy; on, a tracked
        packet's goes onward in the reserved IPv4 flag, and an untracked
        packet is a candidate when that flag says an earlier switch's was."""
        if not self._sym_verdict.default.params[0]:
            return own
        if pkt.tracked:
            buf[VERDICT_BYTE] = (buf[VERDICT_BYTE] | VERDICT_MASK) if own else (buf[VERDICT_BYTE] & ~VERDICT_MASK)
            return own
        return bool(buf[VERDICT_BYTE] & VERDICT_MASK)

    def _run_ahead(self, port: int, ahead: bool) -> int:
        """AheadRunUpdate: the port's run of packets ahead before this one;
        a packet ahead lengthens it (saturating), any other resets it.  The
        port is ipv4_forward's 9-bit parameter, so always below NUM_PORTS."""
        run = self._ahead_run[port]
        if not ahead:
            self._ahead_run[port] = 0
        elif run != N.RUN_MAX:
            self._ahead_run[port] = run + 1
        return run

    def _count(self, name: str, index: int, length: int) -> None:
        cells = self.counters[name]
        if 0 <= index < len(cells):
            cells[index][0] += 1
            cells[index][1] += length

    def process(self, in_port: int, frame: bytes, qdepth: int = 0) -> tuple[int | None, bytes | None, Packet]:
        """Ingress then egress with a given enq_qdepth: (port, frame, metadata);
        port and frame None when dropped."""
        pkt = self.ingress(in_port, frame)
        if pkt.drop is not None:
            return None, None, pkt
        return pkt.egress_port, self.egress(pkt, qdepth), pkt


__all__ = ["Pipeline", "Packet", "CounterValue", "TwinError", "after", "ipv4_checksum", "parse", "step_move"]
