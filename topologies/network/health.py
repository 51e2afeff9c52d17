"""Is a running switch serving?  Telling a hung switch from a dead one.

A dead switch has an exit code (``dead``, TestbedNetwork.dead_switches).  A
hung one still runs but forwards and answers nothing: stopped (SIGSTOP, a
debugger; /proc state T or t), or stuck.  ``hung`` (TestbedNetwork.hung_switches)
asks both, cheaply enough for a supervisor polling every 0.1-0.5 s:

- the process state, from /proc (a stopped switch is reported at once);
- a bounded ping on the switch's control socket (the twin's JSON-lines
  socket, simple_switch's Thrift port): one request at a time on its own
  connection, sent at most every PROBE_INTERVAL_S, never waited for (each
  call reads what has come back without blocking); a switch that leaves a
  ping unanswered for UNRESPONSIVE_S is hung.
"""

from __future__ import annotations

import json
import socket
import struct
import time
from collections.abc import Callable, Iterable

from topologies.network.state import process_state

STOPPED_STATES = ("T", "t")      # /proc/<pid>/stat: stopped by a signal, or by a tracer
PROBE_INTERVAL_S = 0.5           # at most one ping per switch this often
UNRESPONSIVE_S = 5.0             # a ping unanswered this long: hung (a busy twin answers in milliseconds)
CONNECT_TIMEOUT_S = 0.05         # the only wait: connecting to a local socket

# the twin's control protocol (topologies/switch/twin/control.py): one JSON request a line
TWIN_PING = json.dumps({"id": 0, "method": "ping", "args": [], "kwargs": {}}).encode() + b"\n"


def thrift_call(service: str, method: str, seqid: int = 0) -> bytes:
    """A Thrift call without arguments as simple_switch reads it: binary
    protocol (strict, VERSION_1 | CALL), multiplexed ("<service>:<method>"),
    buffered transport (no framing), an empty argument struct."""
    name = f"{service}:{method}".encode()
    return struct.pack("!Ii", 0x80010001, len(name)) + name + struct.pack("!i", seqid) + b"\x00"


BMV2_PING = thrift_call("standard", "bm_get_config_md5")


def stopped(pid: int | None) -> str | None:
    """The /proc state letter of a stopped process, else None."""
    state = process_state(pid) if pid else None
    return state if state in STOPPED_STATES else None


class ControlProbe:
    """Pings on a switch's control socket, at most one outstanding; tells
    how long the switch has left one unanswered.  Any bytes back are an
    answer (each ping has a connection of its own, closed after it)."""

    def __init__(self, family: int, address, request: bytes, interval_s: float = PROBE_INTERVAL_S,
                 clock: Callable[[], float] = time.monotonic):
        self.family, self.address, self.request = family, address, request
        self.interval_s = interval_s
        self.clock = clock
        self.sock: socket.socket | None = None
        self.pending_since: float | None = None    # the oldest unanswered ping
        self.next_at = clock()

    def waiting_s(self) -> float:
        """Seconds since the oldest unanswered ping (0.0: the last one was
        answered); sends the next ping when one is due.  Blocks at most
        CONNECT_TIMEOUT_S."""
        now = self.clock()
        if self.sock is not None:
            answered = self._read()
            if answered is None:
                return now - self.pending_since
            self._close()
            if answered:
                self.pending_since = None
        if now >= self.next_at:
            self.next_at = now + self.interval_s
            if self.pending_since is None:
                self.pending_since = now
            self._send()
        return 0.0 if self.pending_since is None else now - self.pending_since

    def _send(self) -> None:
        s = socket.socket(self.family, socket.SOCK_STREAM)
        try:
            s.settimeout(CONNECT_TIMEOUT_S)
            s.connect(self.address)
            s.setblocking(False)
            s.send(self.request)
        except OSError:
            s.close()               # refused or full: unanswered, tried again when due
            return
        self.sock = s

    def _read(self) -> bool | None:
        """True: an answer came; False: the connection failed or closed
        without one; None: nothing yet."""
        try:
            return bool(self.sock.recv(4096))
        except (BlockingIOError, InterruptedError):
            return None
        except OSError:
            return False

    def _close(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None

    def close(self) -> None:
        self._close()


def dead(switches: Iterable) -> list[tuple[str, int]]:
    """(name, exit code) of every switch (nodes.SoftSwitch, Bmv2Switch)
    whose process has exited."""
    return [(sw.name, rc) for sw in switches if (rc := sw.returncode()) is not None]


def hung(switches: Iterable, probes: dict[str, ControlProbe],
         unresponsive_s: float = UNRESPONSIVE_S) -> list[tuple[str, str]]:
    """(name, why) of every switch that still runs but does not serve:
    stopped (reported at once), or a ping on its control socket unanswered
    for unresponsive_s seconds.  A dead switch is dead()'s, not this.
    probes (switch -> its ControlProbe) is kept by the caller across calls;
    a switch's probe is made on its first call (sw.probe())."""
    out = []
    for sw in switches:
        if sw.returncode() is not None:
            continue
        state = stopped(sw.switch_pid)
        if state:
            out.append((sw.name, f"stopped (process {sw.switch_pid} in state {state}: SIGSTOP or a debugger)"))
            continue
        probe = probes.get(sw.name)
        if probe is None:
            probe = probes[sw.name] = sw.probe()
        waited = probe.waiting_s()
        if waited >= unresponsive_s:
            out.append((sw.name, f"did not answer on its control socket for {waited:.1f} s"))
    return out
