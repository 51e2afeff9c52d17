"""Finding a command's processes by pid through /proc (Linux), so a test
can say that none of them outlives it: its children (the simulation's
workers), or every process that inherited a marker from its environment
(workers orphaned by a parent that died)."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterable
from pathlib import Path

from topologies.network.state import alive

POLL_S = 0.05


def children(pid: int) -> list[int]:
    """The live processes whose parent is pid."""
    out = []
    for d in Path("/proc").iterdir():
        try:
            stat = (d / "stat").read_text() if d.name.isdigit() else ""
        except OSError:
            continue
        # after the command's name in parentheses (which may hold spaces): state, ppid
        if stat and int(stat.rsplit(")", 1)[1].split()[1]) == pid and alive(int(d.name), None):
            out.append(int(d.name))
    return out


def carrying(var: str, value: str) -> list[int]:
    """The live processes whose environment has var=value."""
    marker = f"{var}={value}".encode()
    out = []
    for d in Path("/proc").iterdir():
        try:
            if d.name.isdigit() and marker in (d / "environ").read_bytes().split(b"\0") and alive(int(d.name), None):
                out.append(int(d.name))
        except OSError:
            continue
    return out


def wait_for(count: int, pid: int, within_s: float) -> list[int]:
    """pid's children once it has count of them (or what it has after within_s)."""
    deadline = time.monotonic() + within_s
    while len(kids := children(pid)) < count and time.monotonic() < deadline:
        time.sleep(POLL_S)
    return kids


def gone_after(pids: Iterable[int], within_s: float) -> tuple[list[int], float]:
    """Polls until none of pids is alive, up to within_s: those still alive
    and the seconds it took."""
    t0 = time.monotonic()
    while True:
        left = [p for p in pids if alive(p, None)]
        if not left or time.monotonic() - t0 > within_s:
            return left, time.monotonic() - t0
        time.sleep(POLL_S / 5)


def kill_all(pids: Iterable[int]) -> None:
    """SIGKILL what a failed test left running (its own processes only)."""
    for p in pids:
        try:
            os.kill(p, signal.SIGKILL)
        except OSError:
            pass
