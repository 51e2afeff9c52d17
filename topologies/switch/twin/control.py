"""The twin's control protocol: JSON lines on a Unix socket, served inside
the switch's select loop (no threads).

  -> {"id": 1, "method": "table_add", "args": [...], "kwargs": {...}}
  <- {"id": 1, "result": ...}   or   {"id": 1, "error": "one-line message"}

The methods are SimpleSwitchThriftAPI's (client.TwinClient sends them with
its names and argument order), answered by the switch's pipeline or by the
switch itself, plus the twin's extras (set_queue_rate_bps, set_netem, stats,
dump, ping).  ``handle_request`` is pure: a bad request, a refused call or
any bytes at all come back as an error reply, never as an exception, so no
client can stop the switch.  ``ControlServer`` does the socket part: it
accepts connections, reads whole lines and writes each reply (blocking at
most REPLY_TIMEOUT_S for a client that does not read).
"""

from __future__ import annotations

import json
import os
import socket

from topologies.switch.twin.pipeline import TwinError
from topologies.switch.twin.sockets import listen_control

REPLY_TIMEOUT_S = 5.0
RECV_BYTES = 1 << 16

# answered by the switch's pipeline (topologies.switch.twin.pipeline.Pipeline)
PIPELINE_METHODS = frozenset({"table_add", "table_set_default", "table_clear", "register_read", "register_write",
                              "register_reset", "counter_read"})
# answered by the switch (topologies.switch.twin.core.SwitchCore): request -> method
SWITCH_METHODS = {"reset_state": "reset_state", "set_queue_depth": "set_queue_depth",
                  "set_queue_rate": "set_queue_rate", "set_queue_rate_bps": "set_queue_rate_bps",
                  "set_ctrl_lane": "set_ctrl_lane", "set_netem": "set_netem", "stats": "port_stats", "dump": "dump"}


def _handler(switch, method):
    if method in PIPELINE_METHODS:
        return getattr(switch.pipeline, method)
    if method in SWITCH_METHODS:
        return getattr(switch, SWITCH_METHODS[method])
    if method == "ping":
        return lambda: switch.name
    return None


def handle_request(switch, line: bytes | str) -> dict:
    """The reply to one request line (module docstring); tuples come back
    as lists, as JSON has them."""
    try:
        req = json.loads(line)
        if not isinstance(req, dict):
            raise ValueError("a request must be a JSON object")
    except ValueError as e:
        return {"id": None, "error": f"bad request: {e}"}
    rid = req.get("id")
    method = req.get("method")
    handler = _handler(switch, method) if isinstance(method, str) else None
    if handler is None:
        return {"id": rid, "error": f"unknown method {method!r}"}
    try:
        result = handler(*(req.get("args") or []), **(req.get("kwargs") or {}))
    except (TwinError, ValueError, TypeError, KeyError) as e:
        return {"id": rid, "error": str(e).splitlines()[0] if str(e) else e.__class__.__name__}
    return {"id": rid, "result": list(result) if isinstance(result, tuple) else result}


class ControlServer:
    """The switch's control socket and its clients' connections.  The loop
    waits on ``listener`` and on each connection (``accept`` returns the new
    one's fd; ``serve`` returns False once a connection has closed)."""

    def __init__(self, path: str, switch):
        self.path = path
        self.switch = switch
        self.listener = listen_control(path)
        self.conns: dict[int, tuple[socket.socket, bytearray]] = {}     # fd -> (connection, unread bytes)

    def accept(self) -> int | None:
        try:
            conn, _ = self.listener.accept()
        except BlockingIOError:
            return None
        conn.setblocking(False)
        self.conns[conn.fileno()] = (conn, bytearray())
        return conn.fileno()

    def serve(self, fd: int) -> bool:
        """Answer every whole line that has arrived on a connection."""
        conn, buf = self.conns[fd]
        try:
            data = conn.recv(RECV_BYTES)
        except BlockingIOError:
            return True
        except OSError:
            data = b""
        if not data:
            del self.conns[fd]
            conn.close()
            return False
        buf += data
        while b"\n" in buf:
            line, _, rest = bytes(buf).partition(b"\n")
            buf[:] = rest
            if line.strip():
                reply = json.dumps(handle_request(self.switch, line)).encode() + b"\n"
                conn.settimeout(REPLY_TIMEOUT_S)
                try:
                    conn.sendall(reply)
                except OSError:
                    pass
                finally:
                    conn.setblocking(False)
        return True

    def close(self) -> None:
        """Close every connection and the listener, and remove the socket file."""
        for conn, _ in self.conns.values():
            conn.close()
        self.conns.clear()
        self.listener.close()
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass
