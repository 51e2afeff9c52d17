"""A plain namespace lab: N hosts, each in its own network namespace, joined by
veth pairs through one Linux bridge, optionally rate-limited with tc htb.

It is the smallest real network the agents can run on, without Mininet or a
P4 switch: the foundation tests and ``experiments.bench.agents`` use it.  All names carry
the project prefix and a lab id; ``close()`` removes every one of them.
"""

from __future__ import annotations

import os
import signal
import subprocess
from dataclasses import dataclass, field

from topologies.network.intf import host_sysctls, offloads_off, switch_port_commands
from topologies.network.links import htb
from topologies.network.names import PREFIX, check_ifname
from topologies.network.shell import remove_by_prefix, sh
from topologies.network.state import StateFile

SUBNET = "10.77.{lab}.{host}"

@dataclass
class LabHost:
    index: int
    netns: str
    ip: str
    root_if: str      # bridge side, in the root namespace
    procs: list[subprocess.Popen] = field(default_factory=list)


class Lab:
    def __init__(self, n_hosts: int, rate_mbit: float | None = None, bridge: bool = True):
        """bridge=False leaves the root sides of the veths unbridged, for a
        switch process (the twin) to take; their offloads are off so raw
        sockets see wire-size frames."""
        if not 1 <= n_hosts <= 200:
            raise ValueError(f"n_hosts must be in 1..200, got {n_hosts}")
        # a state file like a network's, before any name: `make clean-net`
        # leaves a live lab alone and, after a crash, removes it by pid and name
        self.state = StateFile.claim("namespace lab")
        self.id = self.state.id
        self.bridge = check_ifname(f"{PREFIX}{self.id}br") if bridge else None
        self.rate_mbit = rate_mbit
        self.hosts: list[LabHost] = []
        third = int(self.id, 16) % 250 + 1
        try:
            if self.bridge:
                sh("ip", "link", "add", self.bridge, "type", "bridge")
                sh("ip", "link", "set", self.bridge, "up")
            for i in range(n_hosts):
                self.hosts.append(self._add_host(i, SUBNET.format(lab=third, host=i + 1)))
        except BaseException:
            self.close()
            raise

    def _add_host(self, i: int, ip: str) -> LabHost:
        netns = f"{PREFIX}-{self.id}-h{i}"
        root_if = check_ifname(f"{PREFIX}{self.id}h{i}")
        peer = check_ifname(f"{PREFIX}{self.id}h{i}p")
        host = LabHost(i, netns, ip, root_if)
        sh("ip", "netns", "add", netns)
        sh("ip", "link", "add", root_if, "type", "veth", "peer", "name", peer)
        sh("ip", "link", "set", peer, "netns", netns)
        if self.bridge:
            sh("ip", "link", "set", root_if, "master", self.bridge)
        else:
            for args in switch_port_commands(root_if):
                sh(*args, check=False)
        sh("ip", "link", "set", root_if, "up")
        inns = ("ip", "netns", "exec", netns)
        sh(*inns, "ip", "link", "set", peer, "name", "eth0")
        sh(*inns, "ip", "addr", "add", f"{ip}/24", "dev", "eth0")
        if not self.bridge:
            sh(*inns, *offloads_off("eth0"), check=False)
        sh(*inns, "ip", "link", "set", "eth0", "up")
        sh(*inns, "ip", "link", "set", "lo", "up")
        for args in host_sysctls():
            sh(*inns, *args)
        if self.rate_mbit:
            for args in htb("eth0", self.rate_mbit):
                sh(*inns, "tc", *args)
            for args in htb(root_if, self.rate_mbit):
                sh("tc", *args)
        return host

    def exec(self, i: int, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        return sh("ip", "netns", "exec", self.hosts[i].netns, *args, check=check)

    def popen(self, i: int, args: list[str], **kw) -> subprocess.Popen:
        """Start a process inside host i's namespace, in its own process group
        so close() can stop it and its children."""
        proc = self.state.spawn(["ip", "netns", "exec", self.hosts[i].netns, *args], f"lab host h{i}", **kw)
        self.hosts[i].procs.append(proc)
        return proc

    def close(self) -> None:
        for host in self.hosts:
            for proc in host.procs:
                if proc.poll() is None:
                    try:
                        os.killpg(proc.pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                    proc.wait()
        remove_by_prefix(f"{PREFIX}-{self.id}-", f"{PREFIX}{self.id}")
        self.hosts = []
        self.state.remove()

    def __enter__(self) -> Lab:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
