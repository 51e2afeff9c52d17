"""Mininet node and link classes for the testbed.

Switches stay in the root namespace (their interfaces are what the twin's raw
sockets or simple_switch open), so their interface names carry the project
prefix and the network id: ``sym<id><switch>e<port>`` (<= 15 characters,
checked).  Hosts keep Mininet's ``<host>-eth0`` inside their own namespace.

- SoftSwitch: one twin process per switch (python3 -m topologies.switch.twin).
- bmv2_switch_class(): p4-utils' P4Switch with the same naming, imported
  when asked for because p4-utils is not installed everywhere.
"""

from __future__ import annotations

import contextlib
import os
import select
import socket
import subprocess
import sys
import time
from pathlib import Path

from mininet.link import Link
from mininet.node import Host, Switch

from topologies.network.health import BMV2_PING, TWIN_PING, ControlProbe
from topologies.network.intf import host_sysctls, ipv6_off, offloads_off, switch_port_commands
from topologies.network.names import PREFIX, switch_ifname
from topologies.network.shell import stop_child
from topologies.network.state import StateFile, sock_path_problem
from topologies.switch.bmv2 import PRIORITY_QUEUES, Bmv2Client, simple_switch_command, simple_switch_log_options
from topologies.switch.targets import REPO_ROOT
from topologies.switch.twin.client import TwinClient

TWIN_START_TIMEOUT_S = 10.0
BMV2_START_TIMEOUT_S = 10.0
# a node's shell (mnexec, then bash) prints its first prompt within this (a
# few ms on a well machine); each command it runs for the network (sysctls,
# ARP entries, tc) answers within SHELL_COMMAND_S
SHELL_START_S = 10.0
SHELL_COMMAND_S = 60.0
SHELL_POLL_S = 0.05
PROMPT = chr(127)           # Mininet's shell prompt, the end of every command's output


class ShellError(RuntimeError):
    """A node's shell died or stopped answering (one line: the node, why)."""


