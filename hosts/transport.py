"""Reliable, paced UDP transport for one rank of a ring: it sends each step's
chunk to its successor and receives each step's chunk from its predecessor.

Two layers:

- `Endpoint`: the protocol engine, pure (no sockets, no clock reads: `now` is
  passed in), so it runs on a virtual clock in the unit tests.  Sender side:
  packets of `payload_bytes`, a window, pacing at the rate controller's
  `rate_bps`, retransmission on timeout (adaptive RTO, exponential back-off)
  and on gaps (a packet sent DUPTHRESH transmissions after it was acked first).
  Receiver side: buffers any step inside its window, acks cumulatively with a
  64-packet SACK bitmap (at once on reordering, duplicates and completion, else
  every `ack_every` packets or after `ack_delay_ms`), calls the notification
  point for every data packet and sends a CNP when it says so.
- `UdpTransport`: the sockets.  Data leaves from a socket bound to
  tag_port(step) (SO_REUSEADDR, so two jobs on one host share the tags) with
  ECT(0) in the TOS byte; the receiver reads the TOS byte of every data packet
  with IP_RECVTOS; ACKs and CNPs go to the sender's control port.

The agent talks to a transport through `open / send(step, payload) /
wait(step, deadline) / linger(idle_s, deadline) / close / counters`, so a TCP
transport can sit beside this one (TRANSPORTS maps the job's name to a class).
"""

from __future__ import annotations

import heapq
import math
import random
import select
import socket
import time
from collections import defaultdict, deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from contract import tags
from contract.tags import TAG_MASK, control_port, port_tag, tag_port
from hosts import wire
from hosts.dcqcn import FixedRate, NotificationPoint
from hosts.wire import ACK_COMPLETE, ACK_ECHO, DATA, MAGIC, T_DATA, VERSION, WireError

# Bytes a data packet adds on an Ethernet link besides its payload (Ethernet,
# IPv4, UDP and our header): pacing counts what the link (and tc htb) counts.
WIRE_OVERHEAD = 14 + 20 + 8 + DATA.size
DUPTHRESH = 3            # gap rule: lost when a packet sent 3 transmissions later was acked
ECHO_MASK = 0xFFFF       # a data packet carries its transmission number's low 16 bits
MIN_PTO_S = 0.002        # tail probe: never sooner than this after the last transmission
SACK_MASK = (1 << wire.SACK_BITS) - 1
IPTOS_ECT0 = tags.ECN_ECT0
SO_RCVBUFFORCE = getattr(socket, "SO_RCVBUFFORCE", 33)
RCVBUF_BYTES = 4 << 20
SO_SNDBUFFORCE = getattr(socket, "SO_SNDBUFFORCE", 32)
SNDBUF_BYTES = 1 << 20


@dataclass(frozen=True)
class UdpParams:
    """The job file's [udp] table.  rto_ms is the initial and minimum RTO; the
    RTO adapts to the measured RTT above it."""
    payload_bytes: int = 1400
    rto_ms: float = 50.0
    window_packets: int = 64
    ack_every: int = 8
    ack_delay_ms: float = 2.0
    burst_packets: int = 8
    rto_max_ms: float = 1000.0

    def __post_init__(self):
        _check(self.payload_bytes, "payload_bytes", int, 4, 65507 - DATA.size)
        _check(self.rto_ms, "rto_ms", (int, float), 1, 60000)
        _check(self.window_packets, "window_packets", int, 1, wire.SACK_BITS)
        _check(self.ack_every, "ack_every", int, 1, 1024)
        _check(self.ack_delay_ms, "ack_delay_ms", (int, float), 0, 10000)
        _check(self.burst_packets, "burst_packets", int, 1, 1024)
        _check(self.rto_max_ms, "rto_max_ms", (int, float), self.rto_ms, 600000)


@dataclass(frozen=True)
class FaultParams:
    """Receive-side fault injection (the job file's [faults] table), for tests:
    probabilities per received packet."""
    drop: float = 0.0
    duplicate: float = 0.0
    reorder: float = 0.0
    seed: int = 0

    def __post_init__(self):
        for name in ("drop", "duplicate", "reorder"):
            _check(getattr(self, name), name, (int, float), 0.0, 0.5)
        _check(self.seed, "seed", int, 0, 2**63)

    @property
    def active(self) -> bool:
        return self.drop > 0 or self.duplicate > 0 or self.reorder > 0


