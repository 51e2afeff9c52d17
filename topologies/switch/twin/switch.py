"""The twin switch process: raw sockets on its ports (sockets.py) and the
control protocol (control.py) around the data path of core.SwitchCore (the
pure pipeline, per-port egress queues and delay lines), all in one select
loop (no threads, no busy spin).  core.py states the data path.
"""

from __future__ import annotations

import errno
import math
import select
import signal
import socket
import time

from topologies.switch.twin.control import ControlServer
from topologies.switch.twin.core import SwitchCore
from topologies.switch.twin.queues import DEFAULT_DEPTH
from topologies.switch.twin.sockets import PACKET_OUTGOING, disable_offloads, open_port_socket

RX_BATCH = 128
MAX_FRAME = 65535
# A queue with a standing backlog (core.SHORT_QUEUE) is woken at most this
# often (it catches up: queues.MAX_CATCH_UP_S), since a wake-up per frame
# costs CPU (a 0.2 ms grid on every queue: the switches' CPU up 15 % on the
# demo and a run's fidelity degraded); a queue holding a few frames is woken
# exactly, so a lightly loaded path's RTT, or two probes that a netem's
# jitter bunched, carry no rounding (a millisecond's grid added up to 1 ms
# per hop to pings, ACKs and probes).  The interval runs from the queue's
# last departure, not from whatever woke the loop: counted from the wake-up,
# a frame received just before a departure put it off by up to 1 ms, and a
# port of 10 Mbit/s (1.2 ms a frame) that never needs the grid let frames
# go that late, so the next switch's port of the same rate saw two frames
# close together and read a queue that the network does not have (with
# K_sym = 1, Symphony marked there: experiments/README.md, "Departures on
# time").
QUEUE_WAKE_S = 0.001
# a send that fails under overload (ENOBUFS, EAGAIN), with an oversized frame
# (EMSGSIZE) or on an interface going away is counted, not reported
QUIET_SEND_ERRORS = (errno.ENOBUFS, errno.EAGAIN, errno.EMSGSIZE, errno.ENETDOWN, errno.ENXIO)


class TwinSwitch(SwitchCore):
    """One switch: `ports` (number -> interface) opened as raw sockets,
    control on a Unix socket at `control_path`, egress queues of
    `queue_depth` packets; `seed` seeds the pipeline's ECN draws and the
    delay lines.  offloads_off=False leaves the interfaces as they are (tests
    without ports)."""

    def __init__(self, name: str, ports: dict[int, str], control_path: str,
                 queue_depth: int = DEFAULT_DEPTH, seed: int = 0, offloads_off: bool = True):
        super().__init__(name, ports, queue_depth, seed)
        self.control_path = control_path
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

    # --- data path: frames in from the sockets, out to them --------------------
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
            self.arrive(port, frame, now)

    def transmit(self, port: int, frame: bytes, now: float = 0.0) -> None:
        try:
            self.socks[port].send(frame)
            self.stats[port]["tx"] += 1
        except OSError as e:
            self.stats[port]["tx_errors"] += 1
            if e.errno not in QUIET_SEND_ERRORS:
                self.warnings.append(f"port {port}: send failed: {e.strerror}")
                del self.warnings[:-20]

    def next_timeout(self, now: float) -> float:
        """Seconds until something is due (at most 1).  A backlogged queue
        is woken no sooner than QUEUE_WAKE_S after it last let frames go; a
        short queue's and a delay line's wake-ups are exact."""
        wait = 1.0
        for kind, port, d in self.deadlines():
            if kind == "queue":
                d = max(d, self.served.get(port, -math.inf) + QUEUE_WAKE_S)
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
