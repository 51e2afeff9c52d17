"""The network a run uses: Mininet hosts, switch processes (twin or BMv2),
links with rate and delay (tc netem where the kernel has sch_netem, else the
twin's delay lines; links.delay_via decides), the control plane, and a
teardown that leaves nothing behind.

    net = TestbedNetwork(topo, placed_jobs, target="auto", run_dir=Path(...),
                         ecn=EcnParams(...), symphony=SymphonyParams(...))
    with net:
        net.popen("h1", [...]); net.dump_switches(run_dir / "switches")

The jobs come placed (topologies.spec.placement); the control-plane plan is
computed once, before anything is built, so a job the switches cannot track
fails the start early.  Rates, delays, state files and interface names:
docs/topologies.md.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import asdict, replace
from pathlib import Path

from mininet.log import setLogLevel
from mininet.net import Mininet

from topologies.network.health import UNRESPONSIVE_S, stopped
from topologies.network.links import (
    DEFAULT_MTU,
    VIA_FALLBACK,
    VIA_NETEM,
    VIA_TWIN,
    LinkInfo,
    delay_via,
    htb,
    htb_rate,
    htb_root,
    link_infos,
    mtu_for,
    netem,
    netem_available,
    set_mtu,
)
from topologies.network.names import PREFIX, switch_ifname
from topologies.network.nodes import SoftSwitch, SymHost, SymLink, bmv2_switch_class, free_tcp_port, tune_root_intf
from topologies.network.shell import remove_by_prefix
from topologies.network.state import StateFile, kill_netns_processes, kill_pid, unused_id
from topologies.spec.netem import NetemParams
from topologies.spec.placement import PlacedJob
from topologies.spec.topo import TopoSpec
from topologies.switch import controlplane as cp
from topologies.switch.params import EcnParams, SymphonyParams
from topologies.switch.targets import BMV2_JSON, resolve_target

HOST_PREFIX_LEN = 8           # hosts live in 10.0.0.0/8 (one subnet, static ARP)
DEFAULT_ECN = EcnParams()
DEFAULT_SYMPHONY = SymphonyParams()


class NetworkError(RuntimeError):
    """The network could not be built as asked (one-line message)."""


class TestbedNetwork:
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
        self.json_path = Path(json_path) if json_path else BMV2_JSON
        self.thrift_base = thrift_base
        self.seed = seed            # the twins' draws: ECN marking, delay lines
        # the jobs' largest data frame: every link's MTU fits it (links.mtu_for),
        # bmv2's packets/s queue rates count frames of this size
        self.frame_bytes = frame_bytes
        self.mtu = mtu_for(frame_bytes)
        # the switch program: simple_switch's path (bmv2), the Python that runs the twin (soft)
        self.switch_bin = switch_bin
        self.via: str | None = None     # how delays and netem jitter are applied (links.delay_via)
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
        # known before start(): Mininet names a host end <host>-eth<port>, a
        # switch end gets the prefixed name of names.switch_ifname
        self.links: dict[str, LinkInfo] = link_infos(topo, self._ifname)

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
        self.via = delay_via(self.target, netem_available())
        self.plans = cp.plan(self.topo, self.jobs, self.symphony, self._packet_bytes)
        self._install_sigterm()
        try:
            self._start()
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
        for s in self.topo.switches:
            node = self.net.addSwitch(s.name, **self._switch_params(s))
            self.state.add_pid(node.pid, f"shell {s.name}")
        for link in self.topo.links:
            mn = self.net.addLink(link.node1, link.node2, port1=link.port1, port2=link.port2)
            info = self.links[link.name]
            if (mn.intf1.name, mn.intf2.name) != (info.intf1, info.intf2):
                raise NetworkError(f"link {link.name}: Mininet named its ends {mn.intf1.name}, {mn.intf2.name}")
        self.net.build()
        self._configure_links()
        for sw in self.net.switches:
            sw.start([])            # its pid goes into the state file as the process starts
        self._static_arp()
        self._control_plane()
        if self.via == VIA_TWIN:
            for name, info in self.links.items():
                if info.delay_ms:
                    self._twin_netem(name, NetemParams(info.delay_ms))
        self._check_links()

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
                self.links = link_infos(self.topo, self._ifname)
        raise NetworkError("no unused network id")

    def _switch_params(self, s) -> dict:
        params = {"net_id": self.id, "run_dir": str(self.run_dir), "queue_depth": self.topo.queue_depth,
                  "ctl_dir": str(self.state.make_sock_dir()), "state": self.state}
        if self.switch_bin:
            params["sw_bin"] = self.switch_bin
        if self.target == "soft":
            params.update(seed=self.seed)
        else:
            if not self.json_path.is_file():
                raise NetworkError(f"{self.json_path} is missing: build it with `make p4`")
            params.update(device_id=s.device_id, thrift_port=free_tcp_port(self.thrift_base + s.device_id),
                          json_path=str(self.json_path))
        return params

    # --- links -------------------------------------------------------------------
    def _configure_links(self) -> None:
        """Offloads/IPv6 off on the switch side; htb at the link rate on the
        host side of host links (the host's NIC); the link delay as netem on
        both ends where sch_netem exists (the twin's delay lines come with
        the control plane), else a warning."""
        if self.via == VIA_FALLBACK and any(link.delay_ms for link in self.topo.links):
            self.warnings.append("link delay requested but this kernel has no sch_netem and the bmv2 "
                                 "target has no delay line: links run without the delay")
        for name, info in self.links.items():
            for node, intf in self._ends(name):
                if self.mtu:
                    code, out, err = self._run(node, "ip", *set_mtu(intf, self.mtu))
                    if code:
                        raise NetworkError(f"link {name}: MTU {self.mtu} on {node or 'root'}:{intf}: "
                                           f"{(err or out).strip()}")
                if node is None:
                    self.warnings.extend(tune_root_intf(intf))
                elif info.rate_mbit:
                    for args in htb(intf, info.rate_mbit):
                        self._tc(node, *args)
            if info.delay_ms and self.via == VIA_NETEM:
                self.set_link_netem(name)

    def _ends(self, link: str) -> list[tuple[str | None, str]]:
        """(host name, or None for the root namespace; interface) of both ends."""
        info = self.links[link]
        return [(None if self.topo.is_switch(node) else node, intf)
                for node, intf in ((info.node1, info.intf1), (info.node2, info.intf2))]

    def netem_commands(self, link: str, p: NetemParams) -> list[tuple[str | None, list[str]]]:
        """(host or None, tc arguments) that put (or, all zero, take away) a
        netem on both ends of a link: under the htb class on a shaped host end."""
        shaped = self.links[link].rate_mbit
        return [(node, netem(intf, bool(node is not None and shaped), p)) for node, intf in self._ends(link)]

    def set_link_netem(self, link: str, delay_ms: float | None = None, jitter_ms: float = 0.0,
                       loss_pct: float = 0.0, distribution: str = "uniform", correlation_pct: float = 0.0,
                       reorder_pct: float = 0.0) -> None:
        """Delay (plus jitter), loss and reordering on a link, both
        directions (topologies.spec.netem.NetemParams); delay None: the
        link's configured delay.  All zero removes it.  tc netem or the
        twin's delay lines, as self.via says; NetworkError where neither
        exists (bmv2 without sch_netem)."""
        if link not in self.links:
            raise KeyError(f"no link {link!r} (links: {', '.join(self.links)})")
        delay = self.links[link].delay_ms if delay_ms is None else delay_ms
        p = NetemParams(delay, jitter_ms, loss_pct, distribution, correlation_pct, reorder_pct)
        if self.via == VIA_TWIN:
            self._twin_netem(link, p)
            return
        if self.via != VIA_NETEM:
            raise NetworkError("this kernel has no sch_netem and the bmv2 target has no delay line: "
                               "netem jitter cannot run here (use kind 'rate')")
        for node, args in self.netem_commands(link, p):
            if args[1] == "del":
                try:
                    self._tc(node, *args)
                except NetworkError:
                    pass            # no netem there: nothing to remove
            else:
                self._tc(node, *args)

    def _twin_netem(self, link: str, p: NetemParams) -> None:
        """netem in the twins: each switch end delays what it sends over the
        link (after its egress queue); a switch end facing a host also holds
        what the host sends, before its pipeline, so both directions of a
        host link are covered (a fabric link by each switch's egress)."""
        spec = self.topo.link(link)
        for node, port, other in ((spec.node1, spec.port1, spec.node2), (spec.node2, spec.port2, spec.node1)):
            if self.topo.is_switch(node):
                self.clients[node].set_netem(p, port)
                if not self.topo.is_switch(other):
                    self.clients[node].set_netem(p, port, "ingress")

    def link_delays(self) -> dict:
        """For meta.json: each link's delay as applied (ms, each direction)
        and how (links.delay_via)."""
        applied = self.via in (VIA_NETEM, VIA_TWIN)
        return {"link_delays_ms": {name: float(info.delay_ms) if applied else 0.0 for name, info in self.links.items()},
                "link_delays_via": self.via}

    def _run(self, host: str | None, *cmd: str) -> tuple[int, str, str]:
        """(exit code, stdout, stderr) of a command on a host or, None, in the root namespace."""
        if host is None:
            r = subprocess.run(cmd, capture_output=True, text=True)
            return r.returncode, r.stdout, r.stderr
        out, err, code = self.net[host].pexec(*cmd)
        return code, out, err

    def _tc(self, host: str | None, *args: str) -> None:
        code, out, err = self._run(host, "tc", *args)
        if code:
            raise NetworkError(f"tc {' '.join(args)} on {host or 'root'}: {(err or out).strip()}")

    def _check_links(self) -> None:
        """Each requested link property must show in tc's output (Mininet's
        TCLink only prints an error when a qdisc is missing)."""
        has_netem = self.via == VIA_NETEM
        for name, info in self.links.items():
            for node, intf in self._ends(name):
                if node is not None and info.rate_mbit:
                    out = self._run(node, "tc", "class", "show", "dev", intf)[1]
                    if "htb" not in out or "rate" not in out:
                        raise NetworkError(f"link {name}: htb rate {info.rate_mbit} Mb/s did not take effect "
                                           f"on {node}:{intf} ({out.strip() or 'no class'})")
                if info.delay_ms and has_netem:
                    out = self._run(node, "tc", "qdisc", "show", "dev", intf)[1]
                    if "netem" not in out:
                        raise NetworkError(f"link {name}: netem delay {info.delay_ms} ms did not take effect "
                                           f"on {node or 'root'}:{intf}")

    def set_link_rate(self, link: str, rate_mbit: float) -> None:
        """Squeeze or restore a link: the switch egress queue(s) of the link
        drain at the new rate; the host side (its NIC) is re-shaped."""
        if not isinstance(rate_mbit, (int, float)) or isinstance(rate_mbit, bool) or rate_mbit <= 0:
            raise ValueError(f"set_link_rate: rate must be a positive number of Mb/s, got {rate_mbit!r}")
        if link not in self.links:
            raise KeyError(f"no link {link!r} (links: {', '.join(self.links)})")
        info = self.links[link]
        spec = self.topo.link(link)
        for node, port, intf in ((spec.node1, spec.port1, info.intf1), (spec.node2, spec.port2, info.intf2)):
            if self.topo.is_switch(node):
                client = self.clients.get(node)
                if client is not None:
                    cp.set_port_rate(client, port, rate_mbit, cp.rate_unit(self.target), self._packet_bytes)
            else:
                if not info.rate_mbit:      # an unshaped host end gets its htb now
                    self._tc(node, *htb_root(intf))
                self._tc(node, *htb_rate(intf, rate_mbit))
        self.links[link] = replace(info, rate_mbit=rate_mbit)

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
        out = []
        for sw in (self.net.switches if self.net else []):
            rc = sw.returncode()
            if rc is not None:
                out.append((sw.name, rc))
        return out

    def hung_switches(self, unresponsive_s: float = UNRESPONSIVE_S) -> list[tuple[str, str]]:
        """(name, why) of every switch that still runs but does not serve:
        stopped (SIGSTOP or a tracer: /proc state T or t, reported at once),
        or a ping on its control socket unanswered for unresponsive_s
        seconds.  A dead switch is dead_switches()'s, not this.  Cheap
        enough to call every 0.1-0.5 s: a /proc read and a non-blocking
        look at one ping per switch (topologies.network.health)."""
        out = []
        for sw in (self.net.switches if self.net else []):
            if sw.returncode() is not None:
                continue
            state = stopped(sw.switch_pid)
            if state:
                out.append((sw.name, f"stopped (process {sw.switch_pid} in state {state}: "
                                     "SIGSTOP or a debugger)"))
                continue
            probe = self._probes.get(sw.name)
            if probe is None:
                probe = self._probes[sw.name] = sw.probe()
            waited = probe.waiting_s()
            if waited >= unresponsive_s:
                out.append((sw.name, f"did not answer on its control socket for {waited:.1f} s"))
        return out

    def dump_switches(self, out_dir: Path | str) -> dict[str, Path]:
        """switches/<name>.json: every counter and register of every switch."""
        out_dir = Path(out_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        written = {}
        for name, client in self.clients.items():
            data = cp.dump_switch(client, self.plans[name])
            data.update(switch=name, target=self.target)
            path = out_dir / f"{name}.json"
            path.write_text(json.dumps(data, indent=1, sort_keys=True))
            written[name] = path
        return written

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
        """Remove everything this network made; idempotent, signals held off
        until it is done (a second Ctrl-C must not leave half a network)."""
        if self._stopped:
            return
        self._stopped = True
        blocked = {signal.SIGINT, signal.SIGTERM}
        in_main = threading.current_thread() is threading.main_thread()
        if in_main:
            old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, blocked)
        try:
            self._teardown()
        finally:
            if in_main:
                if self._old_sigterm is not None:
                    signal.signal(signal.SIGTERM, self._old_sigterm)
                signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)

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
                proc.wait()
        for probe in self._probes.values():
            probe.close()
        for client in self.clients.values():
            close = getattr(client, "close", None)
            if close:
                try:
                    close()
                except Exception:
                    pass
        if self.net is not None:
            for sw in self.net.switches:
                try:
                    sw.stop_process()
                except Exception as exc:
                    errors.append(f"{sw.name}: {exc}")
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
