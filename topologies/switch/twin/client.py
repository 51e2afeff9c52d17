"""TwinClient: the twin's control client, with SimpleSwitchThriftAPI's
method names and argument order, so the control plane drives BMv2 and the
twin the same way (topologies/switch/controlplane.py, topologies/switch/program.py).
LocalTwinClient: the same client for a switch core in this process (the
simulation target), through the control protocol's own handler.

    c = TwinClient.wait("/run/symphony/s1.sock")
    c.table_add("forward", "ipv4_forward", ["10.0.0.2/32"], ["00:00:0a:00:00:02", "2"])
    c.register_read("frontier", 0); c.counter_read("sym_marks", 0).packets
"""

from __future__ import annotations

import itertools
import json
import socket
import threading
import time

from topologies.spec.netem import NetemParams
from topologies.switch.twin.control import handle_request
from topologies.switch.twin.pipeline import CounterValue


class TwinClientError(RuntimeError):
    """The twin refused a request or could not be reached (one-line message)."""


class TwinClient:
    def __init__(self, sockpath: str, timeout: float = 10.0):
        self.sockpath = str(sockpath)
        self.timeout = timeout
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._sock = None
        self._buf = b""
        self._connect()

    @classmethod
    def wait(cls, sockpath: str, timeout: float = 10.0, proc=None) -> TwinClient:
        """Connect once the twin answers; fails early when `proc` (its Popen) exits."""
        deadline = time.monotonic() + timeout
        while True:
            client = None
            try:
                client = cls(sockpath)
                client.ping()
                return client
            except (OSError, TwinClientError):
                if client is not None:
                    client.close()
                if proc is not None and proc.poll() is not None:
                    raise TwinClientError(f"twin exited with code {proc.returncode} before answering") from None
                if time.monotonic() > deadline:
                    raise TwinClientError(f"twin at {sockpath} did not answer within {timeout:.0f} s") from None
                time.sleep(0.05)

    def _connect(self) -> None:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        try:
            s.connect(self.sockpath)
        except OSError:
            s.close()
            raise
        self._sock, self._buf = s, b""

    def _call(self, method: str, *args, **kwargs):
        with self._lock:
            if self._sock is None:
                self._connect()
            rid = next(self._ids)
            msg = json.dumps({"id": rid, "method": method, "args": list(args), "kwargs": kwargs}).encode() + b"\n"
            try:
                self._sock.sendall(msg)
                while b"\n" not in self._buf:
                    chunk = self._sock.recv(1 << 16)
                    if not chunk:
                        raise ConnectionError("twin closed the control connection")
                    self._buf += chunk
            except OSError as e:
                self.close()
                raise TwinClientError(f"twin {self.sockpath}: {method}: {e}") from None
            line, _, self._buf = self._buf.partition(b"\n")
        reply = json.loads(line)
        if reply.get("id") != rid:
            raise TwinClientError(f"twin {self.sockpath}: reply out of order for {method}")
        if "error" in reply:
            raise TwinClientError(f"{method}: {reply['error']}")
        return reply.get("result")

    # --- SimpleSwitchThriftAPI-style methods ------------------------------------
    def table_add(self, table, action, match_keys, action_params=None, prio=None):
        return self._call("table_add", table, action, [str(k) for k in match_keys],
                          [str(p) for p in (action_params or [])], prio)

    def table_set_default(self, table, action, action_params=None):
        return self._call("table_set_default", table, action, [str(p) for p in (action_params or [])])

    def table_clear(self, table):
        return self._call("table_clear", table)

    def register_read(self, register_name, index=None):
        return self._call("register_read", register_name, index)

    def register_write(self, register_name, index, value):
        return self._call("register_write", register_name, int(index), int(value))

    def register_reset(self, register_name):
        return self._call("register_reset", register_name)

    def counter_read(self, counter_name, index) -> CounterValue:
        return CounterValue(*self._call("counter_read", counter_name, int(index)))

    def set_queue_depth(self, queue_depth, egress_port=None, priority=None):
        return self._call("set_queue_depth", int(queue_depth), egress_port)

    def set_queue_rate(self, rate, egress_port=None, priority=None):
        return self._call("set_queue_rate", None if rate is None else float(rate), egress_port)

    def reset_state(self):
        return self._call("reset_state")

    # --- twin extras -------------------------------------------------------------
    def set_queue_rate_bps(self, bps, egress_port=None, priority=None):
        """Drain at `bps` bits/s (each frame holds the port len*8/bps s);
        None: unlimited.  BMv2 has only set_queue_rate (packets/s)."""
        return self._call("set_queue_rate_bps", None if bps is None else float(bps), egress_port)

    def set_ctrl_lane(self, on: bool, egress_port=None):
        """Control frames (ACKs, CNPs) ahead of data at the port, as BMv2's
        control-frame queue puts them (topologies.switch.twin.queues)."""
        return self._call("set_ctrl_lane", bool(on), egress_port)

    def set_netem(self, params: NetemParams, egress_port=None, direction: str = "egress"):
        """netem on a port: after its egress queue, or (direction "ingress")
        on what arrives there before the pipeline; all zero turns it off."""
        return self._call("set_netem", params.as_dict(), egress_port, direction)

    def ping(self) -> str:
        return self._call("ping")

    def stats(self) -> dict:
        return self._call("stats")

    def dump(self) -> dict:
        return self._call("dump")

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def __enter__(self) -> TwinClient:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class LocalTwinClient(TwinClient):
    """TwinClient for a switch core in this process (twin.core.SwitchCore:
    the simulation's switches): every request goes through the control
    protocol's handler as a JSON line, as the process would read it, and the
    reply comes back the same way, so a call means exactly what it means
    over the socket."""

    def __init__(self, switch):
        self.switch = switch
        self.sockpath = f"<{switch.name}>"
        self._ids = itertools.count(1)
        self._sock = None

    def _call(self, method: str, *args, **kwargs):
        rid = next(self._ids)
        line = json.dumps({"id": rid, "method": method, "args": list(args), "kwargs": kwargs})
        reply = json.loads(json.dumps(handle_request(self.switch, line)))
        if "error" in reply:
            raise TwinClientError(f"{method}: {reply['error']}")
        return reply.get("result")
