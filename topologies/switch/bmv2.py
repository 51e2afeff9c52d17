"""The control plane's client for BMv2: p4-utils' SimpleSwitchThriftAPI made
strict and quiet.

p4-utils' Thrift API (p4utils/utils/thrift_API.py) wraps every call in
``handle_bad_input``, which prints an error (a refused table entry, a wrong
register index, an unknown name) and returns None, so a control plane built
on it carries on with a half-filled switch.  It also prints every table
entry it adds, and its connection helper (BMv2's bmpy_utils.thrift_connect)
calls sys.exit(1) when nothing listens on the Thrift port yet.

Bmv2Client calls the undecorated methods (``functools.wraps`` keeps them as
``__wrapped__``), so the switch's error comes back as a Bmv2Error naming the
call and the error code; it keeps their prints off stdout; ``counter_read``
returns a CounterValue(packets, bytes) as the twin's client does (p4-utils
returns a (bytes, packets) tuple); ``connect`` waits until the switch
answers, turning p4-utils' SystemExit into a retry.  p4-utils is imported
inside ``connect`` only: it is installed only with the BMv2 toolchain.

p4-utils opens two Thrift connections per client (the standard and
multicast clients share one, simple_switch's own client has the other) and
keeps no handle to close them: ``close`` closes both, so a network's teardown
and the conformance rig leave no socket for the collector (a ResourceWarning,
an error under ``-W error``).

The module also holds what simple_switch needs to run the program: its
priority queues (below, and p4/README.md, "On BMv2"), its command line and a
free port for its Thrift server.
"""

from __future__ import annotations

import contextlib
import inspect
import io
import socket
import sys
import time
from typing import NamedTuple

# simple_switch's egress queues count and pace packets, not bytes: the program
# (p4/v1model/main.p4, SYM_V1_CTRL_*) puts frames of at most CTRL_FRAME_BYTES
# that are not ECN-capable (ACKs, CNPs, TCP's pure ACKs) in priority queue
# CTRL_PRIORITY of their port, so they do not take a data packet's slot; the
# control plane paces that queue as if its frames were CTRL_FRAME_BYTES long.
# simple_switch needs PRIORITY_QUEUES queues per port (SIMPLE_SWITCH_TARGET_ARGS,
# after `--`), else it drops those frames.
CTRL_FRAME_BYTES = 128
CTRL_PRIORITY = 1
PRIORITY_QUEUES = 2
SIMPLE_SWITCH_TARGET_ARGS = ("--priority-queues", str(PRIORITY_QUEUES))
IPV4_TOS_OFFSET = 15          # Ethernet header (14 bytes), then IPv4's version/IHL byte


def is_ctrl_frame(frame: bytes) -> bool:
    """The program's rule for the control-frame queue: at most
    CTRL_FRAME_BYTES and not ECN-capable (the twin's control lane uses it
    too: topologies.switch.twin.queues)."""
    return IPV4_TOS_OFFSET < len(frame) <= CTRL_FRAME_BYTES and frame[IPV4_TOS_OFFSET] & 3 == 0


# the methods this project calls that print what they did (redirecting
# stdout is process-wide, so only around these: set_queue_rate runs from the
# jitter injector's thread while the runner prints)
CHATTY = frozenset({"table_add", "table_set_default", "table_modify", "table_delete", "counter_read",
                    "counter_write", "counter_reset", "table_dump"})


class Bmv2Error(RuntimeError):
    """The switch refused a control-plane call (one-line message)."""


class CounterValue(NamedTuple):
    packets: int
    bytes: int


def describe(exc: BaseException) -> str:
    """A Thrift error with its code's name (InvalidTableOperation(code=1) ->
    'InvalidTableOperation TABLE_FULL'), else the exception's text."""
    code = getattr(exc, "code", None)
    kind = type(exc).__name__
    if code is not None and kind.startswith("Invalid"):
        module = sys.modules.get(type(exc).__module__)
        base = kind[len("Invalid"):]
        for enum in (f"{base}ErrorCode", f"{base.removesuffix('Operation')}ErrorCode"):
            names = getattr(getattr(module, enum, None), "_VALUES_TO_NAMES", None)
            if names and code in names:
                return f"{kind} {names[code]}"
        return f"{kind} code {code}"
    text = str(exc).strip()
    return f"{kind}: {text}" if text else kind


# simple_switch's options as the testbed runs it (docs/targets.md, "simple_switch's
# options"): warnings and errors on its console, which the network keeps as
# logs/<switch>.log and the runner points at when a switch dies; nothing per
# packet.  The log level is what matters most: simple_switch's default is trace,
# which in a build with logging macros formats a message per parser state, table
# and action of every packet.  Never --nanolog (the event logger, a message per
# packet event), --pcap, --debugger or --dump-packet-data: the testbed reads none.
def simple_switch_log_options(level: str = "warn") -> tuple[str, ...]:
    return ("--log-console", "--log-level", level)


