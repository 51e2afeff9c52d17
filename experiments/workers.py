"""Worker processes that never outlive the command that started them (the
simulation's runs: experiments.sim.predict, which a batch's prediction,
`model`, `--confirm` and a sweep's points all go through).

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
"""

from __future__ import annotations

import concurrent.futures as cf
import ctypes
import multiprocessing as mp
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

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


def start_worker(parent: int) -> None:
    """The pool's initializer, in each worker (module docstring)."""
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


def kill(pool: cf.ProcessPoolExecutor) -> None:
    """Every worker SIGKILLed and reaped (up to REAP_S), the queued tasks
    dropped; no signal cuts it short (a second Ctrl-C is handled after)."""
    with shield.held():
        # CPython's own record of the pool's processes: there is no public one
        procs = list((getattr(pool, "_processes", None) or {}).values())
        pool.shutdown(wait=False, cancel_futures=True)
        for p in procs:
            try:
                p.kill()
            except (OSError, ValueError):     # gone already, or closed
                pass
        deadline = time.monotonic() + REAP_S
        for p in procs:
            p.join(max(0.0, deadline - time.monotonic()))


@contextmanager
def process_pool(workers: int) -> Iterator[cf.ProcessPoolExecutor]:
    """A pool of `workers` processes (module docstring); on a normal exit it
    waits for the tasks, as ProcessPoolExecutor does."""
    pool = cf.ProcessPoolExecutor(max_workers=workers, mp_context=_context(), initializer=start_worker,
                                  initargs=(os.getpid(),))
    try:
        with _blocked():
            # fork starts every worker on the first submit: here, with the signals blocked
            pool.submit(int)
        yield pool
        pool.shutdown(wait=True)        # inside: an interrupt while it waits kills them too
    except BaseException:
        kill(pool)
        raise
