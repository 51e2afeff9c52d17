"""One rank's end of its two ring flows, as a pure protocol engine: no
sockets, no clock reads (`now` is passed in), so it runs on a virtual clock in
the tests and under the sockets of hosts.udp.sockets in an agent.

An Endpoint joins a Sender (to the successor) and a Receiver (from the
predecessor): it parses what arrives at the data and control ports, hands
each packet to its half, and says when either next has something to do.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable

from hosts import wire
from hosts.dcqcn import FixedRate, NotificationPoint
from hosts.udp.params import UdpParams
from hosts.udp.receiver import Receiver
from hosts.udp.sender import Sender
from hosts.wire import DATA, WireError


class Endpoint:
    """`out` has data(step, header, payload) and ctrl(packet) (to the
    predecessor's control port); `log(kind, step, **f)` writes events;
    `recv_len(step)` is the chunk size expected at a step, None for a step
    that is not part of the run; `rp`/`np_` are the reaction and notification
    points (DCQCN off when not given); keep=False: the receiver keeps no
    payload (a run without data)."""

    def __init__(self, *, job: int, rank: int, pred: tuple[int, str], succ: tuple[int, str],
                 data_port: int, params: UdpParams, recv_len: Callable[[int], int | None],
                 out, log: Callable[..., None], rp=None, np_=None, max_ahead: int = 64,
                 keep: bool = True):
        self.job, self.rank = job, rank
        self.pred_rank, self.pred_ip = pred
        self.succ_rank, self.succ_ip = succ
        self.counters: dict[str, int] = defaultdict(int)
        self.sender = Sender(job=job, rank=rank, succ_rank=self.succ_rank, params=params, out=out,
                             log=log, counters=self.counters,
                             rp=rp if rp is not None else FixedRate(None))
        self.receiver = Receiver(job=job, rank=rank, pred=pred, data_port=data_port, params=params,
                                 recv_len=recv_len, out=out, log=log, counters=self.counters,
                                 np_=np_ if np_ is not None else NotificationPoint(None),
                                 max_ahead=max_ahead, keep=keep)

    # ---- the ring's side ------------------------------------------------------
    def start_send(self, step: int, payload, now: float) -> None:
        self.sender.start(step, payload, now)

    def send_done(self, step: int) -> bool:
        return self.sender.done(step)

    def sent_all(self, step: int) -> bool:
        """Every packet of the step has been sent at least once (its ACKs
        may still be on their way)."""
        return self.sender.sent_all(step)

    def finish_send(self, step: int) -> None:
        self.sender.finish(step)

    def step_complete(self, step: int) -> bool:
        """What the ring waits for at a step: the step received in full and
        every packet of it sent at least once.  Its ACKs may still be on
        their way: as a NIC keeps a message until it is acknowledged while
        the next one starts, the step's flow stays until every packet is
        acknowledged (``reap``) and its losses are resent before the next
        step's new packets.  The ring's next step needs the data, not the
        ACKs: waiting for them cost a round trip per step with the link
        idle."""
        return self.sender.sent_all(step) and self.receiver.done(step)

    def reap(self) -> list[int]:
        """Drop the sent steps whose every packet is acknowledged; their steps."""
        done = [s for s, f in self.sender.flows.items() if f.done]
        for step in done:
            self.sender.finish(step)
        return done

    def quiet_at(self, since: float, idle_s: float) -> float:
        """How long a rank that has finished keeps acknowledging and
        resending: until the predecessor has been quiet for idle_s (counting
        from its last data packet, or `since` if later: it may have missed
        our last ACK), and while a step of ours is not all acknowledged,
        until the successor has acknowledged nothing new for idle_s (it may
        still miss our last packets: leaving then stranded it until its
        step deadline, as a simulated squeeze at 5 Mbit/s showed)."""
        t = max(self.receiver.last_data, since) + idle_s
        pending = [f.progress_at for f in self.sender.flows.values() if not f.done]
        return max(t, max(pending + [since]) + idle_s) if pending else t

    def recv_done(self, step: int) -> bool:
        return self.receiver.done(step)

    def take(self, step: int) -> bytearray:
        """Hand a complete step's bytes to the ring; steps are taken in order."""
        return self.receiver.take(step)

    @property
    def last_data(self) -> float:
        """Time of the last valid data packet from the predecessor."""
        return self.receiver.last_data

    # ---- packets from the sockets ---------------------------------------------
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
        self.receiver.on_data(pkt, memoryview(buf)[DATA.size:DATA.size + pkt.length], src_ip,
                              src_port, tos, now)

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
            self.sender.on_ack(pkt, now)
        else:
            self.sender.on_cnp(pkt, now)

    # ---- time -------------------------------------------------------------------
    def service(self, now: float) -> None:
        """Run what is due by now: timers, delayed ACKs, then what the window
        and the pacer let go."""
        self.sender.fire_timers(now)
        self.receiver.fire_timers(now)
        self.sender.poll_tx(now)

    def next_wakeup(self, now: float) -> float:
        return min(self.sender.next_wakeup(now), self.receiver.next_wakeup())

    def waiting_on(self, step: int) -> dict:
        """What an unfinished step still waits for (for the error event)."""
        rf = self.receiver.flows.get(step)
        if rf is None or not rf.complete:
            got = f"{rf.n_got}/{rf.n} packets" if rf else "no packet"
            return {"waiting_for": "data", "peer": self.pred_rank, "peer_ip": self.pred_ip,
                    "step": step, "what": f"data of step {step} from rank {self.pred_rank} "
                                          f"({self.pred_ip}): {got} received"}
        sf = self.sender.flows.get(step)
        sent = f"{sf.next_new}/{sf.n} packets sent, {sf.n_acked} acknowledged" if sf else "nothing sent"
        return {"waiting_for": "send", "peer": self.succ_rank, "peer_ip": self.succ_ip,
                "step": step, "what": f"sending step {step} to rank {self.succ_rank} "
                                      f"({self.succ_ip}): {sent}"}