def simple_switch_command(thrift_port: int, ports: dict[int, str], json_path: str, notifications_ipc: str,
                          device_id: int = 0, options: tuple[str, ...] | None = None,
                          binary: str = "simple_switch") -> list[str]:
    """simple_switch running the program on `ports` (number -> interface),
    with its own nanomsg notifications address (the default,
    /tmp/bmv2-<device id>-notifications.ipc, is shared by every simple_switch
    of that device id) and the program's priority queues; `options`: its
    logging and any more of simple_switch's own (default:
    simple_switch_log_options(), warnings and errors on the console; never
    none, which would leave simple_switch at its default level, trace);
    `binary`: which simple_switch (experiments.bench.bmv2 measures builds
    side by side)."""
    if options is None:
        options = simple_switch_log_options()
    args = [binary, "--thrift-port", str(thrift_port), "--device-id", str(device_id),
            "--notifications-addr", f"ipc://{notifications_ipc}", *options]
    for port, ifname in ports.items():
        args += ["-i", f"{port}@{ifname}"]
    return [*args, str(json_path), "--", *SIMPLE_SWITCH_TARGET_ARGS]


def free_tcp_port(preferred: int = 0) -> int:
    """The preferred port for a Thrift server when nothing listens there,
    else one the kernel picks (concurrent switches each need their own)."""
    for port in (preferred, 0):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return s.getsockname()[1]
    raise RuntimeError("no free TCP port for a switch's Thrift server")


def _listening(port: int, host: str = "127.0.0.1") -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


class Bmv2Client:
    """SimpleSwitchThriftAPI's methods, raising Bmv2Error instead of
    printing, and silent."""

    def __init__(self, api, name: str = "bmv2"):
        self.api = api
        self.name = name

    @classmethod
    def connect(cls, thrift_port: int, name: str = "bmv2", json_path: str | None = None,
                timeout: float = 10.0, proc=None) -> Bmv2Client:
        """Connect to simple_switch's Thrift server, retrying until it
        answers (simple_switch opens the port a moment after it starts) or
        `timeout`; a `proc` (Popen) that exits ends the wait at once."""
        # p4-utils is optional (installed only with the BMv2 toolchain)
        from p4utils.utils.sswitch_thrift_API import SimpleSwitchThriftAPI  # noqa: PLC0415

        deadline = time.monotonic() + timeout
        while True:
            try:
                # bmpy_utils prints its complaint to the stdout it saw at import
                # and Thrift logs its own: connect once the port accepts
                if not _listening(thrift_port):
                    raise ConnectionRefusedError("not listening")
                with contextlib.redirect_stdout(io.StringIO()):
                    return cls(SimpleSwitchThriftAPI(thrift_port, json_path=json_path), name)
            # bmpy_utils.thrift_connect calls sys.exit(1) while the port is closed
            except (SystemExit, Exception) as exc:
                if proc is not None and proc.poll() is not None:
                    raise Bmv2Error(f"{name}: simple_switch exited with code {proc.returncode} "
                                    f"before its Thrift port {thrift_port} opened") from None
                if time.monotonic() > deadline:
                    why = "not listening" if isinstance(exc, (SystemExit, OSError)) else describe(exc)
                    raise Bmv2Error(f"{name}: no Thrift server on port {thrift_port} "
                                    f"within {timeout:.0f} s ({why})") from None
                time.sleep(0.1)

    def __getattr__(self, method: str):
        attr = getattr(type(self.api), method, None)
        if not callable(attr):
            return getattr(self.api, method)
        fn = inspect.unwrap(attr)          # without p4-utils' handle_bad_input

        quiet = contextlib.redirect_stdout(io.StringIO()) if method in CHATTY else contextlib.nullcontext()

        def call(*args, **kwargs):
            try:
                with quiet:
                    return fn(self.api, *args, **kwargs)
            except Exception as exc:
                shown = ", ".join([*(repr(a) for a in args), *(f"{k}={v!r}" for k, v in kwargs.items())])
                raise Bmv2Error(f"{self.name}: {method}({shown}): {describe(exc)}") from None
        call.__name__ = method
        return call

    def counter_read(self, counter_name: str, index: int) -> CounterValue:
        byte_count, packet_count = self.__getattr__("counter_read")(counter_name, index)
        return CounterValue(int(packet_count), int(byte_count))

    def close(self) -> None:
        """Close p4-utils' Thrift connections (idempotent); a call after it
        raises Bmv2Error."""
        for client in (getattr(self.api, "client", None), getattr(self.api, "sswitch_client", None)):
            transport = getattr(getattr(client, "_iprot", None), "trans", None)
            if transport is not None:
                transport.close()
