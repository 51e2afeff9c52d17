"""The sending half of a UDP endpoint: one rank's flow of steps to its
successor.  Pure: no sockets, no clock reads (`now` is passed in).

Packets of `payload_bytes` inside a window, paced at the reaction point's
`rate_bps` (read before every packet, counting the bytes the link counts;
when the rate has risen since the wait for the next packet was set, the rest
of that wait goes at the new rate: re-pacing);
retransmission on timeout (RFC 6298 RTO with back-off, restarted on progress),
on gaps (RACK-like: DUPTHRESH later transmissions arrived) and by a tail loss
probe.  docs/hosts.md gives the reasons for each rule.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from collections.abc import Callable

from contract.lateness import Lateness
from hosts import wire
from hosts.udp.params import WIRE_OVERHEAD, UdpParams
from hosts.wire import ACK_COMPLETE, ACK_ECHO

DUPTHRESH = 3            # gap rule: lost when a packet sent 3 transmissions later was acked
ECHO_MASK = 0xFFFF       # a data packet carries its transmission number's low 16 bits
MIN_PTO_S = 0.002        # tail probe: never sooner than this after the last transmission


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


class Sender:
    """Sends each step's chunk to the successor and recovers its losses from
    the successor's ACKs.  `out.data(step, header, payload)` puts a packet on
    the wire; `log(kind, step, **f)` writes retransmit and rate events;
    `counters` is the endpoint's (shared with its receiver); `rp` is the
    reaction point (hosts.dcqcn.ReactionPoint or FixedRate)."""

    def __init__(self, *, job: int, rank: int, succ_rank: int, params: UdpParams, out,
                 log: Callable[..., None], counters: dict[str, int], rp):
        self.job, self.rank, self.succ_rank = job, rank, succ_rank
        self.p = params
        self.psize = params.payload_bytes
        self.out = out
        self.log = log
        self.counters = counters
        self.rp = rp
        self.flows: dict[int, SendFlow] = {}
        self.cur_step = 0
        self.peer_heard = False      # any valid ACK from the successor yet
        self._timers: list = []      # (deadline, txseq, step, index)
        self._seq = 0
        self._next_tx = -math.inf
        self._gap_rate = 0.0          # the rate the wait until _next_tx was set at
        self._srtt: float | None = None
        self._rttvar = 0.0
        self._rto = params.rto_ms / 1000.0   # from the RTT estimator, before back-off
        self._backoff = 0             # timeouts since the last ACK of new data
        self._last_rtt: float | None = None
        self._rto_hold = -math.inf    # no timeout retransmission before this time
        self._ack_delay = params.ack_delay_ms / 1000.0
        # how late the loop ran what was due (contract.lateness): a packet the
        # pacer alone held (window open) against its release time, and the
        # reaction point's timer events against theirs
        self.late_pacing = Lateness()
        self.late_timer = Lateness()
        self._held: float | None = None   # the pacer holds a sendable packet until then

    def start(self, step: int, payload, now: float) -> None:
        if step in self.flows:
            raise ValueError(f"step {step} is already being sent")
        self.flows[step] = SendFlow(step, payload, self.psize)
        self.cur_step = step

    def done(self, step: int) -> bool:
        f = self.flows.get(step)
        return f is not None and f.done

    def sent_all(self, step: int) -> bool:
        f = self.flows.get(step)
        return f is not None and (f.done or f.next_new >= f.n)

    def finish(self, step: int) -> None:
        self.flows.pop(step, None)

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
        for flow in self.flows.values():
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
        for flow in self.flows.values():
            if not flow.done and (flow.rtx or (flow.next_new < flow.n
                                               and flow.next_new < flow.cum + win)):
                return True
        return False

    def _transmit(self, flow: SendFlow, idx: int, why: str | None, now: float) -> int:
        off = idx * self.psize
        length = min(self.psize, flow.total - off)
        self._seq += 1
        hdr = wire.pack_data_header(self.job, self.rank, flow.step, off, length,
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
        held, self._held = self._held, None
        if rate and now < self._next_tx and rate > self._gap_rate:
            # re-pacing: the rate rose since the wait was set (a packet sent
            # at a low rate would otherwise hold the next for its full gap,
            # e.g. 1/min rate, however soon the rate recovered): what is left
            # of the wait goes at the new rate
            self._next_tx = now + (self._next_tx - now) * self._gap_rate / rate
            if held is not None:
                held = min(held, self._next_tx)
            self._gap_rate = rate
        while True:
            if rate and now < self._next_tx:
                if self._sendable():
                    self._held = self._next_tx
                return
            pick = self._pick()
            if pick is None:
                return
            if held is not None:
                self.late_pacing.add(now - held)
                held = None
            nbytes = self._transmit(*pick, now)
            if self.rp.on_bytes_sent(nbytes, now):
                self._log_rate()
            if rate:
                gap = nbytes * 8.0 / rate
                self._next_tx = max(self._next_tx, now - self.p.burst_packets * gap) + gap
                self._gap_rate = rate

    def _queue(self, flow: SendFlow, idx: int, why: str) -> None:
        """Queue a retransmission; the packet is sent more than once from
        here on, so its ACK gives no RTT sample (Karn), whichever rule resent
        it (a gap-rule resend once did not count, and the original's ACK then
        timed the resend: samples far below the path's RTT)."""
        flow.retries[idx] += 1
        flow.queued[idx] = 1
        flow.rtx.append((idx, why))

    def fire_timers(self, now: float) -> None:
        """Timeouts, tail probes and the reaction point's timers due by now."""
        timers = self._timers
        while timers and timers[0][0] <= now:
            _, seq, step, idx = heapq.heappop(timers)
            flow = self.flows.get(step)
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
            self._queue(flow, idx, "timeout")
            if self.peer_heard and self._cur_rto() < self.p.rto_max_ms / 1000.0:
                self._backoff += 1
            self._rto_hold = now + self._cur_rto()
        for flow in self.flows.values():
            if flow.probe_at <= now:
                self._probe(flow)
        if self._rp_due(now) and self.rp.advance(now):
            self._log_rate()

    def _rp_due(self, now: float) -> bool:
        """Whether a reaction-point timer event is due; records its lateness."""
        due = self.rp.next_event_time()
        if due > now:
            return False
        self.late_timer.add(now - due)
        return True

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
        flow = self.flows.get(ack.step)
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
        sample = [0, 0.0]            # transmission number, RTT
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
        # for the stats event: samples, their sum and minimum, the final SRTT (us)
        c, us = self.counters, round(rtt * 1e6)
        c["rtt_samples"] += 1
        c["rtt_sum_us"] += us
        c["rtt_min_us"] = us if c["rtt_samples"] == 1 else min(c["rtt_min_us"], us)
        c["rtt_srtt_us"] = round(self._srtt * 1e6)

    def on_cnp(self, cnp: wire.Cnp, now: float) -> None:
        self.counters["rx_cnp"] += 1
        self.log("cnp", cnp.step, dir="rx", peer=self.succ_rank)
        self._rp_due(now)             # a timer event the CNP's call runs first
        if self.rp.on_cnp(now):
            self._log_rate()

    def lateness(self) -> dict:
        """For the agent's stats event: the pacer's and the reaction point's
        lateness records (contract.lateness)."""
        return {"pacing": self.late_pacing.as_dict(), "dcqcn_timer": self.late_timer.as_dict()}

    def _log_rate(self) -> None:
        rp = self.rp
        self.log("rate", self.cur_step, rc=rp.rate_bps, rt=getattr(rp, "target_bps", rp.rate_bps),
                 alpha=getattr(rp, "alpha", 0.0))


    def next_wakeup(self, now: float) -> float:
        """When the sender next has something to do (a timer, a probe, a
        packet the pacer lets go, a reaction-point event)."""
        t = self._timers[0][0] if self._timers else math.inf
        for sf in self.flows.values():
            if sf.probe_at < t:
                t = sf.probe_at
        if self._sendable():
            t = min(t, self._next_tx if self.rp.rate_bps else now)
        return min(t, self.rp.next_event_time())
