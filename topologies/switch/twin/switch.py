"""The twin switch process: raw sockets on its ports (sockets.py), the pure
pipeline (pipeline.py), per-port egress queues (queues.py) and delay lines
(delayline.py), and the control protocol (control.py), all in one select loop
(no threads, no busy spin).

Per received frame: [ingress delay line] -> ingress -> egress port's queue
full? drop (drop-tail) -> egress with enq_qdepth = packets already queued ->
enqueue.  Queues drain at their rate (set_queue_rate: packets/s, BMv2's unit;
set_queue_rate_bps: bits/s, each frame holding the port for its length, as on
a real link) or at once when unlimited, into the port's egress delay line
where set_netem put one (delayline.py: netem's delay, jitter, loss, reordering),
then out.  The delay line comes after the queue: it never changes how fast
the queue drains, and the pipeline's queue depth is the queue's.  An ingress
delay line (set_netem(..., direction="ingress"), at a port facing a host)
holds what arrives before the pipeline sees it.
"""

from __future__ import annotations

import errno
import math
import select
import signal
import socket
import time

from topologies.spec.netem import NetemParams
from topologies.switch.twin.control import ControlServer
from topologies.switch.twin.delayline import DelayLine
from topologies.switch.twin.pipeline import Pipeline
from topologies.switch.twin.queues import DEFAULT_DEPTH, EgressQueue
from topologies.switch.twin.sockets import PACKET_OUTGOING, disable_offloads, open_port_socket

RX_BATCH = 128
MAX_FRAME = 65535
DIRECTIONS = ("egress", "ingress")
# a send that fails under overload (ENOBUFS, EAGAIN), with an oversized frame
# (EMSGSIZE) or on an interface going away is counted, not reported
QUIET_SEND_ERRORS = (errno.ENOBUFS, errno.EAGAIN, errno.EMSGSIZE, errno.ENETDOWN, errno.ENXIO)


