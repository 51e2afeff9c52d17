"""Commands on the machine's namespaces and interfaces, one definition each:
listing them and removing this project's by name prefix.  A namespace is
removed by killing what still runs in it, then `ip netns del` (a process
left inside would keep its veth ends alive)."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Sequence


def stop_child(proc: subprocess.Popen | None, grace_s: float = 2.0) -> None:
    """End a child this code started: SIGTERM, then SIGKILL after grace_s;
    reaped either way.  Nothing for None or a child already gone."""
    if proc is None or proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(grace_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def sh(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(args, check=check, capture_output=True, text=True)


def list_netns() -> list[str]:
    out = sh("ip", "netns", "list", check=False).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def list_links() -> list[str]:
    """Interfaces of the root namespace (a veth end without its @peer)."""
    out = sh("ip", "-o", "link", "show", check=False).stdout
    return [line.split(":", 2)[1].strip().split("@")[0] for line in out.splitlines()]


def remove_netns(prefix: str, keep: Sequence[str] = (), among: Sequence[str] | None = None) -> list[str]:
    """Kill what runs in, then delete, every namespace named with this
    prefix (but none with a prefix in keep; only those in `among` when
    given).  Returns the names removed."""
    removed = []
    for ns in _among(list_netns(), among):
        if ns.startswith(prefix) and not _kept(ns, keep):
            for pid in sh("ip", "netns", "pids", ns, check=False).stdout.split():
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except (ProcessLookupError, ValueError):
                    pass
            sh("ip", "netns", "del", ns, check=False)
            removed.append(ns)
    return removed


def remove_links(prefix: str, keep: Sequence[str] = (), among: Sequence[str] | None = None) -> list[str]:
    """Delete every root-namespace interface named with this prefix (but
    none with a prefix in keep; only those in `among` when given).  Returns
    the names removed."""
    removed = []
    for link in _among(list_links(), among):
        if link.startswith(prefix) and not _kept(link, keep):
            sh("ip", "link", "del", link, check=False)
            removed.append(link)
    return removed


def remove_by_prefix(netns_prefix: str, link_prefix: str, keep: Sequence[str] = (),
                     among: Sequence[str] | None = None) -> list[str]:
    """Namespaces, then interfaces, with these prefixes (only names in
    `among` when given)."""
    return remove_netns(netns_prefix, keep, among) + remove_links(link_prefix, keep, among)


def _among(names: list[str], among: Sequence[str] | None) -> list[str]:
    if among is None:
        return names
    allowed = set(among)
    return [n for n in names if n in allowed]


def _kept(name: str, keep: Sequence[str]) -> bool:
    return any(k and name.startswith(k) for k in keep)
