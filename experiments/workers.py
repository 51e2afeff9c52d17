"""Worker processes that never outlive the command that started them (the
simulation's runs: experiments.sim.predict, which a batch's prediction,
`model`, `--confirm` and a sweep's points all go through, and a batch's own
runs on the simulation target: experiments.parallel), and where a command's
tasks go (``using``: --jobs N local processes, or --workers ADDRESS, a Dask
scheduler's workers: experiments.remote).

- ``process_pool(n)``: a ProcessPoolExecutor of n workers.  When the block
  is left by an exception (Ctrl-C, SIGTERM taken as Ctrl-C, an error) every
  worker is SIGKILLed at once and the queued tasks are dropped, then the
  exception goes on: a bare ``with ProcessPoolExecutor`` waits for the
  running tasks first, minutes of simulation, and runs the queued ones too.
- A worker ignores SIGINT: Ctrl-C at a terminal reaches the whole process
  group, and the parent decides (one line, not a traceback per worker).
  SIGTERM ends a worker (the default, not the handler it inherited).
- A worker dies with its parent however the parent dies, SIGKILL included:
  on Linux the kernel SIGKILLs it then (prctl PR_SET_PDEATHSIG); elsewhere
  a thread of its own watches the parent's pid.  The parent-death signal
  comes when the *thread* that forked the worker ends: the pool forks in
  the thread that submits first, which must outlive the pool (a block in
  one function call, as predict's).
- A pool may have a ``Channel``: its tasks send lines to the parent as they
  go (a run's progress), and the parent tells them the batch is stopping.
  A task inside ``interruptible()`` takes SIGINT as Ctrl-C (a batch's run:
  it stops as in the runner's own process, its records kept); the parent
  sends it with ``interrupt``.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextvars
import ctypes
import gc
import importlib
import multiprocessing as mp
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from experiments.signals import Interrupted, signal_name
from topologies.network import shield

PR_SET_PDEATHSIG = 1        # linux/prctl.h
WATCH_S = 0.5               # the fallback watch's poll of the parent's pid
REAP_S = 2.0                # killed workers are reaped within this (SIGKILL is not waited on longer)
BLOCKED = (signal.SIGINT, signal.SIGTERM)


def _context():
    """fork on Linux (Python 3.11's default there, kept when the default
    changes): the workers are this process's own children, whose death
    signal and pid watch follow this process, not a fork server's."""
    return mp.get_context("fork") if sys.platform.startswith("linux") else mp.get_context()