class TwinSwitch:
    """One switch: `ports` (number -> interface) opened as raw sockets,
    control on a Unix socket at `control_path`, egress queues of
    `queue_depth` packets; `seed` seeds the pipeline's ECN draws and the
    delay lines.  offloads_off=False leaves the interfaces as they are (tests
    without ports)."""

    def __init__(self, name: str, ports: dict[int, str], control_path: str,
                 queue_depth: int = DEFAULT_DEPTH, seed: int = 0, offloads_off: bool = True):
        self.name = name
        self.seed = seed
        self.queue_depth = queue_depth
        self.pipeline = Pipeline(seed)
        self.control_path = control_path
        self.ports = dict(ports)
        self.queues = {p: EgressQueue(queue_depth) for p in self.ports}
        # port -> its delay line, per direction: egress (after the queue) and
        # ingress (what a host sends, before the pipeline)
        self.lines: dict[str, dict[int, DelayLine]] = {d: {} for d in DIRECTIONS}
        self.stats = {p: {"rx": 0, "tx": 0, "queue_drops": 0, "tx_errors": 0} for p in self.ports}
        self.no_port_drops = 0
        self.warnings: list[str] = []
        self.socks: dict[int, socket.socket] = {}
        self.by_fd: dict[int, int] = {}
        self.control: ControlServer | None = None
        self.stopping = False
        try:
            for port, ifname in self.ports.items():
                if offloads_off:
                    w = disable_offloads(ifname)
                    if w:
                        self.warnings.append(w)
                s = open_port_socket(ifname)
                self.socks[port] = s
                self.by_fd[s.fileno()] = port
            self.control = ControlServer(control_path, self)
        except BaseException:
            self.close()
            raise

    # --- settings (the control protocol's methods: control.py) -----------------
    def set_queue_depth(self, depth: int, egress_port: int | None = None, priority=None) -> None:
        for q in self._queues_for(egress_port):
            q.set_depth(depth)

    def set_queue_rate(self, pps: float | None, egress_port: int | None = None, priority=None) -> None:
        for q in self._queues_for(egress_port):
            q.set_rate(pps)

    def set_queue_rate_bps(self, bps: float | None, egress_port: int | None = None, priority=None) -> None:
        """The twin's extra: drain at a bit rate (BMv2 only has packets/s)."""
        for q in self._queues_for(egress_port):
            q.set_rate_bps(bps)

    def set_netem(self, params: dict | None = None, egress_port: int | None = None,
                  direction: str = "egress") -> None:
        """The twin's extra: netem on a port (delay, jitter, loss, reordering:
        topologies.spec.netem.NetemParams' fields), after its egress queue or,
        direction "ingress", on what arrives there before the pipeline.  All
        zero turns it off (frames held keep their times).  The line of (port,
        direction) draws from a generator seeded by the switch's seed, name,
        port and direction, kept across changes."""
        if direction not in DIRECTIONS:
            raise ValueError(f"netem direction must be one of {', '.join(DIRECTIONS)}, got {direction!r}")
        p = NetemParams.from_dict(params or {})
        lines = self.lines[direction]
        for port in self._ports_for(egress_port):
            if port in lines:
                lines[port].set(p)
            elif p.active:
                lines[port] = DelayLine(f"{self.seed}:{self.name}:{port}:{direction}", p)

    def reset_state(self) -> None:
        """As BMv2's reset_state: tables, registers and counters back to the
        program's start; queues emptied, unlimited, at the start-up depth; no
        delay lines."""
        self.pipeline = Pipeline(self.seed)
        self.queues = {p: EgressQueue(self.queue_depth) for p in self.ports}
        self.lines = {d: {} for d in DIRECTIONS}

    def _ports_for(self, egress_port) -> list[int]:
        # SimpleSwitchThriftAPI's convention: no port (or port 0) means every port
        if not egress_port:
            return list(self.queues)
        if int(egress_port) not in self.queues:
            raise ValueError(f"switch {self.name} has no port {egress_port}")
        return [int(egress_port)]

    def _queues_for(self, egress_port) -> list[EgressQueue]:
        return [self.queues[p] for p in self._ports_for(egress_port)]

    def port_stats(self) -> dict:
        """Per port: counters, queue settings, delay lines and, for a queue
        with a rate, its fidelity figures (queues.EgressQueue.figures)."""
        return {
            "name": self.name,
            "ports": {str(p): dict(s, ifname=self.ports[p], queue=len(self.queues[p]),
                                   depth=self.queues[p].depth, pps=self.queues[p].pps,
                                   bps=self.queues[p].bps,
                                   **({} if self.queues[p].unlimited else {"fidelity": self.queues[p].figures()}),
                                   **{f"netem_{d}": self.lines[d][p].describe()
                                      for d in DIRECTIONS if p in self.lines[d]})
                      for p, s in self.stats.items()},
            "pipeline_drops": dict(self.pipeline.drops),
            "no_port_drops": self.no_port_drops,
            "warnings": list(self.warnings),
        }

    def dump(self) -> dict:
        d = self.pipeline.dump()
        d["stats"] = self.port_stats()
        return d

    # --- data path --------------------------------------------------------------
    def receive(self, port: int, now: float) -> None:
        s = self.socks[port]
        for _ in range(RX_BATCH):
            try:
                frame, addr = s.recvfrom(MAX_FRAME)
            except BlockingIOError:
                return
            except OSError:
                return
            if addr[2] == PACKET_OUTGOING:
                continue
            self.stats[port]["rx"] += 1
            self.arrive(port, frame, now)

    def arrive(self, port: int, frame: bytes, now: float) -> None:
        """A received frame: into the port's ingress delay line, or on."""
        line = self.lines["ingress"].get(port)
        if line is not None and line.active:
            line.push(frame, now)
        else:
            self.forward(port, frame, now)

    def forward(self, port: int, frame: bytes, now: float) -> None:
        pkt = self.pipeline.ingress(port, frame)
        if pkt.drop is not None:
            return
        q = self.queues.get(pkt.egress_port)
        if q is None:
            self.no_port_drops += 1
            return
        if not q.room():
            self.stats[pkt.egress_port]["queue_drops"] += 1
            return
        out = self.pipeline.egress(pkt, len(q))
        if q.unlimited and not q.q:
            self.leave(pkt.egress_port, out, now)     # unlimited and idle: straight on
        else:
            q.push(out, now)

    def leave(self, port: int, frame: bytes, now: float) -> None:
        """A frame the queue let go: into the port's delay line, or out."""
        line = self.lines["egress"].get(port)
        if line is not None and line.active:
            line.push(frame, now)
        else:
            self.transmit(port, frame)

    def transmit(self, port: int, frame: bytes) -> None:
        try:
            self.socks[port].send(frame)
            self.stats[port]["tx"] += 1
        except OSError as e:
            self.stats[port]["tx_errors"] += 1
            if e.errno not in QUIET_SEND_ERRORS:
                self.warnings.append(f"port {port}: send failed: {e.strerror}")
                del self.warnings[:-20]

    def drain(self, now: float) -> None:
        for port, line in self.lines["ingress"].items():
            for frame in line.pop_due(now):
                self.forward(port, frame, now)
        for port, q in self.queues.items():
            if q.q:
                for frame in q.pop_due(now):
                    self.leave(port, frame, now)
        for port, line in self.lines["egress"].items():
            for frame in line.pop_due(now):
                self.transmit(port, frame)

    def next_timeout(self, now: float) -> float:
        """Seconds until something is due (at most 1).  A queue's wait is
        rounded up to the millisecond (the queue catches up within
        MAX_CATCH_UP_S, and waking per frame would cost CPU); a delay line's
        is exact, since its frames are due at their own times."""
        wait = 1.0
        for q in self.queues.values():
            d = q.deadline()
            if d is not None:
                wait = min(wait, 0.0 if d <= now else max(0.001, math.ceil((d - now) * 1000) / 1000))
        for lines in self.lines.values():
            for line in lines.values():
                d = line.deadline()
                if d is not None:
                    wait = min(wait, max(0.0, d - now))
        return wait

    # --- loop -----------------------------------------------------------------
    def run(self) -> None:
        """Until SIGTERM or SIGINT: frames in, control requests answered,
        what is due sent (drain), waiting in select for what comes next."""
        wake_r, wake_w = socket.socketpair()
        wake_r.setblocking(False)
        wake_w.setblocking(False)
        old_wakeup = signal.set_wakeup_fd(wake_w.fileno())
        old_handlers = {sig: signal.signal(sig, self._on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
        control = self.control
        listener = control.listener.fileno()
        # select, not poll: its timeout has microseconds (poll's has
        # milliseconds), which a delay line's frames need; a switch has few fds
        watch = [*self.by_fd, listener, wake_r.fileno()]
        try:
            while not self.stopping:
                now = time.monotonic()
                ready, _, _ = select.select(watch, [], [], self.next_timeout(now))
                now = time.monotonic()
                for fd in ready:
                    if fd in self.by_fd:
                        self.receive(self.by_fd[fd], now)
                    elif fd == listener:
                        conn = control.accept()
                        if conn is not None:
                            watch.append(conn)
                    elif fd == wake_r.fileno():
                        try:
                            wake_r.recv(64)
                        except BlockingIOError:
                            pass
                    elif fd in control.conns and not control.serve(fd):
                        watch.remove(fd)
                self.drain(now)
        finally:
            signal.set_wakeup_fd(old_wakeup)
            for sig, h in old_handlers.items():
                signal.signal(sig, h)
            wake_r.close()
            wake_w.close()

    def _on_signal(self, signum, frame) -> None:
        self.stopping = True

    def close(self) -> None:
        for s in self.socks.values():
            s.close()
        self.socks.clear()
        if self.control is not None:
            self.control.close()
            self.control = None
