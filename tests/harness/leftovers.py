"""Watching what a command under test creates machine-wide, so a test can
say that nothing of it is left when it exits (issue 24).

The command runs with a state directory of its own (SYMPHONY_STATE_DIR):
every lab it starts writes its state file there before it creates any name
(topologies.network.state), so a watcher polling that directory sees the id
of each lab and the processes it records, and other labs on the machine
(other tests, other people's runs) are never mistaken for it."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

from tests.harness.procs import carrying
from topologies.network.state import STATE_ENV, leftovers

POLL_S = 0.01


class LabWatcher:
    """Polls a state directory while a command runs: every lab id seen and
    every process its state file recorded."""

    def __init__(self, state_dir: Path):
        self.state_dir = state_dir
        self.ids: set[str] = set()
        self.pids: dict[int, dict] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def env(self, **extra: str) -> dict[str, str]:
        return {**os.environ, "SYMPHONY_STATE_DIR": str(self.state_dir), **extra}

    def __enter__(self) -> LabWatcher:
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(5)
        self._look()

    def _watch(self) -> None:
        while not self._stop.is_set():
            self._look()
            time.sleep(POLL_S)

    def _look(self) -> None:
        for path in self.state_dir.glob("*.json"):
            self.ids.add(path.stem)
            try:
                data = json.loads(path.read_text())
            except (OSError, ValueError):
                continue
            for entry in data.get("pids", []):
                self.pids[entry["pid"]] = entry

    def left(self, within_s: float = 5.0) -> list[str]:
        """What of the labs seen is still there (names, state files, socket
        directories, recorded or marked processes), after up to within_s for
        the kernel to drop what was killed a moment ago."""
        deadline = time.monotonic() + within_s
        while True:
            found = self._left()
            if not found or time.monotonic() > deadline:
                return found
            time.sleep(0.1)

    def _left(self) -> list[str]:
        found = [x for lab in sorted(self.ids) for x in leftovers(lab, list(self.pids.values()), self.state_dir)]
        found += [str(p) for p in self.state_dir.iterdir()]
        found += [f"pid {pid} (marked {STATE_ENV}={lab})" for lab in self.ids for pid in marked(lab)]
        return sorted(set(found))


def marked(lab: str) -> list[int]:
    """Live processes whose environment carries this lab's id."""
    return carrying(STATE_ENV, lab)
