"""The jitter injector: performs the schedule's actions
(``experiments.jitter.schedule.actions``, pure) when they are due, against a
network object (TestbedNetwork or a fake with the same methods).

It acts only in ``tick()``, so the runner drives it from its supervision loop
and the tests drive it with a virtual clock.  Each action performed is
appended to jitter_applied.jsonl with its wall-clock time (ns, CLOCK_REALTIME,
like the agents' records).  Network methods used: ``set_link_rate``,
``popen`` (cross traffic) and, where netem runs (tc netem or the twin's
delay lines), ``set_link_netem``, whose delay None puts the link's own delay
back.  A line's ``via`` says how a netem entry was applied.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from contract.events import now_ns
from experiments.jitter.schedule import NO_NETEM, netem_kwargs, to_jsonl
from experiments.jitter.schedule import actions as plan_actions
from topologies.network.links import netem_available
from topologies.network.shell import stop_child


class InjectorError(RuntimeError):
    """A jitter action could not be performed (the run is then failed)."""


def netem_support(net: Any, probe: Callable[[], bool] = netem_available) -> tuple[bool, str]:
    """(usable, why not) for netem jitter on this machine and network."""
    if not hasattr(net, "set_link_netem"):
        return False, "the network has no netem control (set_link_netem)"
    if not probe():
        return False, NO_NETEM
    return True, ""


class Blasters:
    """Cross traffic as the emulation sends it: a blaster process
    (experiments.jitter.blaster) on the source host per entry."""

    def __init__(self, net: Any, python: str = sys.executable):
        self.net = net
        self.python = python
        self.procs: dict[int, subprocess.Popen] = {}

    def start(self, ev: dict) -> None:
        p = ev["params"]
        args = [self.python, "-m", "experiments.jitter.blaster", "--dst", p["dst_ip"],
                "--rate-mbit", f"{p['rate_mbit']:g}", "--duration", f"{ev['end_s'] - ev['start_s']:g}",
                "--size", str(p["packet_bytes"])]
        if p.get("ect"):
            args.append("--ect")
        self.procs[ev["id"]] = self.net.popen(ev["src"], args, stdout=subprocess.DEVNULL,
                                              stderr=subprocess.DEVNULL)

    def stop(self, ev_id: int) -> None:
        stop_child(self.procs.pop(ev_id, None), 2)

    def running(self) -> list[int]:
        return list(self.procs)


class Injector:
    """cross: what sends the cross traffic (start(event), stop(id),
    running()); the emulation's blaster processes by default."""

    def __init__(self, net: Any, events: list[dict], applied_path: str | os.PathLike | None = None,
                 python: str = sys.executable, clock: Callable[[], float] = time.monotonic,
                 wall_ns: Callable[[], int] = now_ns, cross: Any = None):
        self.net = net
        self.events = {ev["id"]: ev for ev in events}
        self.actions = plan_actions(events)
        self.next_index = 0
        self.clock = clock
        self.wall_ns = wall_ns
        self.t0: float | None = None
        self.cross = cross if cross is not None else Blasters(net, python)
        self.netem_on: set[int] = set()
        self.squeezed: dict[str, float] = {}     # link -> base rate, while squeezed
        self._log = open(applied_path, "a", encoding="utf-8", buffering=1) if applied_path else None

    # --- timeline ------------------------------------------------------------
    def start(self, t0: float | None = None) -> None:
        """t0: the clock reading the schedule's times count from (the agents' start)."""
        self.t0 = self.clock() if t0 is None else t0

    def elapsed(self) -> float:
        assert self.t0 is not None, "start() first"
        return self.clock() - self.t0

    def next_due(self) -> float | None:
        """Seconds after t0 of the next action, None when all are done."""
        if self.next_index >= len(self.actions):
            return None
        return self.actions[self.next_index]["t"]

    def tick(self) -> list[dict]:
        """Perform every action that is due; returns them."""
        done = []
        now = self.elapsed()
        while self.next_index < len(self.actions) and self.actions[self.next_index]["t"] <= now:
            act = self.actions[self.next_index]
            self.next_index += 1
            self._perform(act)
            done.append(act)
        return done

    # --- actions ---------------------------------------------------------------
    def _perform(self, act: dict) -> None:
        op = act["op"]
        begun = self.wall_ns()
        try:
            if op == "set_rate":
                self._set_rate(act["link"], act["rate_mbit"])
            elif op == "cross_start":
                self.cross.start(self.events[act["event"]])
            elif op == "cross_stop":
                self.cross.stop(act["event"])
            elif op == "netem_start":
                ev = self.events[act["event"]]
                self.net.set_link_netem(ev["link"], **netem_kwargs(ev["params"]))
                self.netem_on.add(ev["id"])
            elif op == "netem_stop":
                ev = self.events[act["event"]]
                self.net.set_link_netem(ev["link"], None, 0.0, 0.0)
                self.netem_on.discard(ev["id"])
            else:
                raise InjectorError(f"unknown jitter action {op!r}")
        except InjectorError:
            raise
        except Exception as exc:
            self._record(act, begun, error=str(exc))
            raise InjectorError(f"jitter: {op} at t={act['t']:g}s failed: {exc}") from exc
        self._record(act, begun)

    def _set_rate(self, link: str, rate: float) -> None:
        base = self._base_rate(link)
        self.net.set_link_rate(link, rate)
        if base is not None and rate != base:
            self.squeezed[link] = base
        else:
            self.squeezed.pop(link, None)

    def _base_rate(self, link: str) -> float | None:
        for ev in self.events.values():
            if ev.get("link") == link and "base_rate_mbit" in ev.get("params", {}):
                return ev["params"]["base_rate_mbit"]
        return None

    def _record(self, act: dict, begun_ns: int, error: str | None = None) -> None:
        """t: when the action was done (wall ns); t_begun: when it was begun,
        so t - t_begun is what performing it cost (a switch's control call,
        a tc on a host), apart from how late the loop came to it."""
        if self._log is None:
            return
        rel = round(self.clock() - self.t0, 6) if self.t0 is not None else None
        line = {**act, "t_sched_s": act["t"], "t": self.wall_ns(), "t_rel_s": rel, "t_begun": begun_ns}
        if error:
            line["error"] = error
        self._log.write(json.dumps(line, sort_keys=True, separators=(",", ":")) + "\n")

    # --- end -----------------------------------------------------------------
    def stop(self, restore: bool = True) -> list[str]:
        """Stop cross traffic and undo squeezes and netem still in force (the
        run ended before the schedule did).  Returns what could not be undone;
        never raises, since it runs during teardown."""
        problems = []
        for ev_id in self.cross.running():
            try:
                self.cross.stop(ev_id)
            except Exception as exc:
                problems.append(f"cross {ev_id}: {exc}")
        if restore:
            for link, base in list(self.squeezed.items()):
                try:
                    begun = self.wall_ns()
                    self.net.set_link_rate(link, base)
                    self._record({"t": None, "op": "restore_rate", "link": link, "rate_mbit": base}, begun)
                    del self.squeezed[link]
                except Exception as exc:
                    problems.append(f"restore {link}: {exc}")
            for ev_id in list(self.netem_on):
                try:
                    self.net.set_link_netem(self.events[ev_id]["link"], None, 0.0, 0.0)
                    self.netem_on.discard(ev_id)
                except Exception as exc:
                    problems.append(f"netem {ev_id}: {exc}")
        if self._log is not None and not self._log.closed:
            self._log.close()
        return problems


def write_schedule(path: str | os.PathLike, events: list[dict]) -> None:
    """jitter.jsonl, written (and synced) before anything is applied."""
    path = Path(path)
    with open(path, "x", encoding="utf-8") as f:
        f.write(to_jsonl(events))
        f.flush()
        os.fsync(f.fileno())
