"""Ctrl-C and SIGTERM, from the moment ``python3 -m experiments`` starts.

- ``guarded(main)``: before anything else is imported, both signals raise
  ``Interrupted`` (a KeyboardInterrupt that names the signal), so one that
  arrives before a command has its own handling (while Mininet, matplotlib
  and the runner are imported) ends it with one line and exit 130, never a
  traceback.
- ``Signals``: a command's own handling.  The first signal unwinds the run
  in progress through its teardown (Interrupted in the main thread); later
  ones are only noted, so the cleanup in progress finishes and the runner
  then exits at once.  Inside ``shielded()`` (writing the summary) even the
  first is only noted.  A network's teardown holds every signal off itself
  (topologies.network.shield), whichever thread the kernel hands it to.
- A hang says where it is: SIGUSR1 dumps every thread's stack to stderr,
  and so does the runner by itself when it is still running WATCHDOG_S after
  the first signal (with the phase it is in).
"""

from __future__ import annotations

import faulthandler
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from contract import exits
from topologies.network import shield

SIGNALS = (signal.SIGINT, signal.SIGTERM)
# after the first signal the runner tears down one run, writes the summary
# and exits: seconds, a minute for a large batch's analysis.  Past this it
# is stuck somewhere, and the stacks say where.
WATCHDOG_S = 120.0


def signal_name(signum: int) -> str:
    return signal.Signals(signum).name


class Interrupted(KeyboardInterrupt):
    """A signal taken as Ctrl-C; ``signame`` says which it was."""

    def __init__(self, signame: str = "SIGINT"):
        super().__init__(signame)
        self.signame = signame


def _stderr():
    """stderr as faulthandler needs it (a file descriptor): the process's
    own when sys.stderr has none (captured, as under pytest)."""
    try:
        sys.stderr.fileno()
        return sys.stderr
    except (AttributeError, ValueError, OSError):
        return sys.__stderr__


def _raise(signum, frame) -> None:
    raise Interrupted(signal_name(signum))


def signame_of(exc: BaseException) -> str:
    """The signal an interrupt came from (a bare KeyboardInterrupt: SIGINT)."""
    return getattr(exc, "signame", "SIGINT")


def guarded(main: Callable[[], int], prog: str = "experiments") -> int:
    """main()'s exit code; SIGINT and SIGTERM raise Interrupted from now on,
    and one that reaches this far is one line and exit 130."""
    for sig in SIGNALS:
        signal.signal(sig, _raise)
    try:
        shield.phase("imports")
        return main()
    except KeyboardInterrupt as exc:
        print(f"{prog}: {exits.interrupted(signame_of(exc))} before it had started anything", file=sys.stderr)
        return exits.INTERRUPTED


class Signals:
    def __init__(self):
        self.count = 0
        self.shield = 0
        self.received: list[str] = []       # signal names, in order
        self.old: dict[int, Any] = {}
        self._watchdog: threading.Timer | None = None

    @contextmanager
    def shielded(self) -> Iterator[None]:
        """A block that an interrupt does not cut short (it is counted)."""
        self.shield += 1
        try:
            yield
        finally:
            self.shield -= 1

    def install(self) -> None:
        """Take SIGINT and SIGTERM (again, after someone else took them:
        restore() still puts back what was there first)."""
        first = not self.old
        for sig in SIGNALS:
            old = signal.signal(sig, self._handle)
            self.old.setdefault(sig, old)
        if first:
            faulthandler.register(signal.SIGUSR1, file=_stderr(), all_threads=True)
            shield.phase("startup")

    def restore(self) -> None:
        for sig, handler in self.old.items():
            signal.signal(sig, handler)
        if self.old:
            faulthandler.unregister(signal.SIGUSR1)
        self.old = {}
        if self._watchdog is not None:
            self._watchdog.cancel()

    def _handle(self, signum, frame) -> None:
        self.count += 1
        self.received.append(signal_name(signum))
        if self.count == 1:
            self._arm_watchdog()
        if self.count > 1:
            print(f"\nsecond interrupt ({signal_name(signum)}): cleaning up and exiting", file=sys.stderr, flush=True)
        elif self.shield:
            print(f"\ninterrupt ({signal_name(signum)}): writing the summary, then exiting", file=sys.stderr,
                  flush=True)
        else:
            raise Interrupted(signal_name(signum))

    def _arm_watchdog(self) -> None:
        def report() -> None:
            print(f"\nexperiments: still running {WATCHDOG_S:.0f} s after {self.received[0]}, in phase "
                  f"{shield.current_phase()}: every thread's stack follows", file=sys.stderr, flush=True)
            faulthandler.dump_traceback(file=_stderr(), all_threads=True)
        self._watchdog = threading.Timer(WATCHDOG_S, report)
        self._watchdog.daemon = True
        self._watchdog.start()

    @property
    def interrupted(self) -> bool:
        return self.count > 0

    @property
    def hurry(self) -> bool:
        return self.count > 1

    @property
    def names(self) -> str:
        """The signals received, each once in order of arrival ("SIGTERM",
        "SIGINT, SIGTERM"); "SIGINT" when none came through the handler (a
        KeyboardInterrupt raised otherwise)."""
        return ", ".join(dict.fromkeys(self.received)) or "SIGINT"

    @property
    def reason(self) -> str:
        """A run's reason when the signals ended it (meta.json)."""
        return f"interrupted by {self.names}"
