"""What keeps a teardown whole: signals held off while it runs, the
networks of this process not yet torn down, and the phases a test can
signal at.  Standard library only: the command line imports it before
anything else.

- ``held()``: SIGINT and SIGTERM are noted, not acted on, until the block
  ends; then each goes to the handler that was there before (a runner's
  Ctrl-C still interrupts it, after the teardown).  Python runs signal
  handlers in the main thread whichever thread the kernel delivered the
  signal to, so blocking the signals in the main thread (pthread_sigmask)
  does not hold them off in a process with other threads (a runner's
  monitors, its progress bar): a KeyboardInterrupt was raised in the middle
  of the teardown and left half a network.  Only the main thread can change
  handlers; in another thread the block runs as it is.
- ``remember``/``forget``/``live``: a network is remembered from its start
  until its teardown is complete, so a teardown cut short before it could
  hold the signals off (a signal in the very instant it began) is done again
  by the command's last ``stop_live()``.
- ``phase(name)``: where this process is (``current_phase``: a hang's
  report says it); ``during(name)``: a phase within another, for a block.
  SIGNAL_AT_ENV="<phase>:<SIGNAL>[,<phase>:<SIGNAL>...]" sends the signal
  to this process as the phase begins (each entry once): the tests stop
  real runs at each phase with it (PHASES).
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

HELD = (signal.SIGINT, signal.SIGTERM)
SIGNAL_AT_ENV = "SYMPHONY_SIGNAL_AT"
# the phases of `experiments run`, in order: the command's imports, its
# start-up (handlers installed, nothing built), the network being built,
# the agents being started, the run (every agent started), the records
# (agents gone, switches dumped), the teardown (inside it), the analysis,
# and within it the prediction (the simulation's workers started)
PHASES = ("imports", "startup", "network", "agents", "running", "records", "teardown", "analysis", "prediction")

_live: dict[int, Any] = {}
_started: dict[int, Any] = {}
_fired: set[int] = set()
_phase: dict[str, Any] = {"name": "imports", "since": time.monotonic()}


@contextmanager
def held() -> Iterator[None]:
    """A block no SIGINT or SIGTERM cuts short (module docstring)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pending: list[int] = []
    old: dict[int, Any] = {}
    try:
        for sig in HELD:
            old[sig] = signal.signal(sig, lambda signum, frame: pending.append(signum))
        yield
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)
        _deliver(pending, old)


def _deliver(pending: list[int], handlers: dict[int, Any]) -> None:
    """Each held signal to its handler, in order; the first exception a
    handler raised (an interrupt) is raised after all had theirs."""
    first: BaseException | None = None
    for sig in pending:
        handler = handlers[sig]
        try:
            if callable(handler):
                handler(sig, None)
            elif handler == signal.SIG_DFL:
                signal.raise_signal(sig)        # the default action: the process ends, teardown done
        except BaseException as exc:           # every handler runs; the first exception wins
            first = first or exc
    if first is not None:
        raise first


def remember(network: Any) -> None:
    _live[id(network)] = network
    _started[id(network)] = network


def started() -> list[Any]:
    """Every network started in this process, torn down or not."""
    return list(_started.values())


def forget(network: Any) -> None:
    _live.pop(id(network), None)


def live() -> list[Any]:
    """The networks started in this process whose teardown is not complete."""
    return list(_live.values())


def stop_live(stop: Callable[[Any], None] = lambda net: net.stop()) -> list[str]:
    """Tear down every network still live; problems, one line each."""
    problems = []
    for network in live():
        try:
            stop(network)
        except Exception as exc:
            problems.append(f"network {getattr(network, 'id', '?')}: {type(exc).__name__}: {exc}")
    return problems


def current_phase() -> str:
    return f"{_phase['name']} (for {time.monotonic() - _phase['since']:.0f} s)"


def planned(spec: str | None = None) -> list[tuple[str, int]]:
    """SIGNAL_AT_ENV's (phase, signal number) entries; ValueError names a
    bad one."""
    spec = os.environ.get(SIGNAL_AT_ENV, "") if spec is None else spec
    out = []
    for entry in filter(None, (x.strip() for x in spec.split(","))):
        name, _, sig = entry.partition(":")
        if name not in PHASES:
            raise ValueError(f"{SIGNAL_AT_ENV}: unknown phase {name!r} (phases: {', '.join(PHASES)})")
        try:
            out.append((name, signal.Signals[sig or "SIGINT"].value))
        except KeyError:
            raise ValueError(f"{SIGNAL_AT_ENV}: unknown signal {sig!r} in {entry!r}") from None
    return out


def phase(name: str) -> None:
    """This process enters a phase (module docstring)."""
    _phase.update(name=name, since=time.monotonic())
    if SIGNAL_AT_ENV not in os.environ:
        return
    for i, (at, sig) in enumerate(planned()):
        if at == name and i not in _fired:
            _fired.add(i)
            os.kill(os.getpid(), sig)


@contextmanager
def during(name: str) -> Iterator[None]:
    """A phase within another (the prediction within the analysis): the
    one before is the current one again after the block, however it ends."""
    before = dict(_phase)
    try:
        phase(name)
        yield
    finally:
        _phase.update(before)