def _die_with_parent() -> bool:
    """Ask the kernel to SIGKILL this process when its parent dies; False
    where it cannot (not Linux, no prctl)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        return ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _watch(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(WATCH_S)
    os._exit(1)


class Channel:
    """Between a pool's parent and its tasks, forked into every worker:
    lines the tasks say, and a flag the parent raises when the batch stops.
    The flag is shared memory without a lock: a worker killed while it
    reads leaves nothing held."""

    def __init__(self):
        ctx = _context()
        self.lines = ctx.SimpleQueue()
        self.stop = ctx.RawValue("b", 0)

    def drain(self) -> list[str]:
        """The lines said since the last drain (the parent's side)."""
        out = []
        while not self.lines.empty():
            out.append(self.lines.get())
        return out


_channel: Channel | None = None     # in a worker: its pool's channel


def tell(line: str) -> None:
    """In a worker, a line for the parent to say (its pool's channel)."""
    if _channel is not None:
        _channel.lines.put(line)


def stopping() -> bool:
    """In a worker: whether the parent said the batch stops."""
    return _channel is not None and bool(_channel.stop.value)


def _interrupted(signum, frame) -> None:
    # once: the run's own teardown is not cut short by a second SIGINT (the
    # terminal's Ctrl-C reaches the worker and the parent forwards one too)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    raise Interrupted(signal_name(signum))


@contextmanager
def interruptible() -> Iterator[None]:
    """In a worker, a block that SIGINT interrupts (module docstring);
    outside it SIGINT stays ignored (start_worker)."""
    signal.signal(signal.SIGINT, _interrupted)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def start_worker(parent: int, channel: Channel | None = None) -> None:
    """The pool's initializer, in each worker (module docstring)."""
    global _channel
    _channel = channel
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    # held since the fork (process_pool): a pending SIGINT is now dropped, a SIGTERM ends the worker
    signal.pthread_sigmask(signal.SIG_UNBLOCK, BLOCKED)
    if not _die_with_parent():
        threading.Thread(target=_watch, args=(parent,), name="parent-watch", daemon=True).start()
    if os.getppid() != parent:      # the parent died before the death signal was asked for
        os._exit(1)


@contextmanager
def _blocked() -> Iterator[None]:
    """SIGINT and SIGTERM blocked in this thread: a process forked meanwhile
    starts with them blocked, until start_worker has its handlers set; here
    they wait (or go to another thread) and are handled as usual after."""
    old = signal.pthread_sigmask(signal.SIG_BLOCK, BLOCKED)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _processes(pool: cf.ProcessPoolExecutor) -> list:
    # CPython's own record of the pool's processes: there is no public one
    return list((getattr(pool, "_processes", None) or {}).values())


def interrupt(pool: cf.ProcessPoolExecutor, channel: Channel) -> None:
    """Tell the pool's tasks the batch stops, and SIGINT every worker: a
    task inside interruptible() stops, one that has not begun sees the flag
    (raised first, so none starts after the signal has passed it)."""
    channel.stop.value = 1
    for p in _processes(pool):
        try:
            os.kill(p.pid, signal.SIGINT)
        except (OSError, TypeError):      # gone already, or never started
            pass


def kill(pool: cf.ProcessPoolExecutor) -> None:
    """Every worker SIGKILLed and reaped (up to REAP_S), the queued tasks
    dropped; no signal cuts it short (a second Ctrl-C is handled after)."""
    with shield.held():
        procs = _processes(pool)
        pool.shutdown(wait=False, cancel_futures=True)
        for p in procs:
            try:
                p.kill()
            except (OSError, ValueError):     # gone already, or closed
                pass
        deadline = time.monotonic() + REAP_S
        for p in procs:
            p.join(max(0.0, deadline - time.monotonic()))
        # and the pool's manager thread, which closes its wake-up pipe as it
        # ends: Python 3.11's exit hook writes to that pipe unlocked, so a
        # process exiting while the thread closes it printed a traceback
        # ("Bad file descriptor"; the lock CPython gh-125451 put round it is 3.12's)
        manager = getattr(pool, "_executor_manager_thread", None)
        if manager is not None:
            manager.join(max(0.0, deadline - time.monotonic()))


@contextmanager
def _frozen() -> Iterator[None]:
    """The parent's objects out of the collector's sight while workers fork
    (gc.freeze): a worker's collections then never write to the pages it
    shares with a parent that holds a batch's runs, so fork copies nothing."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


@contextmanager
def process_pool(workers: int, channel: Channel | None = None) -> Iterator[cf.ProcessPoolExecutor]:
    """A pool of `workers` processes (module docstring), with the channel
    if one is given; on a normal exit it waits for the tasks, as
    ProcessPoolExecutor does."""
    pool = cf.ProcessPoolExecutor(max_workers=workers, mp_context=_context(), initializer=start_worker,
                                  initargs=(os.getpid(), channel))
    try:
        with _blocked(), _frozen():
            # fork starts every worker on the first submit: here, with the signals blocked
            pool.submit(int)
        yield pool
        pool.shutdown(wait=True)        # inside: an interrupt while it waits kills them too
    except BaseException:
        kill(pool)
        raise


@dataclass(frozen=True)
class Setting:
    """Where a command's tasks go."""

    jobs: int | None = None     # local worker processes; None: one per core
    cluster: Any = None         # an experiments.remote.Cluster: its workers take the tasks instead


_setting: contextvars.ContextVar[Setting | None] = contextvars.ContextVar("experiments.workers", default=None)


def _current() -> Setting:
    return _setting.get() or Setting()


@contextmanager
def using(jobs: int | None = None, address: str | None = None) -> Iterator[None]:
    """For the block, tasks on `jobs` local processes or, given an address,
    on the workers of the Dask scheduler there (connected first: a bad
    address is experiments.cli_common.Refused, one line)."""
    # imported only when asked for: distributed costs a third of a second, and is an extra (pyproject.toml)
    cluster = importlib.import_module("experiments.remote").connect(address) if address else None
    token = _setting.set(Setting(jobs, cluster))
    try:
        yield
    finally:
        _setting.reset(token)
        if cluster is not None:
            cluster.close()


def local_jobs(tasks: int) -> int:
    """How many local worker processes `tasks` tasks get: --jobs, else one
    per core, never more than the tasks."""
    return max(1, min(tasks, _current().jobs or os.cpu_count() or 1))


def cluster() -> Any:
    """The Dask cluster the command's tasks go to, None for local processes."""
    return _current().cluster
