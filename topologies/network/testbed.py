"""The network a run uses: Mininet hosts, switch processes (twin or BMv2),
links with rate and delay (link_control.py), the control plane, the hosts'
processes, the switches' health and dumps, and a teardown that leaves
nothing behind.

    net = TestbedNetwork(topo, placed_jobs, target="auto", run_dir=Path(...),
                         ecn=EcnParams(...), symphony=SymphonyParams(...))
    with net:
        net.popen("h1", [...]); net.dump_switches(run_dir / "switches")

The jobs come placed (topologies.spec.placement); the control-plane plan is
computed once, before anything is built, so a job the switches cannot track
fails the start early, as does a stale BMv2 program
(topologies.switch.targets.bmv2_program_stale).  Rates, delays, state files
and interface names: docs/topologies.md.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

from mininet.log import setLogLevel
from mininet.net import Mininet

from topologies.network import health, shield
from topologies.network.link_control import LinkControl, NetworkError
from topologies.network.links import DEFAULT_MTU, LinkInfo, link_infos, mtu_for, netem_available
from topologies.network.names import PREFIX, switch_ifname
from topologies.network.nodes import ShellError, SoftSwitch, SymHost, SymLink, bmv2_switch_class
from topologies.network.shell import remove_by_prefix
from topologies.network.state import StateFile, kill_netns_processes, kill_pid, unused_id
from topologies.spec.netem import NetemParams
from topologies.spec.placement import PlacedJob
from topologies.spec.topo import TopoSpec
from topologies.switch import controlplane as cp
from topologies.switch.bmv2 import free_tcp_port
from topologies.switch.params import EcnParams, SymphonyParams
from topologies.switch.targets import BMV2_JSON, bmv2_program_stale, resolve_target

HOST_PREFIX_LEN = 8           # hosts live in 10.0.0.0/8 (one subnet, static ARP)
DEFAULT_ECN = EcnParams()
KILLED_EXIT_S = 5.0           # a process SIGKILLed is gone by then (else it hangs in the kernel: said, not waited on)
DEFAULT_SYMPHONY = SymphonyParams()


class TestbedNetwork:
    """One network (module docstring).  Nothing is built before start() (or
    `with`); its link names are known at once.  NetworkError (one line)
    when it cannot be built or changed as asked."""

    __test__ = False        # not a pytest test class, despite the name

    def __init__(self, topo: TopoSpec, jobs: Sequence[PlacedJob] = (), *, target: str = "auto",
                 run_dir: Path | str | None = None, ecn: EcnParams = DEFAULT_ECN,
                 symphony: SymphonyParams = DEFAULT_SYMPHONY, json_path: str | None = None,
                 thrift_base: int = 9090, seed: int = 0, frame_bytes: int | None = None, switch_bin: str | None = None):
        self.topo = topo
        self.jobs = list(jobs)
        self.requested_target = target
        self.target: str | None = None
        self.id = unused_id()
        self.run_dir = Path(run_dir) if run_dir else Path(f"/tmp/{PREFIX}-{self.id}")
        self.ecn = ecn
        self.symphony = symphony
        self.json_path = Path(json_path) if json_path else BMV2_JSON    # bmv2: the compiled program
        self.thrift_base = thrift_base
        self.seed = seed            # the twins' draws: ECN marking, delay lines
        # the jobs' largest data frame: every link's MTU fits it (links.mtu_for),
        # bmv2's packets/s queue rates count frames of this size
        self.frame_bytes = frame_bytes
        self.mtu = mtu_for(frame_bytes)
        # the switch program: simple_switch's path (bmv2), the Python that runs the twin (soft)
        self.switch_bin = switch_bin
        self.warnings: list[str] = []
        self.net: Mininet | None = None
        self.state: StateFile | None = None
        self.plans: dict[str, cp.SwitchPlan] = {}
        self.clients: dict = {}
        self.procs: list[subprocess.Popen] = []
        self.netns_inodes: set[int] = set()
        self._probes: dict = {}         # switch -> health.ControlProbe (hung_switches)
        self._stopped = False
        self._old_sigterm = None
        # link names known before start(): Mininet names a host end
        # <host>-eth<port>, a switch end gets the prefixed name of names.switch_ifname
        self.link_control = LinkControl(topo, link_infos(topo, self._ifname), self._pexec, self.clients,
                                        self.mtu, self._packet_bytes)

    @property
    def links(self) -> dict[str, LinkInfo]:
        """Link name -> LinkInfo (its interfaces, its rate as set now)."""
        return self.link_control.links

    @property
    def via(self) -> str | None:
        """How link delays and netem jitter are applied (links.delay_via), from start()."""
        return self.link_control.via

    def netns_name(self, host: str) -> str:
        """`ip netns` name of a host's namespace (`ip netns exec` works on it)."""
        return f"{PREFIX}-{self.id}-{host}"

    def _ifname(self, node: str, port: int) -> str:
        if self.topo.is_switch(node):
            return switch_ifname(self.id, node, port)
        return f"{node}-eth{port}"

    # --- life cycle -----------------------------------------------------------
    def __enter__(self) -> TestbedNetwork:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self) -> TestbedNetwork:
        if os.geteuid() != 0:
            raise NetworkError("the network needs root (Mininet, namespaces): run with sudo")
        self.target = resolve_target(self.requested_target)
        self.link_control.set_target(self.target, netem_available())
        if self.target == "bmv2":
            stale = bmv2_program_stale(self.json_path)
            if stale:
                raise NetworkError(stale)
        self.plans = cp.plan(self.topo, self.jobs, self.symphony, self._packet_bytes)
        shield.remember(self)       # from here on a teardown is owed (shield.stop_live)
        self._install_sigterm()
        try:
            self._start()
        except ShellError as exc:       # a node's shell died or hung: one line, as every other refusal
            self.stop()
            raise NetworkError(str(exc)) from None
        except BaseException:
            self.stop()
            raise
        return self

    def _install_sigterm(self) -> None:
        """SIGTERM becomes an exception in the main thread, so `with` (or the
        caller's finally) tears the network down; only when nobody else has
        claimed SIGTERM."""
        if threading.current_thread() is not threading.main_thread():
            return
        if signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None):
            def on_term(signum, frame):
                raise SystemExit(128 + signum)
            self._old_sigterm = signal.signal(signal.SIGTERM, on_term)

    def _start(self) -> None:
        setLogLevel(os.environ.get("SYMPHONY_MININET_LOG", "error"))
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self._claim_state()
        switch_cls = SoftSwitch if self.target == "soft" else bmv2_switch_class()
        self.net = Mininet(topo=None, switch=switch_cls, host=SymHost, link=SymLink, controller=None,
                           build=False, autoSetMacs=False, waitConnected=False)
        for h in self.topo.hosts:
            node = self.net.addHost(h.name, ip=f"{h.ip}/{HOST_PREFIX_LEN}", mac=h.mac)
            self.state.add_pid(node.pid, f"shell {h.name}")
            self.state.add_netns(node.pid, h.name)
            self.netns_inodes.add(os.stat(f"/proc/{node.pid}/ns/net").st_ino)
            # a name for Mininet's anonymous namespace: `ip netns` shows it with
            # the project prefix, and the name pins its inode, so cleanup after
            # a crash can never mistake another namespace for it
            r = subprocess.run(["ip", "netns", "attach", self.netns_name(h.name), str(node.pid)],
                               capture_output=True, text=True)
            if r.returncode:
                raise NetworkError(f"ip netns attach {self.netns_name(h.name)}: {r.stderr.strip()}")
        shield.phase("network")        # (a test signals here: hosts up, switches not yet)
        for s in self.topo.switches:
            node = self.net.addSwitch(s.name, **self._switch_params(s))
            self.state.add_pid(node.pid, f"shell {s.name}")
        for link in self.topo.links:
            mn = self.net.addLink(link.node1, link.node2, port1=link.port1, port2=link.port2)
            info = self.links[link.name]
            if (mn.intf1.name, mn.intf2.name) != (info.intf1, info.intf2):
                raise NetworkError(f"link {link.name}: Mininet named its ends {mn.intf1.name}, {mn.intf2.name}")
        self.net.build()
        self.warnings += self.link_control.configure()
        for sw in self.net.switches:
            sw.start([])            # its pid goes into the state file as the process starts
        self._static_arp()
        self._control_plane()
        self.link_control.twin_delays()
        self.link_control.check()

    def _claim_state(self) -> None:
        """The network's state file, before any name exists.  Its id was
        picked unused in __init__; if another lab claimed it since, the
        network takes another (nothing is built yet)."""
        for _ in range(100):
            try:
                self.state = StateFile(self.id, f"{PREFIX}{self.id}")
                return
            except FileExistsError:
                self.id = unused_id()
                self.link_control.links = link_infos(self.topo, self._ifname)
        raise NetworkError("no unused network id")

    def _switch_params(self, s) -> dict:
        params = {"net_id": self.id, "run_dir": str(self.run_dir), "queue_depth": self.topo.queue_depth,
                  "ctl_dir": str(self.state.make_sock_dir()), "state": self.state}
        if self.switch_bin:
            params["sw_bin"] = self.switch_bin
        if self.target == "soft":
            params.update(seed=self.seed)
        else:
            params.update(device_id=s.device_id, thrift_port=free_tcp_port(self.thrift_base + s.device_id),
                          json_path=str(self.json_path))
        return params

    # --- links (link_control.LinkControl) ------------------------------------------
    def netem_commands(self, link: str, p: NetemParams) -> list[tuple[str | None, list[str]]]:
        """(host or None, tc arguments) of a netem on both ends of a link."""
        return self.link_control.netem_commands(link, p)

    def set_link_netem(self, link: str, delay_ms: float | None = None, jitter_ms: float = 0.0,
                       loss_pct: float = 0.0, distribution: str = "uniform", correlation_pct: float = 0.0,
                       reorder_pct: float = 0.0) -> None:
        """netem on a link, both directions (LinkControl.set_netem)."""
        self.link_control.set_netem(link, delay_ms, jitter_ms, loss_pct, distribution, correlation_pct,
                                    reorder_pct)

    def set_link_rate(self, link: str, rate_mbit: float) -> None:
        """Squeeze or restore a link (LinkControl.set_rate)."""
        self.link_control.set_rate(link, rate_mbit)

    def link_delays(self) -> dict:
        """For meta.json: each link's delay as applied and how (LinkControl.delays)."""
        return self.link_control.delays()

    def _pexec(self, host: str, *cmd: str) -> tuple[str, str, int]:
        return self.net[host].pexec(*cmd)

    # --- hosts -----------------------------------------------------------------------
    def _static_arp(self) -> None:
        for host, entries in cp.arp_entries(self.topo).items():
            node = self.net[host]
            for ip, mac in entries:
                node.setARP(ip, mac)

    def popen(self, host: str, args: list[str], **kw) -> subprocess.Popen:
        """A process on a Mininet host (its own session, so teardown can kill
        its group), tracked for teardown.  stdout/stderr default to DEVNULL
        (Mininet's default PIPE blocks a chatty process nobody reads)."""
        kw.setdefault("stdout", subprocess.DEVNULL)
        kw.setdefault("stderr", subprocess.DEVNULL)
        kw.setdefault("stdin", subprocess.DEVNULL)
        proc = self.net[host].popen(list(args), **kw)
        self.procs.append(proc)
        self.state.add_pid(proc.pid, f"popen {host} {os.path.basename(str(args[0]))}")
        return proc

    def cmd(self, host: str, *args: str, timeout: float = 30) -> subprocess.CompletedProcess:
        """Run a short command on a host and wait for it."""
        proc = self.net[host].popen(list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    stdin=subprocess.DEVNULL)
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
        return subprocess.CompletedProcess(args, proc.returncode, out.decode(errors="replace"),
                                           err.decode(errors="replace"))

    # --- switches ------------------------------------------------------------------
    def _control_plane(self) -> None:
        for sw in self.net.switches:
            client = sw.client()
            self.clients[sw.name] = client
            cp.install(client, self.plans[sw.name], self.ecn, self.symphony, cp.rate_unit(self.target))

    def dead_switches(self) -> list[tuple[str, int]]:
        """(name, exit code) of every switch whose process has exited."""
        return health.dead(self.net.switches if self.net else [])

    def hung_switches(self, unresponsive_s: float = health.UNRESPONSIVE_S) -> list[tuple[str, str]]:
        """(name, why) of every switch that still runs but does not serve
        (health.hung).  Cheap enough to call every 0.1-0.5 s: a /proc read
        and a non-blocking look at one ping per switch."""
        return health.hung(self.net.switches if self.net else [], self._probes, unresponsive_s)

    def dump_switches(self, out_dir: Path | str) -> dict[str, Path]:
        """switches/<name>.json of every switch (controlplane.write_dumps)."""
        return cp.write_dumps(self.clients, self.plans, self.target, out_dir)

    @property
    def _packet_bytes(self) -> int:
        return self.frame_bytes or cp.ASSUMED_PACKET_BYTES

    def describe(self) -> dict:
        """What was built (for the network CLI)."""
        return {"id": self.id, "target": self.target, "kind": self.topo.kind,
                "links": {k: asdict(v) for k, v in self.links.items()},
                "jobs": [asdict(j) for j in self.jobs], "warnings": list(self.warnings), **self.link_delays(),
                "mtu": self.mtu or DEFAULT_MTU,
                "params": {"queue_depth_pkts": self.topo.queue_depth, **self.topo.params}}

    # --- teardown ------------------------------------------------------------------
    def stop(self) -> None:
        """Remove everything this network made; idempotent.  SIGINT and
        SIGTERM wait until it is done, whichever thread receives them
        (shield.held: a second Ctrl-C must not leave half a network); a stop
        cut short before it could hold them (a signal in the very instant it
        began) leaves the network live for the command's shield.stop_live()."""
        try:
            with shield.held():
                if not self._stopped:
                    self._teardown()
                    self._stopped = True
                    shield.forget(self)
        finally:
            if self._old_sigterm is not None and threading.current_thread() is threading.main_thread():
                signal.signal(signal.SIGTERM, self._old_sigterm)
                self._old_sigterm = None

    def _teardown(self) -> None:
        errors = []
        for proc in self.procs:
            if proc.poll() is None:
                kill_pid(proc.pid, None, signal.SIGTERM)
        deadline = time.monotonic() + 1.0
        for proc in self.procs:
            try:
                proc.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                kill_pid(proc.pid, None, signal.SIGKILL)
                try:
                    proc.wait(KILLED_EXIT_S)
                except subprocess.TimeoutExpired:
                    errors.append(f"pid {proc.pid} still there {KILLED_EXIT_S:g} s after SIGKILL")
        for probe in self._probes.values():
            probe.close()
        for client in self.clients.values():
            try:
                client.close()      # its sockets (Bmv2Client: p4-utils' Thrift connections)
            except Exception as exc:
                errors.append(f"closing a switch client: {exc}")
        if self.net is not None:
            for sw in self.net.switches:
                try:
                    sw.stop_process()
                except Exception as exc:
                    errors.append(f"{sw.name}: {exc}")
        shield.phase("teardown")       # (a test signals here: in the middle of it)
        if self.state is not None:
            # Mininet's own stop() deletes every interface through the node
            # shells, slowly; killing everything in the hosts' namespaces makes
            # the kernel drop those namespaces with their veth ends, and the
            # prefixed root-namespace ends go by name below.
            kill_netns_processes(self.netns_inodes)
            for entry in self.state.data["pids"]:
                kill_pid(entry["pid"], entry.get("start"))
        if self.net is not None:
            for node in self.net.hosts + self.net.switches:
                try:
                    node.terminate()        # closes the node's pty, reaps its shell
                except Exception as exc:
                    errors.append(f"{node.name}: {exc}")
        if self.state is not None:
            remove_by_prefix(f"{PREFIX}-{self.id}-", f"{PREFIX}{self.id}")
            self.state.remove()
        if errors:
            print("teardown: " + "; ".join(errors), file=sys.stderr)