def quiet(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(args, capture_output=True, text=True)


def tune_root_intf(name: str) -> list[str]:
    """Offloads and IPv6 off on a root-namespace switch interface: the switch
    reads raw frames, which must be MTU-sized with real checksums, and IPv6
    router solicitations would only add noise.  Returns problems."""
    problems = []
    for args in switch_port_commands(name):
        r = quiet(*args)
        if r.returncode:
            problems.append(f"{' '.join(args[:2])} {name}: {r.stderr.strip()}")
    return problems


def spawn_switch(name: str, args: list[str], log_path: Path, state: StateFile | None,
                 **popen_kw) -> subprocess.Popen:
    """Start a switch's process: its own session, stdout/stderr appended to
    log_path; through the network's state file when there is one, so its
    pid is recorded the moment the process exists, before anyone waits for
    it (a runner killed during the wait leaves nothing `make clean-net`
    cannot find)."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    kw = dict(stdin=subprocess.DEVNULL, start_new_session=True, **popen_kw)
    with open(log_path, "ab") as log:
        kw.update(stdout=log, stderr=log)
        if state is not None:
            return state.spawn(args, f"switch {name}", **kw)
        return subprocess.Popen(args, **kw)


def wait_switch_ready(what: str, proc: subprocess.Popen, ready, waiting_for: str, timeout: float,
                      log_path: Path) -> None:
    """Wait until ready() says the switch serves; RuntimeError (one line)
    when its process exits first or timeout passes."""
    deadline = time.monotonic() + timeout
    while not ready():
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with code {proc.returncode} at start (see {log_path})")
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} did not open {waiting_for} within {timeout:.0f} s (see {log_path})")
        time.sleep(0.05)


class BoundedShell:
    """Mininet waits on a node's shell without a bound: its pty's other end
    stays open in this process, so a shell that dies never ends the read (a
    host whose `mnexec` failed, "remount: Invalid argument", held a run and
    the suite for minutes).  Here every read of the shell waits at most
    SHELL_START_S (its first prompt) or SHELL_COMMAND_S (a command), and a
    shell that exits ends the wait at once: ShellError, naming the node, its
    exit code and what it printed.  Before the Mininet base in the bases."""

    _shell_deadline: float | None = None
    _shell_said = ""

    def startShell(self, mnopts=None):
        self._shell_deadline = time.monotonic() + SHELL_START_S
        self._shell_said = ""
        try:
            super().startShell(mnopts)
        except ShellError:
            self._close_pty()
            raise
        finally:
            self._shell_deadline = None

    def read(self, size=1024):
        if self.readbuf:
            return super().read(size)
        starting = self._shell_deadline is not None
        self._await_output(self._shell_deadline if starting else time.monotonic() + SHELL_COMMAND_S)
        data = super().read(size)
        if starting:
            # Mininet's start-up loop polls without a bound after a read that
            # did not end with the prompt: return only once more is readable
            self._shell_said += data
            if not data.endswith(PROMPT):
                self._await_output(self._shell_deadline)
        return data

    def waitReadable(self, timeoutms=None):
        if timeoutms is None and not self.readbuf:
            self._await_output(time.monotonic() + SHELL_COMMAND_S)
        return super().waitReadable(timeoutms)

    def _await_output(self, deadline: float) -> None:
        """Until the shell's pty has output; ShellError when the shell exits
        first or the deadline passes."""
        fd = self.stdout.fileno()
        while not select.select([fd], [], [], SHELL_POLL_S)[0]:
            code = self.shell.poll()
            if code is not None:
                said = " ".join((self._shell_said or "").split())[-300:] or "nothing"
                raise ShellError(f"{self.name}: its shell ({self.shell.args[0]}) exited with code {code} "
                                 f"{'as it started' if self._shell_deadline else 'during a command'}, "
                                 f"saying: {said}")
            if time.monotonic() > deadline:
                raise ShellError(f"{self.name}: its shell (pid {self.shell.pid}) printed nothing for "
                                 f"{SHELL_START_S if self._shell_deadline else SHELL_COMMAND_S:.0f} s")

    def _close_pty(self) -> None:
        """The pty and the shell of a node that never came up (Mininet does
        not know the node yet, so its teardown cannot)."""
        with contextlib.suppress(OSError):
            self.stdin.close()
        with contextlib.suppress(OSError):
            os.close(self.slave)
        if self.shell.poll() is None:
            stop_child(self.shell, 1.0)


class SymLink(Link):
    """A veth pair whose switch end gets the prefixed name."""

    def intfName(self, node, n):
        if hasattr(node, "port_ifname"):
            return node.port_ifname(n)
        return super().intfName(node, n)


class SymHost(BoundedShell, Host):
    """A host in its own namespace, set up for raw-frame switches: offloads
    off (else veth hands the switch 64 KB GSO frames with partial
    checksums), IPv6 off, the step-tag ports reserved."""

    def config(self, **params):
        r = super().config(**params)
        commands = [offloads_off(self.defaultIntf().name),
                    *(ipv6_off(conf) for conf in ("all", "default", "lo")), *host_sysctls()]
        for args in commands:
            self.cmd(*args)
        return r


class SwitchProcess(BoundedShell):
    """What both switch classes add to their Mininet base: prefixed
    interface names, the switch process they start (``proc``, their own
    child: its exit code), stopped with SIGTERM, then SIGKILL after a grace
    period; a shell whose waits are bounded (BoundedShell).  Before the
    Mininet base in the bases."""

    net_id: str
    proc: subprocess.Popen | None = None

    def port_ifname(self, port: int) -> str:
        return switch_ifname(self.net_id, self.name, port)

    def data_ports(self) -> dict[int, str]:
        return {port: intf.name for port, intf in sorted(self.intfs.items()) if port > 0}

    def returncode(self) -> int | None:
        return self.proc.poll() if self.proc else None

    def stop_process(self, grace_s: float = 2.0) -> None:
        stop_child(self.proc, grace_s)

    def stop(self, deleteIntfs=True):
        self.stop_process()
        super().stop(deleteIntfs)


class SymSwitch(SwitchProcess, Switch):
    """Base of the twin's switch: root namespace, prefixed interface names,
    a process to watch."""

    def __init__(self, name, net_id: str, run_dir: str, queue_depth: int = 64,
                 ctl_dir: str | None = None, state: StateFile | None = None, **params):
        params["inNamespace"] = False
        self.net_id = net_id
        self.state = state              # the network's: the process is recorded as it starts
        self.run_dir = Path(run_dir)
        # control sockets: the network's short directory (topologies.network.state),
        # not the run directory, whose path may exceed a socket path's 107 bytes
        self.ctl_dir = Path(ctl_dir) if ctl_dir else self.run_dir / "ctl"
        self.queue_depth = queue_depth
        self.proc: subprocess.Popen | None = None
        super().__init__(name, **params)

    @property
    def switch_pid(self) -> int | None:
        """The switch process's pid (an attribute, as p4-utils' P4Switch has it)."""
        return self.proc.pid if self.proc else None


class SoftSwitch(SymSwitch):
    """The software twin of the P4 switch, one process per switch."""

    target = "soft"

    def __init__(self, name, seed: int = 0, sw_bin: str | None = None, **params):
        self.seed = seed            # the twin's --seed: ECN marking draws, delay lines
        self.sw_bin = sw_bin or sys.executable      # the Python that runs the twin (P4Switch's sw_bin)
        super().__init__(name, **params)

    @property
    def control_path(self) -> str:
        return str(self.ctl_dir / f"{self.name}.sock")

    def start(self, controllers):
        problem = sock_path_problem(self.control_path)
        if problem:
            raise RuntimeError(f"twin of {self.name}: cannot use control socket {self.control_path}: {problem}")
        Path(self.control_path).parent.mkdir(parents=True, exist_ok=True)
        args = [self.sw_bin, "-m", "topologies.switch.twin", "--name", self.name,
                "--control", self.control_path, "--queue-depth", str(self.queue_depth), "--seed", str(self.seed)]
        for port, ifname in self.data_ports().items():
            args += ["--port", f"{port}={ifname}"]
        log_path = self.run_dir / "logs" / f"{self.name}.log"
        self.proc = spawn_switch(self.name, args, log_path, self.state, cwd=str(REPO_ROOT))
        wait_switch_ready(f"twin of {self.name}", self.proc, lambda: os.path.exists(self.control_path),
                          self.control_path, TWIN_START_TIMEOUT_S, log_path)

    def client(self):
        return TwinClient.wait(self.control_path, timeout=TWIN_START_TIMEOUT_S, proc=self.proc)

    def probe(self) -> ControlProbe:
        """Pings on the twin's control socket (topologies.network.health)."""
        return ControlProbe(socket.AF_UNIX, self.control_path, TWIN_PING)


