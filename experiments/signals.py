"""Ctrl-C and SIGTERM during an experiment: the first unwinds the run in
progress through its teardown (KeyboardInterrupt in the main thread); later
ones are only noted, so the cleanup in progress finishes and the runner then
exits at once.  Inside ``shielded()`` (writing the summary) even the first
is only noted."""

from __future__ import annotations

import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


class Signals:
    def __init__(self):
        self.count = 0
        self.shield = 0
        self.old: dict[int, Any] = {}

    @contextmanager
    def shielded(self) -> Iterator[None]:
        """A block that an interrupt does not cut short (it is counted)."""
        self.shield += 1
        try:
            yield
        finally:
            self.shield -= 1

    def install(self) -> None:
        for sig in (signal.SIGINT, signal.SIGTERM):
            self.old[sig] = signal.signal(sig, self._handle)

    def restore(self) -> None:
        for sig, handler in self.old.items():
            signal.signal(sig, handler)

    def _handle(self, signum, frame) -> None:
        self.count += 1
        if self.count > 1:
            print("\nsecond interrupt: cleaning up and exiting", file=sys.stderr, flush=True)
        elif self.shield:
            print("\ninterrupt: writing the summary, then exiting", file=sys.stderr, flush=True)
        else:
            raise KeyboardInterrupt

    @property
    def interrupted(self) -> bool:
        return self.count > 0

    @property
    def hurry(self) -> bool:
        return self.count > 1