def _check(value, name, types, lo, hi):
    if isinstance(value, bool) or not isinstance(value, types):
        raise ValueError(f"{name}: expected a number, got {value!r}")
    if not lo <= value <= hi:
        raise ValueError(f"{name}: {value} outside {lo}..{hi}")


class TransportTimeout(Exception):
    """A deadline passed; `info` says what the rank was waiting for."""

    def __init__(self, info: dict):
        super().__init__(info.get("what", "deadline"))
        self.info = info


# --- the protocol engine -------------------------------------------------------

class SendFlow:
    __slots__ = ("step", "payload", "total", "n", "acked", "n_acked", "cum", "next_new",
                 "txseq", "txtime", "retries", "queued", "rtx", "hi_seq", "last_seq",
                 "rtx_time", "probe_at", "probed", "progress_at", "done")

    def __init__(self, step: int, payload, psize: int):
        self.step = step
        self.payload = memoryview(payload).cast("B")
        self.total = len(self.payload)
        self.n = max(1, -(-self.total // psize))
        self.acked = bytearray(self.n)
        self.n_acked = 0
        self.cum = 0                 # packets [0, cum) are acked
        self.next_new = 0            # first packet never sent
        self.txseq = [0] * self.n    # transmission number of the last send
        self.txtime = [0.0] * self.n
        self.retries = [0] * self.n
        self.queued = bytearray(self.n)
        self.rtx: deque = deque()    # (index, why)
        self.hi_seq = 0              # newest transmission number known to have arrived
        self.last_seq = 0            # newest transmission number of this flow
        self.rtx_time: dict = {}     # transmission number of a retransmission -> time sent
        self.probe_at = math.inf     # tail loss probe due (all packets sent, some unacked)
        self.probed = False          # a probe went out since the last ACK of new data
        self.progress_at = -math.inf # time of the last ACK of new data
        self.done = False


class RecvFlow:
    __slots__ = ("step", "total", "n", "buf", "got", "mask", "n_got", "cum", "pending", "ack_due",
                 "echo")

    def __init__(self, step: int, total: int, psize: int):
        self.step = step
        self.total = total
        self.n = max(1, -(-total // psize))
        self.buf = bytearray(total)
        self.got = bytearray(self.n)
        self.mask = 0                # bit i: packet i received (for the SACK bitmap)
        self.n_got = 0
        self.cum = 0
        self.pending = 0             # packets not yet acknowledged
        self.ack_due = math.inf
        self.echo = -1               # flags (transmission number) of the newest data packet

    @property
    def complete(self) -> bool:
        return self.n_got == self.n


class Endpoint:
    """One rank's end of its two ring flows: sender to the successor, receiver
    from the predecessor.  `out` has data(step, header, payload) and
    ctrl(packet) (to the predecessor's control port); `log(kind, step, **f)`
    writes events; `recv_len(step)` is the chunk size expected at a step, None
    for a step that is not part of the run."""

    def __init__(self, *, job: int, rank: int, pred: tuple[int, str], succ: tuple[int, str],
                 data_port: int, params: UdpParams, recv_len: Callable[[int], int | None],
                 out, log: Callable[..., None], rp=None, np_=None, max_ahead: int = 64):
        self.job, self.rank = job, rank
        self.pred_rank, self.pred_ip = pred
        self.succ_rank, self.succ_ip = succ
        self.flow_key = (self.pred_ip, data_port)
        self.p = params
        self.psize = params.payload_bytes
        self.recv_len = recv_len
        self.out = out
        self.log = log
        self.rp = rp if rp is not None else FixedRate(None)
        self.np = np_ if np_ is not None else NotificationPoint(None)
        self.max_ahead = max_ahead
        self.counters: dict[str, int] = defaultdict(int)
        self.send_flows: dict[int, SendFlow] = {}
        self.recv_flows: dict[int, RecvFlow] = {}
        self.recv_low = 0            # lowest step not yet taken by the ring
        self.cur_step = 0
        self.peer_heard = False      # any valid ACK from the successor yet
        self.last_data = -math.inf   # time of the last valid data packet
        self._timers: list = []      # (deadline, txseq, step, index)
        self._seq = 0
        self._next_tx = -math.inf
        self._srtt: float | None = None
        self._rttvar = 0.0
        self._rto = params.rto_ms / 1000.0   # from the RTT estimator, before back-off
        self._backoff = 0             # timeouts since the last ACK of new data
        self._last_rtt: float | None = None
        self._rto_hold = -math.inf    # no timeout retransmission before this time
        self._ack_delay = params.ack_delay_ms / 1000.0

    # ---- sender -------------------------------------------------------------
    def start_send(self, step: int, payload, now: float) -> None:
        if step in self.send_flows:
            raise ValueError(f"step {step} is already being sent")
        self.send_flows[step] = SendFlow(step, payload, self.psize)
        self.cur_step = step

    def send_done(self, step: int) -> bool:
        f = self.send_flows.get(step)
        return f is not None and f.done

    def finish_send(self, step: int) -> None:
        self.send_flows.pop(step, None)

    def _window(self) -> int:
        # until the successor has answered once, probe with one packet
        return self.p.window_packets if self.peer_heard else 1

    def _cur_rto(self) -> float:
        if not self.peer_heard:
            return self.p.rto_ms / 1000.0
        return min(self._rto * (1 << self._backoff), self.p.rto_max_ms / 1000.0)

    def _pto(self) -> float:
        # tail loss probe (RFC 8985 7.2, with the newest RTT sample instead of
        # SRTT: after a queue drained, SRTT stays high for many samples)
        rtt = self._last_rtt if self._last_rtt is not None else self._rto
        return min(max(2 * rtt + self._ack_delay, MIN_PTO_S), self._cur_rto())

    def _arm_probe(self, flow: SendFlow, now: float) -> None:
        if flow.done or flow.probed or flow.next_new < flow.n or not self.peer_heard:
            flow.probe_at = math.inf
        else:
            flow.probe_at = now + self._pto()

    def _pick(self):
        win = self._window()
        for flow in self.send_flows.values():
            if flow.done:
                continue
            rtx = flow.rtx
            while rtx:
                idx, why = rtx.popleft()
                flow.queued[idx] = 0
                if not flow.acked[idx]:
                    return flow, idx, why
            if flow.next_new < flow.n and flow.next_new < flow.cum + win:
                idx = flow.next_new
                flow.next_new += 1
                return flow, idx, None
        return None

    def _sendable(self) -> bool:
        win = self._window()
        for flow in self.send_flows.values():
            if not flow.done and (flow.rtx or (flow.next_new < flow.n
                                               and flow.next_new < flow.cum + win)):
                return True
        return False

    def _transmit(self, flow: SendFlow, idx: int, why: str | None, now: float) -> int:
        off = idx * self.psize
        length = min(self.psize, flow.total - off)
        self._seq += 1
        hdr = DATA.pack(MAGIC, VERSION, T_DATA, self.job, self.rank, flow.step, off, length,
                        self._seq & ECHO_MASK)
        self.out.data(flow.step, hdr, flow.payload[off:off + length])
        flow.txseq[idx] = self._seq
        flow.last_seq = self._seq
        flow.txtime[idx] = now
        if why is not None:
            flow.rtx_time[self._seq] = now
        heapq.heappush(self._timers, (now + self._cur_rto(), self._seq, flow.step, idx))
        self._arm_probe(flow, now)
        c = self.counters
        c["tx_data"] += 1
        if why is not None:
            c["retransmit_" + why] += 1
            self.log("retransmit", flow.step, offset=off, length=length, why=why)
        return length + WIRE_OVERHEAD

    def poll_tx(self, now: float) -> None:
        """Send what the window and the pacing rate allow now."""
        rate = self.rp.rate_bps
        while True:
            if rate and now < self._next_tx:
                return
            pick = self._pick()
            if pick is None:
                return
            nbytes = self._transmit(*pick, now)
            if self.rp.on_bytes_sent(nbytes, now):
                self._log_rate()
            if rate:
                gap = nbytes * 8.0 / rate
                self._next_tx = max(self._next_tx, now - self.p.burst_packets * gap) + gap

    def _queue(self, flow: SendFlow, idx: int, why: str) -> None:
        flow.queued[idx] = 1
        flow.rtx.append((idx, why))

    def fire_timers(self, now: float) -> None:
        timers = self._timers
        while timers and timers[0][0] <= now:
            _, seq, step, idx = heapq.heappop(timers)
            flow = self.send_flows.get(step)
            if flow is None or flow.done or flow.acked[idx] or flow.queued[idx] \
                    or flow.txseq[idx] != seq:
                continue
            # the deadline with the RTO of now, counted from the later of the
            # send and the flow's last ACK of new data (RFC 6298 5.3): while
            # a queue builds, the RTO grows after a packet was sent and ACKs
            # keep coming; the RTO of its send time would resend it needlessly
            due = max(flow.txtime[idx], flow.progress_at) + self._cur_rto()
            if now < due:
                heapq.heappush(timers, (due, seq, step, idx))
                continue
            if now < self._rto_hold:
                # one timeout retransmission per RTO, or per ACK of new data
                # (RFC 6298 5.4-5.6): when the RTT only grew (a queue), the
                # others are acked meanwhile instead of all being resent
                heapq.heappush(timers, (self._rto_hold, seq, step, idx))
                continue
            flow.retries[idx] += 1
            self._queue(flow, idx, "timeout")
            if self.peer_heard and self._cur_rto() < self.p.rto_max_ms / 1000.0:
                self._backoff += 1
            self._rto_hold = now + self._cur_rto()
        for flow in self.send_flows.values():
            if flow.probe_at <= now:
                self._probe(flow)
        for rf in self.recv_flows.values():
            if rf.ack_due <= now:
                self._send_ack(rf)
        if self.rp.next_event_time() <= now and self.rp.advance(now):
            self._log_rate()

    def _probe(self, flow: SendFlow) -> None:
        """All packets sent, the newest unacked for a PTO: resend the highest
        unacked packet (one probe per ACK of new data), so that its ACK shows
        the holes below it, which the gap rule then resends at once; without
        it a tail loss waits for the RTO, one packet per RTO."""
        flow.probe_at = math.inf
        if flow.done or flow.rtx:
            return
        for i in range(flow.next_new - 1, flow.cum - 1, -1):
            if not flow.acked[i]:
                flow.probed = True
                flow.retries[i] += 1
                self._queue(flow, i, "probe")
                return

    def _mark(self, flow: SendFlow, i: int, now: float, sample: list) -> None:
        flow.acked[i] = 1
        flow.n_acked += 1
        seq = flow.txseq[i]
        # Karn: only packets sent once give an RTT sample and say which
        # transmission arrived (a retransmitted one's ACK may be the first
        # copy's: the echo in the ACK says which); keep the newest
        if flow.retries[i] == 0:
            if seq > flow.hi_seq:
                flow.hi_seq = seq
            if seq > sample[0]:
                sample[0] = seq
                sample[1] = now - flow.txtime[i]

    def on_ack(self, ack: wire.Ack, now: float) -> None:
        flow = self.send_flows.get(ack.step)
        if flow is None or flow.done:
            self.counters["stale_ack"] += 1
            return
        psize = self.psize
        if ack.flags & ACK_COMPLETE:
            upto, sack = flow.n, 0
        else:
            if ack.cum > flow.total or (ack.cum % psize and ack.cum != flow.total):
                self.counters["drop_bad_ack"] += 1
                return
            upto, sack = -(-ack.cum // psize), ack.sack
        self.counters["rx_ack"] += 1
        self.peer_heard = True
        sample = [0, 0.0]
        echo_sample = None
        if ack.flags & ACK_ECHO:
            # the newest transmission the receiver has seen of this step; a
            # retransmission's gives an RTT sample Karn's rule cannot
            echoed = self._seq - ((self._seq - ack.echo) & ECHO_MASK)
            if flow.hi_seq < echoed <= flow.last_seq:
                flow.hi_seq = echoed
            sent = flow.rtx_time.pop(echoed, None)
            if sent is not None:
                echo_sample = (echoed, now - sent)
        acked = flow.acked
        n_before = flow.n_acked
        for i in range(flow.cum, upto):
            if not acked[i]:
                self._mark(flow, i, now, sample)
        base = upto + 1
        while sack:
            low = sack & -sack
            i = base + low.bit_length() - 1
            if i >= flow.n:
                break
            if not acked[i]:
                self._mark(flow, i, now, sample)
            sack ^= low
        cum = max(flow.cum, upto)
        while cum < flow.n and acked[cum]:
            cum += 1
        flow.cum = cum
        if echo_sample is not None and echo_sample[0] > sample[0]:
            sample = echo_sample
        if sample[0]:
            self._rtt_sample(sample[1])
        if flow.n_acked > n_before:
            self._rto_hold = now
            flow.probed = False
            flow.progress_at = now
        if flow.n_acked == flow.n:
            flow.done = True
            flow.rtx.clear()
            flow.probe_at = math.inf
            return
        # gap rule, on every ACK (a cumulative one too: after a retransmission
        # arrived, all packets sent before it and still unacked are lost):
        # lost when DUPTHRESH later transmissions arrived, or when the newest
        # transmission arrived (nothing sent later is left to say more)
        hi = flow.hi_seq
        tail = hi >= flow.last_seq
        txseq = flow.txseq
        for i in range(cum, flow.next_new):
            if not acked[i] and not flow.queued[i]:
                d = hi - txseq[i]
                if d >= DUPTHRESH or (tail and d > 0):
                    self._queue(flow, i, "gap")
        if flow.n_acked > n_before:
            self._arm_probe(flow, now)

    def _rtt_sample(self, rtt: float) -> None:
        # RFC 6298 estimator; rto_ms is the floor
        if self._srtt is None:
            self._srtt, self._rttvar = rtt, rtt / 2
        else:
            self._rttvar = 0.75 * self._rttvar + 0.25 * abs(self._srtt - rtt)
            self._srtt = 0.875 * self._srtt + 0.125 * rtt
        self._rto = min(max(self.p.rto_ms / 1000.0, self._srtt + 4 * self._rttvar),
                        self.p.rto_max_ms / 1000.0)
        self._last_rtt = rtt
        self._backoff = 0            # RFC 6298 5.7: a valid RTT sample ends the back-off

    def on_cnp(self, cnp: wire.Cnp, now: float) -> None:
        self.counters["rx_cnp"] += 1
        self.log("cnp", cnp.step, dir="rx", peer=self.succ_rank)
        if self.rp.on_cnp(now):
            self._log_rate()

    def _log_rate(self) -> None:
        rp = self.rp
        self.log("rate", self.cur_step, rc=rp.rate_bps, rt=getattr(rp, "target_bps", rp.rate_bps),
                 alpha=getattr(rp, "alpha", 0.0))

    # ---- receiver -----------------------------------------------------------
    def recv_done(self, step: int) -> bool:
        f = self.recv_flows.get(step)
        return f is not None and f.complete

    def take(self, step: int) -> bytearray:
        """Hand a complete step's bytes to the ring; steps are taken in order."""
        if step != self.recv_low:
            raise ValueError(f"take({step}) out of order: next is {self.recv_low}")
        flow = self.recv_flows.pop(step)
        if not flow.complete:
            raise ValueError(f"step {step} is not complete")
        self.recv_low = step + 1
        return flow.buf

    def _send_ack(self, flow: RecvFlow) -> None:
        cum_bytes = min(flow.cum * self.psize, flow.total)
        sack = (flow.mask >> (flow.cum + 1)) & SACK_MASK
        flags = ACK_COMPLETE if flow.complete else 0
        echo = 0
        if flow.echo >= 0:
            flags |= ACK_ECHO
            echo = flow.echo
        self.out.ctrl(wire.pack_ack(self.job, self.rank, flow.step, cum_bytes, sack, flags, echo))
        self.counters["tx_ack"] += 1
        flow.pending = 0
        flow.ack_due = math.inf

    def on_data(self, pkt: wire.Data, payload, src_ip: str, src_port: int, tos: int,
                now: float) -> None:
        c = self.counters
        if pkt.job != self.job:
            c["drop_job"] += 1
            return
        if src_ip != self.pred_ip or pkt.rank != self.pred_rank:
            c["drop_peer"] += 1
            return
        step = pkt.step
        if port_tag(src_port) != step & TAG_MASK:
            c["drop_tag"] += 1
            return
        if step < self.recv_low:
            # taken already: the sender missed our last ACK
            c["rx_data"] += 1
            c["dup_data"] += 1
            self.last_data = now
            self.out.ctrl(wire.pack_ack(self.job, self.rank, step, 0, 0, ACK_COMPLETE))
            c["tx_ack"] += 1
            return
        flow = self.recv_flows.get(step)
        if flow is None:
            total = self.recv_len(step) if step < self.recv_low + self.max_ahead else None
            if total is None:
                c["drop_step"] += 1
                return
            flow = self.recv_flows[step] = RecvFlow(step, total, self.psize)
        off, length = pkt.offset, pkt.length
        psize = self.psize
        if off % psize or off >= flow.total or length != min(psize, flow.total - off):
            c["drop_offset"] += 1
            return
        c["rx_data"] += 1
        self.last_data = now
        flow.echo = pkt.flags
        ce = (tos & 3) == tags.ECN_CE
        if ce:
            c["rx_ce"] += 1
        if self.np.on_data(self.flow_key, ce, now):
            self.out.ctrl(wire.pack_cnp(self.job, self.rank, step))
            c["tx_cnp"] += 1
            self.log("cnp", step, dir="tx", peer=self.pred_rank)
        idx = off // psize
        if flow.got[idx]:
            c["dup_data"] += 1
            self._send_ack(flow)
            return
        flow.buf[off:off + length] = payload
        flow.got[idx] = 1
        flow.mask |= 1 << idx
        flow.n_got += 1
        in_order = idx == flow.cum
        if in_order:
            cum, got, n = flow.cum + 1, flow.got, flow.n
            while cum < n and got[cum]:
                cum += 1
            flow.cum = cum
        flow.pending += 1
        if not in_order or flow.n_got == flow.n or flow.pending >= self.p.ack_every:
            self._send_ack(flow)
        elif flow.ack_due == math.inf:
            flow.ack_due = now + self._ack_delay

    # ---- packets from the sockets --------------------------------------------
    def on_data_packet(self, buf, nbytes: int, src_ip: str, src_port: int, tos: int,
                       now: float) -> None:
        """Whatever arrives at the data port: parsed, checked, counted; never raises."""
        try:
            pkt = wire.parse(buf, nbytes)
        except WireError as e:
            self.counters["drop_" + e.counter] += 1
            return
        if type(pkt) is not wire.Data:
            self.counters["drop_misdirected"] += 1
            return
        self.on_data(pkt, memoryview(buf)[DATA.size:DATA.size + pkt.length], src_ip, src_port,
                     tos, now)

    def on_ctrl_packet(self, buf, nbytes: int, src_ip: str, src_port: int, now: float) -> None:
        """Whatever arrives at the control port: ACKs and CNPs from the successor."""
        try:
            pkt = wire.parse(buf, nbytes)
        except WireError as e:
            self.counters["drop_" + e.counter] += 1
            return
        c = self.counters
        if type(pkt) is wire.Data:
            c["drop_misdirected"] += 1
        elif pkt.job != self.job:
            c["drop_job"] += 1
        elif src_ip != self.succ_ip or pkt.rank != self.succ_rank:
            c["drop_peer"] += 1
        elif type(pkt) is wire.Ack:
            self.on_ack(pkt, now)
        else:
            self.on_cnp(pkt, now)

    # ---- time ---------------------------------------------------------------
    def service(self, now: float) -> None:
        self.fire_timers(now)
        self.poll_tx(now)

    def next_wakeup(self, now: float) -> float:
        t = self._timers[0][0] if self._timers else math.inf
        for sf in self.send_flows.values():
            if sf.probe_at < t:
                t = sf.probe_at
        for rf in self.recv_flows.values():
            if rf.ack_due < t:
                t = rf.ack_due
        if self._sendable():
            t = min(t, self._next_tx if self.rp.rate_bps else now)
        return min(t, self.rp.next_event_time())

    def waiting_on(self, step: int) -> dict:
        """What an unfinished step still waits for (for the error event)."""
        rf = self.recv_flows.get(step)
        if rf is None or not rf.complete:
            got = f"{rf.n_got}/{rf.n} packets" if rf else "no packet"
            return {"waiting_for": "data", "peer": self.pred_rank, "peer_ip": self.pred_ip,
                    "step": step, "what": f"data of step {step} from rank {self.pred_rank} "
                                          f"({self.pred_ip}): {got} received"}
        sf = self.send_flows.get(step)
        acked = f"{sf.n_acked}/{sf.n} packets" if sf else "nothing sent"
        return {"waiting_for": "acks", "peer": self.succ_rank, "peer_ip": self.succ_ip,
                "step": step, "what": f"ACKs of step {step} from rank {self.succ_rank} "
                                      f"({self.succ_ip}): {acked} acknowledged"}


# --- receive-side fault injection ----------------------------------------------

class FaultInjector:
    """Drops, duplicates and reorders received packets (each item is a tuple the
    caller hands on unchanged).  A packet picked for reordering is held back and
    delivered after the next packet, or after HOLD_S if none comes."""

    HOLD_S = 0.005

    def __init__(self, params: FaultParams, counters: dict, salt: int = 0):
        self.p = params
        self.rng = random.Random(params.seed * 1000003 + salt)
        self.counters = counters
        self.held = None
        self.held_since = math.inf

    def feed(self, item, now: float) -> list:
        r = self.rng.random
        if r() < self.p.drop:
            self.counters["fault_drop"] += 1
            return []
        out = [item]
        if r() < self.p.duplicate:
            self.counters["fault_dup"] += 1
            out.append(item)
        if self.held is None and r() < self.p.reorder:
            self.counters["fault_reorder"] += 1
            self.held, self.held_since = out.pop(), now
            return out
        if self.held is not None:
            out.append(self.held)
            self.held, self.held_since = None, math.inf
        return out

    def release(self, now: float) -> list:
        if self.held is not None and now - self.held_since >= self.HOLD_S:
            item, self.held, self.held_since = self.held, None, math.inf
            return [item]
        return []

    def next_release(self) -> float:
        return self.held_since + self.HOLD_S


# --- sockets -------------------------------------------------------------------

class _Out:
    """Where the endpoint's packets leave: data from the step's tagged socket to
    the successor's data port, ACKs/CNPs from the data socket to the
    predecessor's control port.  A send that fails is a lost packet."""

    def __init__(self, tr: UdpTransport):
        self.tr = tr

    def data(self, step: int, hdr: bytes, payload) -> None:
        tr = self.tr
        try:
            tr.tag_socket(step).sendmsg([hdr, payload], (), 0, tr.succ_data_addr)
        except OSError:
            tr.ep.counters["send_errors"] += 1

    def ctrl(self, pkt: bytes) -> None:
        tr = self.tr
        try:
            tr.dsock.sendto(pkt, tr.pred_ctrl_addr)
        except OSError:
            tr.ep.counters["send_errors"] += 1


class UdpTransport:
    name = "udp"

    def __init__(self, *, job: int, rank: int, ips: list[str], data_port: int, params: UdpParams,
                 recv_len: Callable[[int], int | None], log: Callable[..., None],
                 rp=None, np_=None, faults: FaultParams | None = None):
        n = len(ips)
        self.ip = ips[rank]
        self.data_port = data_port
        pred, succ = (rank - 1) % n, (rank + 1) % n
        self.succ_data_addr = (ips[succ], data_port)
        self.pred_ctrl_addr = (ips[pred], control_port(data_port))
        self.ep = Endpoint(job=job, rank=rank, pred=(pred, ips[pred]), succ=(succ, ips[succ]),
                           data_port=data_port, params=params, recv_len=recv_len, out=_Out(self),
                           log=log, rp=rp, np_=np_, max_ahead=n + 1)
        self.faults = faults if faults is not None and faults.active else None
        self._inj: dict = {}
        self._tag_socks: dict[int, socket.socket] = {}
        self.dsock: socket.socket | None = None
        self.csock: socket.socket | None = None
        self._rx = bytearray(65536)
        self._rxmv = memoryview(self._rx)
        self._anc = socket.CMSG_SPACE(4)

    @property
    def counters(self) -> dict:
        return self.ep.counters

    # ---- sockets ------------------------------------------------------------
    def _udp(self, port: int, reuse: bool = False) -> socket.socket:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            if reuse:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind((self.ip, port))
            s.setblocking(False)
        except BaseException:
            s.close()
            raise
        return s

    def open(self) -> None:
        """Bind the data and control ports on this rank's address (OSError if
        the address is not on this host or a port is taken)."""
        self.dsock = self._udp(self.data_port)
        self.csock = self._udp(control_port(self.data_port))
        self.dsock.setsockopt(socket.IPPROTO_IP, socket.IP_RECVTOS, 1)
        for s in (self.dsock, self.csock):
            try:     # a deep buffer: up to 9 agents share 2 cores
                s.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, RCVBUF_BYTES)
            except OSError:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RCVBUF_BYTES)
        if self.faults:
            salt = 2 * self.ep.rank    # each rank and socket draws its own sequence
            self._inj = {"d": FaultInjector(self.faults, self.ep.counters, salt),
                         "c": FaultInjector(self.faults, self.ep.counters, salt + 1)}

    def tag_socket(self, step: int) -> socket.socket:
        s = self._tag_socks.get(step)
        if s is None:
            s = self._udp(tag_port(step), reuse=True)
            s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, IPTOS_ECT0)
            # packets waiting in a rate-limited qdisc count against the send
            # buffer; the default (~90 full packets) fills and drops sends
            try:
                s.setsockopt(socket.SOL_SOCKET, SO_SNDBUFFORCE, SNDBUF_BYTES)
            except OSError:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SNDBUF_BYTES)
            self._tag_socks[step] = s
        return s

    def close(self) -> None:
        for s in [self.dsock, self.csock, *self._tag_socks.values()]:
            if s is not None:
                s.close()
        self._tag_socks.clear()
        self.dsock = self.csock = None

    # ---- the interface the agent uses ---------------------------------------
    def send(self, step: int, payload) -> None:
        self.tag_socket(step)
        self.ep.start_send(step, payload, time.monotonic())

    def wait(self, step: int, deadline: float) -> bytearray:
        """Drive the I/O until `step` is sent and acked and received in full;
        return the received bytes.  TransportTimeout at the deadline
        (time.monotonic() seconds)."""
        ep = self.ep
        if not self._run_until(lambda: ep.send_done(step) and ep.recv_done(step), deadline):
            raise TransportTimeout(ep.waiting_on(step))
        ep.finish_send(step)
        s = self._tag_socks.pop(step, None)
        if s is not None:
            s.close()
        return ep.take(step)

    def linger(self, idle_s: float, deadline: float) -> None:
        """After the last step: keep acknowledging until the predecessor has
        been quiet for idle_s (it may have missed our last ACK)."""
        ep = self.ep
        start = time.monotonic()
        quiet_at = lambda: max(ep.last_data, start) + idle_s  # noqa: E731
        self._run_until(lambda: time.monotonic() >= quiet_at(), deadline, quiet_at)

    # ---- the loop -----------------------------------------------------------
    def _run_until(self, cond, deadline: float, wake=None) -> bool:
        ep = self.ep
        rlist = [self.dsock, self.csock]
        inj = self._inj
        while True:
            now = time.monotonic()
            if inj:
                for key, f in inj.items():
                    for item in f.release(now):
                        self._deliver(key, item, now)
            ep.service(now)
            if cond():
                return True
            if now >= deadline:
                return False
            t = ep.next_wakeup(now)
            if wake is not None:
                t = min(t, wake())
            for f in inj.values():
                t = min(t, f.next_release())
            timeout = min(t, deadline) - now
            ready, _, _ = select.select(rlist, [], [], timeout if timeout > 0 else 0)
            if ready:
                now = time.monotonic()
                for s in ready:
                    self._drain(s, now)

    def _drain(self, s: socket.socket, now: float, budget: int = 256) -> None:
        ep, mv = self.ep, self._rxmv
        is_data = s is self.dsock
        for _ in range(budget):
            try:
                if is_data:
                    n, anc, _flags, addr = s.recvmsg_into([mv], self._anc)
                    tos = 0
                    for level, typ, d in anc:
                        if level == socket.IPPROTO_IP and typ == socket.IP_TOS and d:
                            tos = d[0]
                else:
                    n, addr = s.recvfrom_into(mv)
                    tos = 0
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                ep.counters["recv_errors"] += 1
                return
            if self._inj:
                key = "d" if is_data else "c"
                for item in self._inj[key].feed((bytes(mv[:n]), addr, tos), now):
                    self._deliver(key, item, now)
            elif is_data:
                ep.on_data_packet(mv, n, addr[0], addr[1], tos, now)
            else:
                ep.on_ctrl_packet(mv, n, addr[0], addr[1], now)

    def _deliver(self, key: str, item, now: float) -> None:
        data, addr, tos = item
        if key == "d":
            self.ep.on_data_packet(data, len(data), addr[0], addr[1], tos, now)
        else:
            self.ep.on_ctrl_packet(data, len(data), addr[0], addr[1], now)


class Transport(Protocol):
    """What the agent needs from a transport (UDP here; TCP beside it).  The
    constructor takes the keyword arguments UdpTransport takes (job, rank, ips,
    data_port, params, recv_len, log, rp, np_, faults); log(kind, step, **f)
    writes retransmit/cnp/rate events."""
    name: str

    def open(self) -> None: ...                      # bind; OSError when it cannot
    def send(self, step: int, payload) -> None: ...  # start sending a step's chunk
    def wait(self, step: int, deadline: float) -> bytearray: ...  # TransportTimeout
    def linger(self, idle_s: float, deadline: float) -> None: ...
    def close(self) -> None: ...
    @property
    def counters(self) -> dict: ...                  # written in the `stats` event


TRANSPORTS: dict[str, type] = {"udp": UdpTransport}
