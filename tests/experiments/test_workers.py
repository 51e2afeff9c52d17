"""experiments/workers.py: the simulation's worker processes never outlive
the command that started them (issue 52).  A real pool in a real process
(a small script whose two workers spin forever): SIGINT or SIGTERM to the
parent, or Ctrl-C to its whole process group, kills both workers at once
and ends the parent with exit 130 and no traceback; the parent SIGKILLed
takes its workers with it, by the kernel's parent-death signal and, where
that is absent, by the workers' own watch on its pid."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from contract import exits
from experiments import workers as W
from tests.harness import REPO
from tests.harness.procs import gone_after, kill_all

# each task prints its worker's pid, then spins: without the pool's handling
# nothing ever ends it (a bare ProcessPoolExecutor waits on it forever)
SCRIPT = r"""
import os, sys
from experiments import workers as W
from experiments.signals import guarded
if sys.argv[1] == "watch":
    W._die_with_parent = lambda: False      # as where prctl is absent
def spin(n):
    os.write(1, f"{os.getpid()}\n".encode())      # one write: the two workers' lines never interleave
    while True:
        pass
def main():
    try:
        with W.process_pool(2) as pool:
            for f in [pool.submit(spin, i) for i in range(4)]:
                f.result()
    except KeyboardInterrupt as exc:
        print(f"pool: interrupted ({getattr(exc, 'signame', 'SIGINT')})", file=sys.stderr)
        return 130
sys.exit(guarded(main))
"""
STOP_S = 2.0        # issue 52: every worker stopped within this of the signal
BOUND_S = 10.0      # the parent's exit, on a loaded machine


def start(how: str = "prctl") -> tuple[subprocess.Popen, list[int]]:
    """The script, in a session of its own (a process group to Ctrl-C), and
    its two workers' pids once both spin."""
    proc = subprocess.Popen([sys.executable, "-c", SCRIPT, how], cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        return proc, [int(proc.stdout.readline()) for _ in range(2)]
    except ValueError:      # no pid: it failed
        proc.kill()
        raise AssertionError(proc.communicate()[1][-2000:]) from None


def end(proc: subprocess.Popen, pids: list[int]) -> None:
    """Whatever a failed test left running: the workers first, which hold
    the parent's pipes open."""
    kill_all(pids)
    if proc.poll() is None:
        proc.kill()
        proc.communicate()


@pytest.mark.parametrize("sig, group", [("SIGINT", False), ("SIGTERM", False), ("SIGINT", True)],
                         ids=["SIGINT", "SIGTERM", "ctrl-c-to-the-group"])
def test_an_interrupt_kills_every_worker_at_once(sig, group):
    proc, pids = start()
    try:
        t0 = time.monotonic()
        if group:       # a terminal's Ctrl-C: every process of the group, the workers too
            os.killpg(proc.pid, signal.Signals[sig])
        else:
            proc.send_signal(signal.Signals[sig])
        left, took = gone_after(pids, BOUND_S)
        _, err = proc.communicate(timeout=BOUND_S)
        exited = time.monotonic() - t0
    finally:
        end(proc, pids)
    assert left == [] and took < STOP_S, (left, took)
    assert proc.returncode == exits.INTERRUPTED and exited < BOUND_S, err
    assert err.strip().splitlines() == [f"pool: interrupted ({sig})"]     # no traceback from a worker


@pytest.mark.parametrize("how", ["prctl", "watch"])
def test_the_workers_die_with_their_parent_killed(how):
    proc, pids = start(how)
    try:
        proc.kill()
        proc.wait(BOUND_S)
        left, took = gone_after(pids, BOUND_S)
    finally:
        end(proc, pids)
    assert left == [], f"orphaned workers {left} still running {took:.1f} s after their parent was SIGKILLed"
    assert took < (STOP_S if how == "prctl" else STOP_S + W.WATCH_S), took


def test_a_pool_left_normally_waits_for_its_tasks():
    with W.process_pool(2) as pool:
        futures = [pool.submit(pow, 2, n) for n in range(5)]
    assert [f.result() for f in futures] == [1, 2, 4, 8, 16]
