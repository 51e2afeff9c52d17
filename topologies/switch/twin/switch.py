"""The twin switch process: raw AF_PACKET sockets on its interfaces, the pure
pipeline, per-port egress queues and delay lines, and JSON-lines control on a
Unix socket, all in one select loop (no threads, no busy spin).

Per received frame: [ingress delay line] -> ingress -> egress port's queue
full? drop (drop-tail) -> egress with enq_qdepth = packets already queued ->
enqueue.  Queues drain at their rate (set_queue_rate: packets/s, BMv2's unit;
set_queue_rate_bps: bits/s, each frame holding the port for its length, as on
a real link) or at once when unlimited, into the port's egress delay line
where set_netem put one (delayline.py: netem's delay, jitter, loss, reordering),
then out.  The delay line comes after the queue: it never changes how fast
the queue drains, and the pipeline's queue depth is the queue's.  An ingress
delay line (set_netem(..., direction="ingress"), at a port facing a host)
holds what arrives before the pipeline sees it.  Frames the kernel reports as
PACKET_OUTGOING (our own transmissions) are ignored.

Control protocol, one JSON object per line each way:
  -> {"id": 1, "method": "table_add", "args": [...], "kwargs": {...}}
  <- {"id": 1, "result": ...}   or   {"id": 1, "error": "one-line message"}
"""

from __future__ import annotations

import errno
import json
import math
import os
import select
import signal
import socket
import subprocess
import sys
import time

from topologies.network import intf
from topologies.network.state import sock_path_problem
from topologies.spec.netem import NetemParams
from topologies.switch.twin.delayline import DelayLine, table
from topologies.switch.twin.pipeline import Pipeline, TwinError
from topologies.switch.twin.queues import DEFAULT_DEPTH, EgressQueue

ETH_P_ALL = 0x0003
SOL_PACKET = 263
PACKET_IGNORE_OUTGOING = 23
PACKET_OUTGOING = 4
SO_RCVBUFFORCE = 33
RX_BATCH = 128
MAX_FRAME = 65535
DIRECTIONS = ("egress", "ingress")


class SwitchError(RuntimeError):
    """A start-up failure of the twin, with a one-line message."""


def disable_offloads(ifname: str) -> str | None:
    """Offloads off (topologies.network.intf), so raw sockets see wire-size frames,
    not 64 KB super-packets.  Returns a warning when ethtool could not do it."""
    try:
        r = subprocess.run(intf.offloads_off(ifname), capture_output=True, text=True)
    except FileNotFoundError:
        return "ethtool not found: offloads left on"
    if r.returncode != 0:
        return f"ethtool -K {ifname} failed: {r.stderr.strip() or r.stdout.strip()}"
    return None


def open_port_socket(ifname: str) -> socket.socket:
    try:
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    except PermissionError:
        raise SwitchError("raw sockets need root (CAP_NET_RAW)") from None
    try:
        s.bind((ifname, ETH_P_ALL))
    except OSError as e:
        s.close()
        raise SwitchError(f"cannot bind to interface {ifname!r}: {e.strerror}") from None
    for level, opt, val in ((SOL_PACKET, PACKET_IGNORE_OUTGOING, 1),
                            (socket.SOL_SOCKET, SO_RCVBUFFORCE, 4 << 20)):
        try:
            s.setsockopt(level, opt, val)
        except OSError:
            pass                      # older kernels: the pkttype check still filters
    s.setblocking(False)
    return s