def bmv2_switch_class():
    """P4Switch (p4-utils) with the testbed's naming and process tracking.

    What P4Switch itself does (p4utils/mininetlib/node.py): it builds the
    command line (`-i <port>@<intf>` per port, --thrift-port, --nanolog
    ipc:///tmp/bm-<device id>-log.ipc, --device-id, the JSON, --log-console
    when logging), starts it in the node's shell (`cmd &`, the pid echoed to
    a temporary file, kept in the attribute ``switch_pid``), waits until the
    pid lives and the Thrift port listens, and stop() SIGKILLs the pid.
    Bmv2Switch keeps the attribute and the checks, builds the command line
    as the conformance rig and experiments.bench.bmv2 do
    (topologies.switch.bmv2.simple_switch_command), and starts
    simple_switch itself, as SoftSwitch starts the twin: its own
    child (so ``returncode`` has the exit code), in its own session, with
    stdout/stderr in <run_dir>/logs/<switch>.log at log level warn (p4-utils'
    --log-console logs every packet at trace level, which costs most of
    simple_switch's packet rate), and with nanomsg addresses of its own
    (both defaults are per device id, so concurrent networks would share
    them).  It runs simple_switch with `-- --priority-queues 2`, the
    program's control-frame queue (topologies.switch.bmv2)."""
    # p4-utils is optional (only with the BMv2 toolchain): imported when a bmv2 network starts
    from p4utils.mininetlib.node import P4Switch  # noqa: PLC0415

    class Bmv2Switch(SwitchProcess, P4Switch):
        target = "bmv2"

        def __init__(self, name, net_id: str, run_dir: str, queue_depth: int = 64, ctl_dir: str | None = None,
                     thrift_port: int = 9090, json_path: str | None = None, log_level: str = "warn",
                     state: StateFile | None = None, **params):
            params["inNamespace"] = False
            self.net_id = net_id
            self.state = state
            self.run_dir = Path(run_dir)
            self.queue_depth = queue_depth
            self.log_level = log_level
            self.proc: subprocess.Popen | None = None
            device_id = params.pop("device_id")
            # priority queues: the program's control-frame queue (topologies.switch.bmv2)
            super().__init__(name, device_id=device_id, json_path=json_path, thrift_port=thrift_port,
                             log_enabled=False, priority_queues_num=PRIORITY_QUEUES, **params)
            self.nanomsg = None                     # no event log (p4-utils: /tmp/bm-<device id>-log.ipc)
            # notifications: in the network's control directory, which teardown and
            # `make clean-net` remove (a Unix socket path holds at most 107 bytes)
            self.ipc_path = (f"{ctl_dir}/{name}-notifications.ipc" if ctl_dir
                             else f"/tmp/{PREFIX}{net_id}{name}-notifications.ipc")

        @property
        def log_path(self) -> Path:
            return self.run_dir / "logs" / f"{self.name}.log"

        def add_arguments(self) -> list[str]:
            """The whole command line, target options included, from the one
            definition the conformance rig and experiments.bench.bmv2 use
            (topologies.switch.bmv2.simple_switch_command); its ports are
            P4Switch's: every interface without an IP address."""
            ports = {port: intf.name for port, intf in self.intfs.items() if not intf.IP()}
            return simple_switch_command(self.thrift_port, ports, str(self.json_path), self.ipc_path,
                                         device_id=self.device_id, options=simple_switch_log_options(self.log_level),
                                         binary=self.sw_bin)

        def start(self, controllers=None):
            args = self.add_arguments()
            self.proc = spawn_switch(self.name, args, self.log_path, self.state)
            self.switch_pid = self.proc.pid
            wait_switch_ready(f"simple_switch of {self.name}", self.proc, self.thrift_listening,
                              f"Thrift port {self.thrift_port}", BMV2_START_TIMEOUT_S, self.log_path)

        def stop_process(self, grace_s: float = 2.0) -> None:
            super().stop_process(grace_s)
            self.switch_pid = None          # P4Switch.stop has nothing left to kill
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.ipc_path)

        def client(self) -> Bmv2Client:
            return Bmv2Client.connect(self.thrift_port, self.name, json_path=self.json_path,
                                      timeout=BMV2_START_TIMEOUT_S, proc=self.proc)

        def probe(self) -> ControlProbe:
            """Pings on simple_switch's Thrift port (topologies.network.health)."""
            return ControlProbe(socket.AF_INET, ("127.0.0.1", self.thrift_port), BMV2_PING)

    return Bmv2Switch
