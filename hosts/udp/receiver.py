"""The receiving half of a UDP endpoint: one rank's flow of steps from its
predecessor.  Pure: no sockets, no clock reads (`now` is passed in).

Buffers any step from the next one the ring takes up to `max_ahead` ahead;
acks cumulatively with a SACK bitmap, at once on reordering, duplicates and
completion, else every `ack_every` packets or after `ack_delay_ms`; hands
every data packet's ECN mark to the notification point and sends a CNP when
it asks for one.  Only the predecessor's packets, with the step's tag as
source port, are taken; everything else is counted and dropped.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from contract import tags
from contract.tags import TAG_MASK, port_tag
from hosts import wire
from hosts.udp.params import UdpParams
from hosts.wire import ACK_COMPLETE, ACK_ECHO

SACK_MASK = (1 << wire.MAX_SACK_BITS) - 1


class Discarded:
    """What take() hands on when the receiver keeps no payload: the step's
    length, nothing else (a run without data: hosts.rank.SizedRing)."""
    __slots__ = ("n",)

    def __init__(self, n: int):
        self.n = n

    def __len__(self) -> int:
        return self.n


class RecvFlow:
    __slots__ = ("step", "total", "n", "buf", "got", "mask", "n_got", "cum", "pending", "ack_due",
                 "echo")

    def __init__(self, step: int, total: int, psize: int, keep: bool = True):
        self.step = step
        self.total = total
        self.n = max(1, -(-total // psize))
        self.buf = bytearray(total) if keep else None
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


class Receiver:
    """Receives each step's chunk from the predecessor (`pred` = (rank, ip)).
    `out.ctrl(packet)` sends an ACK or CNP to the predecessor's control port;
    `recv_len(step)` is the chunk size expected at a step, None for a step
    that is not part of the run; `np_` is the notification point
    (hosts.dcqcn.NotificationPoint); keep=False keeps no payload (a run
    without data: every packet is checked, acked and counted as ever)."""

    def __init__(self, *, job: int, rank: int, pred: tuple[int, str], data_port: int,
                 params: UdpParams, recv_len: Callable[[int], int | None], out,
                 log: Callable[..., None], counters: dict[str, int], np_, max_ahead: int,
                 keep: bool = True):
        self.job, self.rank = job, rank
        self.pred_rank, self.pred_ip = pred
        self.flow_key = (self.pred_ip, data_port)
        self.p = params
        self.psize = params.payload_bytes
        self.recv_len = recv_len
        self.out = out
        self.log = log
        self.counters = counters
        self.np = np_
        self.max_ahead = max_ahead
        self.keep = keep
        self.flows: dict[int, RecvFlow] = {}
        self.low = 0                 # lowest step not yet taken by the ring
        self.newest = -1             # newest step a valid data packet came with
        self.last_data = -math.inf   # time of the last valid data packet
        self._ack_delay = params.ack_delay_ms / 1000.0

    def done(self, step: int) -> bool:
        f = self.flows.get(step)
        return f is not None and f.complete

    def take(self, step: int) -> bytearray | Discarded:
        """Hand a complete step's bytes to the ring (Discarded: only its length,
        when no payload is kept); steps are taken in order."""
        if step != self.low:
            raise ValueError(f"take({step}) out of order: next is {self.low}")
        flow = self.flows.pop(step)
        if not flow.complete:
            raise ValueError(f"step {step} is not complete")
        self.low = step + 1
        return flow.buf if flow.buf is not None else Discarded(flow.total)

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

    def _count_valid(self, step: int) -> None:
        """rx_data, and rx_older_step for a packet behind one of a newer
        step: under ECMP (docs/ecmp.md) the tail of a step overtaken by the
        next step's head on another path, or a retransmission sent after
        the next step began.  The records carry it so every target's runs
        show the reordering the fabric made."""
        self.counters["rx_data"] += 1
        if step < self.newest:
            self.counters["rx_older_step"] += 1
        else:
            self.newest = step

    def on_data(self, pkt: wire.Data, payload, src_ip: str, src_port: int, tos: int,
                now: float) -> None:
        """One parsed data packet: checked, counted, buffered, acknowledged."""
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
        if step < self.low:
            # taken already: the sender missed our last ACK
            self._count_valid(step)
            c["dup_data"] += 1
            self.last_data = now
            self.out.ctrl(wire.pack_ack(self.job, self.rank, step, 0, 0, ACK_COMPLETE))
            c["tx_ack"] += 1
            return
        flow = self.flows.get(step)
        if flow is None:
            total = self.recv_len(step) if step < self.low + self.max_ahead else None
            if total is None:
                c["drop_step"] += 1
                return
            flow = self.flows[step] = RecvFlow(step, total, self.psize, self.keep)
        off, length = pkt.offset, pkt.length
        psize = self.psize
        if off % psize or off >= flow.total or length != min(psize, flow.total - off):
            c["drop_offset"] += 1
            return
        self._count_valid(step)
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
        if flow.buf is not None:
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


    def fire_timers(self, now: float) -> None:
        """The delayed ACKs due by now."""
        for rf in self.flows.values():
            if rf.ack_due <= now:
                self._send_ack(rf)

    def next_wakeup(self) -> float:
        """When the next delayed ACK is due."""
        return min((rf.ack_due for rf in self.flows.values()), default=math.inf)