class TwinSwitch:
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
        self.clients: dict[int, tuple[socket.socket, bytearray]] = {}
        self.watch: list[int] = []           # the fds the loop waits on
        self.stopping = False
        self.listener = None
        table("normal")                      # the tables take ~0.1 s: not mid-run
        try:
            for port, ifname in self.ports.items():
                if offloads_off:
                    w = disable_offloads(ifname)
                    if w:
                        self.warnings.append(w)
                s = open_port_socket(ifname)
                self.socks[port] = s
                self.by_fd[s.fileno()] = port
            self.listener = self._listen(control_path)
        except BaseException:
            self.close()
            raise

    # --- control socket -------------------------------------------------------
    @staticmethod
    def _listen(path: str) -> socket.socket:
        if os.path.exists(path):
            probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                probe.connect(path)
                raise SwitchError(f"control socket {path} is in use by another process")
            except (ConnectionRefusedError, FileNotFoundError):
                os.unlink(path)       # stale socket of a crashed run
            finally:
                probe.close()
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.bind(path)
        except OSError as e:
            s.close()
            # a too-long path raises OSError("AF_UNIX path too long") without strerror
            why = sock_path_problem(path) or e.strerror or str(e)
            raise SwitchError(f"cannot create control socket {path}: {why}") from None
        s.listen(16)
        s.setblocking(False)
        return s

    def handle_request(self, line: bytes) -> dict:
        try:
            req = json.loads(line)
            if not isinstance(req, dict):
                raise ValueError("a request must be a JSON object")
        except ValueError as e:
            return {"id": None, "error": f"bad request: {e}"}
        rid = req.get("id")
        method = req.get("method")
        args = req.get("args") or []
        kwargs = req.get("kwargs") or {}
        handler = CONTROL_METHODS.get(method)
        if handler is None:
            return {"id": rid, "error": f"unknown method {method!r}"}
        try:
            return {"id": rid, "result": handler(self, *args, **kwargs)}
        except (TwinError, ValueError, TypeError, KeyError) as e:
            return {"id": rid, "error": str(e).splitlines()[0] if str(e) else e.__class__.__name__}

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
            # ENOBUFS/EAGAIN under overload, EMSGSIZE for oversized frames
            self.stats[port]["tx_errors"] += 1
            if e.errno not in (errno.ENOBUFS, errno.EAGAIN, errno.EMSGSIZE, errno.ENETDOWN, errno.ENXIO):
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
        wake_r, wake_w = socket.socketpair()
        wake_r.setblocking(False)
        wake_w.setblocking(False)
        old_wakeup = signal.set_wakeup_fd(wake_w.fileno())
        old_handlers = {sig: signal.signal(sig, self._on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
        # select, not poll: its timeout has microseconds (poll's has
        # milliseconds), which a delay line's frames need; a switch has few fds
        self.watch = [*self.by_fd, self.listener.fileno(), wake_r.fileno()]
        try:
            while not self.stopping:
                now = time.monotonic()
                ready, _, _ = select.select(self.watch, [], [], self.next_timeout(now))
                now = time.monotonic()
                for fd in ready:
                    if fd in self.by_fd:
                        self.receive(self.by_fd[fd], now)
                    elif fd == self.listener.fileno():
                        self._accept()
                    elif fd == wake_r.fileno():
                        try:
                            wake_r.recv(64)
                        except BlockingIOError:
                            pass
                    elif fd in self.clients:
                        self._serve(fd)
                self.drain(now)
        finally:
            signal.set_wakeup_fd(old_wakeup)
            for sig, h in old_handlers.items():
                signal.signal(sig, h)
            wake_r.close()
            wake_w.close()

    def _on_signal(self, signum, frame) -> None:
        self.stopping = True

    def _accept(self) -> None:
        try:
            conn, _ = self.listener.accept()
        except BlockingIOError:
            return
        conn.setblocking(False)
        self.clients[conn.fileno()] = (conn, bytearray())
        self.watch.append(conn.fileno())

    def _serve(self, fd: int) -> None:
        conn, buf = self.clients[fd]
        try:
            data = conn.recv(1 << 16)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self.watch.remove(fd)
            del self.clients[fd]
            conn.close()
            return
        buf += data
        while b"\n" in buf:
            line, _, rest = bytes(buf).partition(b"\n")
            buf[:] = rest
            if line.strip():
                reply = json.dumps(self.handle_request(line)).encode() + b"\n"
                conn.setblocking(True)
                conn.settimeout(5.0)
                try:
                    conn.sendall(reply)
                except OSError:
                    pass
                finally:
                    conn.setblocking(False)

    def close(self) -> None:
        for conn, _ in self.clients.values():
            conn.close()
        self.clients.clear()
        for s in self.socks.values():
            s.close()
        self.socks.clear()
        if self.listener is not None:
            self.listener.close()
            self.listener = None
            try:
                os.unlink(self.control_path)
            except FileNotFoundError:
                pass


def _pipeline_method(name):
    def call(sw: TwinSwitch, *args, **kwargs):
        result = getattr(sw.pipeline, name)(*args, **kwargs)
        return list(result) if isinstance(result, tuple) else result
    return call


CONTROL_METHODS = {
    **{m: _pipeline_method(m) for m in ("table_add", "table_set_default", "table_clear", "table_reset_default",
                                        "register_read", "register_write", "register_reset", "counter_read",
                                        "counter_reset")},
    "reset_state": TwinSwitch.reset_state,
    "set_queue_depth": TwinSwitch.set_queue_depth,
    "set_queue_rate": TwinSwitch.set_queue_rate,
    "set_queue_rate_bps": TwinSwitch.set_queue_rate_bps,
    "set_netem": TwinSwitch.set_netem,
    "stats": TwinSwitch.port_stats,
    "dump": TwinSwitch.dump,
    "ping": lambda sw: sw.name,
}


def main_loop(sw: TwinSwitch, dump_path: str | None = None) -> int:
    try:
        sw.run()
    finally:
        if dump_path:
            try:
                with open(dump_path, "w") as f:
                    json.dump(sw.dump(), f)
            except OSError as e:
                print(f"twin {sw.name}: cannot write {dump_path}: {e.strerror}", file=sys.stderr)
        sw.close()
    return 0
