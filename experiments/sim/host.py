"""A simulated host: its NIC and the agents' transports on it.

The NIC is what tc htb is on an emulated host: a queue drained at the link's
rate (the twin's own EgressQueue, counting the frame's bytes as htb does),
HOST_QUEUE_PKTS deep.  ``SimTransport`` is the UDP transport of
hosts.udp.sockets with the simulation's I/O: the same pure Endpoint (sender,
receiver, DCQCN), its packets framed as the kernel frames the agent's
datagrams (frames.py) and handed to the NIC, what arrives for its ports
handed back, its timers on the virtual clock.  Where the socket transport
blocks (wait, linger), this one is told whom to resume (experiments/sim/
ranks.py drives the rank's loop).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from contract.tags import ECN_ECT0, control_port, tag_port
from experiments.sim.engine import Engine, Waker
from experiments.sim.frames import HEADERS, Framer, ip_bytes, read_udp
from hosts.transport import TransportTimeout
from hosts.udp.endpoint import Endpoint
from hosts.udp.params import FaultParams, UdpParams
from topologies.switch.twin.queues import EgressQueue

# The emulated host's htb class queues in a pfifo as long as the veth's
# txqueuelen (1000 frames, Mininet's default); more is dropped.
HOST_QUEUE_PKTS = 1000

Handler = Callable[[bytes, bytes, int, int, float], None]   # frame, source address, sport, tos, now


class SimHost:
    """One host: its NIC (a queue at the link's rate) towards its one
    switch port, and the listeners of its UDP ports."""

    def __init__(self, engine: Engine, name: str, framer: Framer, rate_bps: float | None,
                 depth: int = HOST_QUEUE_PKTS):
        self.engine = engine
        self.name = name
        self.framer = framer
        self.nic = EgressQueue(depth, bps=rate_bps)
        self.waker = Waker(engine, self._drain)
        self.listeners: dict[int, Handler] = {}
        self.out: tuple[Callable, int] | None = None          # (peer's receive, peer's port)
        self.delay_s = 0.0                                     # the wire's propagation delay
        self.stats = {"tx": 0, "rx": 0, "nic_drops": 0, "no_listener": 0, "not_udp": 0}

    def connect(self, receive: Callable, port: int) -> None:
        self.out = (receive, port)

    def set_delay(self, port: int, delay_s: float) -> None:
        self.delay_s = delay_s

    def set_rate_bps(self, bps: float) -> None:
        """The link's rate changed (a squeeze or its end): the NIC drains at
        it, from now."""
        self.nic.set_rate_bps(bps)
        self.waker.wake_at(self.engine.now)

    def send(self, frame: bytes) -> None:
        """A datagram from an agent or the cross traffic: into the NIC's queue."""
        nic = self.nic
        if not nic.room():
            self.stats["nic_drops"] += 1
            return
        nic.push(frame, self.engine.now)
        self.waker.wake_at(nic.deadline())

    def _drain(self, now: float) -> None:
        nic = self.nic
        receive, port = self.out
        at = self.engine.at
        for frame in nic.pop_due(now):
            self.stats["tx"] += 1
            at(now + nic.in_flight_s(frame) + self.delay_s, receive, port, frame)
        d = nic.deadline()
        if d is not None:
            self.waker.wake_at(d)

    def receive(self, port: int, frame: bytes) -> None:
        """A frame off the wire: to whoever listens on its UDP port."""
        self.stats["rx"] += 1
        head = read_udp(frame)
        if head is None:
            self.stats["not_udp"] += 1
            return
        src, sport, dport, tos = head
        handler = self.listeners.get(dport)
        if handler is None:
            self.stats["no_listener"] += 1
            return
        handler(frame, src, sport, tos, self.engine.now)

    def listen(self, port: int, handler: Handler) -> None:
        if port in self.listeners:
            raise OSError(98, f"{self.name}: UDP port {port} is taken")
        self.listeners[port] = handler

    def unlisten(self, port: int) -> None:
        self.listeners.pop(port, None)


class SimTransport:
    """hosts.transport's Transport for the simulation (module docstring).
    Built with the Transport protocol's keyword arguments plus `host` and
    `engine` (functools.partial), as the rank builds its transport; keep=False
    keeps no payload (a run without data); `stamp`, the rank's records'
    clock, is the compiled transport's (this one logs as events happen)."""

    name = "udp"

    def __init__(self, *, job: int, rank: int, ips: list[str], data_port: int, params: UdpParams,
                 recv_len, log, rp=None, np_=None, faults: FaultParams | None = None,
                 host: SimHost, engine: Engine, keep: bool = True, stamp=None):
        if faults is not None and faults.active:
            raise ValueError("the simulation does not inject receive faults ([faults] is for the agent's tests)")
        n = len(ips)
        pred, succ = (rank - 1) % n, (rank + 1) % n
        self.host, self.engine = host, engine
        self.framer = host.framer
        self.data_port, self.ctrl_port = data_port, control_port(data_port)
        self.succ_ip, self.pred_ip = ip_bytes(ips[succ]), ip_bytes(ips[pred])
        self.ip_names = {ip_bytes(ip): ip for ip in ips}
        self.ep = Endpoint(job=job, rank=rank, pred=(pred, ips[pred]), succ=(succ, ips[succ]),
                           data_port=data_port, params=params, recv_len=recv_len, out=self, log=log,
                           rp=rp, np_=np_, max_ahead=n + 1, keep=keep)
        self.waker = Waker(engine, self._service)
        self.waiting: tuple | None = None      # what the rank's loop waits for (await_step, linger)
        self.closed = True

    # ---- the Transport protocol -------------------------------------------------
    @property
    def counters(self) -> dict:
        return self.ep.counters

    def lateness(self) -> dict:
        return self.ep.sender.lateness()

    def flush(self) -> None:
        """Nothing to write: this transport logs its events as they happen
        (a compiled one keeps them until its rank's loop runs)."""

    def open(self) -> None:
        self.host.listen(self.data_port, self._on_data)
        self.host.listen(self.ctrl_port, self._on_ctrl)
        self.closed = False

    def close(self) -> None:
        """As the agent's exit closes its sockets: nothing more is taken or sent."""
        self.host.unlisten(self.data_port)
        self.host.unlisten(self.ctrl_port)
        self.closed = True
        self.waiting = None

    def send(self, step: int, payload) -> None:
        self.ep.start_send(step, payload, self.engine.now)

    # ---- what the Endpoint sends (its `out`) ----------------------------------------
    def data(self, step: int, hdr: bytes, payload) -> None:
        self.host.send(self.framer.udp(self.succ_ip, tag_port(step), self.data_port, ECN_ECT0, hdr, payload))

    def ctrl(self, pkt: bytes) -> None:
        # ACKs and CNPs leave from the data socket, which sets no ECN codepoint
        self.host.send(self.framer.udp(self.pred_ip, self.data_port, self.ctrl_port, 0, pkt))

    # ---- what arrives -----------------------------------------------------------
    def _on_data(self, frame: bytes, src: bytes, sport: int, tos: int, now: float) -> None:
        payload = memoryview(frame)[HEADERS:]
        self.ep.on_data_packet(payload, len(payload), self.ip_names.get(src, ""), sport, tos, now)
        self._service(now)

    def _on_ctrl(self, frame: bytes, src: bytes, sport: int, tos: int, now: float) -> None:
        payload = memoryview(frame)[HEADERS:]
        self.ep.on_ctrl_packet(payload, len(payload), self.ip_names.get(src, ""), sport, now)
        self._service(now)

    # ---- time: what the socket loop does between selects -----------------------------
    def _service(self, now: float) -> None:
        if self.closed:
            return
        ep = self.ep
        ep.service(now)
        t = ep.next_wakeup(now)
        w = self.waiting
        if w is not None:
            if w[0] == "step":
                if ep.step_complete(w[1]):
                    self.waiting = None
                    self.engine.at(now, w[3], ep.take(w[1]), None)
            else:
                quiet = ep.quiet_at(w[1], w[2])
                if now >= quiet:
                    self.waiting = None
                    self.engine.at(now, w[4], None, None)
                else:
                    t = min(t, quiet)
        if t < math.inf:
            self.waker.wake_at(t)

    # ---- the rank's blocking calls, as callbacks (experiments/sim/ranks.py) -------------
    def await_step(self, step: int, deadline: float, resume) -> None:
        """Transport.wait: resume(bytes, None) once the step is complete,
        resume(None, TransportTimeout) at the deadline."""
        for _ in self.ep.reap():
            pass
        token = ("step", step, deadline, resume)
        self.waiting = token
        self.engine.at_deadline(deadline, self._deadline, token)
        self._service(self.engine.now)

    def linger(self, idle_s: float, deadline: float, resume) -> None:
        """Transport.linger: resume(None, None) once the predecessor has been
        quiet for idle_s, or at the deadline."""
        token = ("linger", self.engine.now, idle_s, deadline, resume)
        self.waiting = token
        self.engine.at_deadline(deadline, self._deadline, token)
        self._service(self.engine.now)

    def _deadline(self, token: tuple) -> None:
        if self.waiting is not token:
            return
        self._service(self.engine.now)          # what is due at the deadline still counts
        if self.waiting is not token:
            return
        self.waiting = None
        if token[0] == "step":
            token[3](None, TransportTimeout(self.ep.waiting_on(token[1])))
        else:
            token[4](None, None)
