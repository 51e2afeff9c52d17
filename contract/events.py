"""The agent record schema: the contract between agents, runner and analysis.

One event a line in ``agents/rank<r>.jsonl``.  Every event carries ``t``
(ns, CLOCK_REALTIME), ``kind``, ``iter`` and ``step``; the fields each kind
adds are listed in ``KIND_FIELDS``, those it may add (newer, so readers cope
without them) in ``OPTIONAL_FIELDS``.  Everything that writes or checks an
agent record imports this module, so the schema lives here only.

Kinds are only ever added: a reader must cope with records that lack a newer
kind (``ready`` came after the others: older records start at
``iter_start``) and must not take an agent's first event for its first step.
"""

from __future__ import annotations

import json
import os
import time
from typing import IO, Any

COMMON_FIELDS = ("t", "kind", "job", "rank", "iter", "step")

# kind -> fields it must carry besides COMMON_FIELDS
KIND_FIELDS: dict[str, tuple[str, ...]] = {
    # the agent's set-up is done (sockets bound, inputs and references drawn);
    # iter 0, step 0.  With a start file (hosts.agent --start-file) it now
    # waits for the run's start time; without one it starts at once.
    "ready": (),
    "iter_start": (),
    # k: step index inside the iteration (0 .. 2(N-1)-1); phase "rs" | "ag"
    "step_start": ("k", "phase", "send_chunk", "recv_chunk"),
    "step_end": ("k", "phase", "bytes"),
    # exact: the AllReduce result matched the reference sum; null when the
    # run carried no data to check (hosts.rank.SizedRing: the simulation at a
    # deployment's scale)
    "iter_end": ("exact",),
    # why: "timeout" | "gap" | "probe" (tail loss probe)
    "retransmit": ("offset", "length", "why"),
    # a CNP sent (dir "tx", by the receiver) or received (dir "rx", by the sender)
    "cnp": ("dir", "peer"),
    # DCQCN state of the sender after a change, rates in bit/s
    "rate": ("rc", "rt", "alpha"),
    # counters of dropped or odd packets, written at the end of a run
    # (optional: see OPTIONAL_FIELDS)
    "stats": ("counters",),
    # something failed: what it was waiting for, then the agent exits non-zero
    "error": ("reason",),
}

KINDS = tuple(KIND_FIELDS)

# kind -> fields it may carry (added later; readers must cope without them)
OPTIONAL_FIELDS: dict[str, tuple[str, ...]] = {
    # lateness: {"pacing": ..., "dcqcn_timer": ...}, each a contract.lateness
    # record: how late the agent's loop sent what only the pacer held, and
    # ran the DCQCN reaction point's timer events (the TCP transport: dcqcn_timer only)
    "stats": ("lateness",),
    # start (iteration 0 of an agent started by a start file only):
    # {"at_ns": the start time it read, "seen_ns": when it read it}, both ns
    # CLOCK_REALTIME; the event's own t is when its sleep until at_ns ended
    "iter_start": ("start",),
}


class SchemaError(ValueError):
    pass


def now_ns() -> int:
    return time.clock_gettime_ns(time.CLOCK_REALTIME)


def validate(event: dict[str, Any]) -> None:
    """Raise SchemaError naming the first problem of one event."""
    for name in COMMON_FIELDS:
        if name not in event:
            raise SchemaError(f"event lacks field '{name}': {event}")
    kind = event["kind"]
    if kind not in KIND_FIELDS:
        raise SchemaError(f"unknown event kind '{kind}'")
    if not isinstance(event["t"], int) or event["t"] <= 0:
        raise SchemaError(f"'t' must be a positive integer of ns: {event}")
    for name in ("iter", "step"):
        if not isinstance(event[name], int):
            raise SchemaError(f"'{name}' must be an integer: {event}")
    for name in KIND_FIELDS[kind]:
        if name not in event:
            raise SchemaError(f"{kind} event lacks field '{name}': {event}")
    for name in OPTIONAL_FIELDS.get(kind, ()):
        if name in event and not isinstance(event[name], dict):
            raise SchemaError(f"{kind} event's '{name}' must be an object: {event}")


class EventLog:
    """Append-only JSONL writer; each line is flushed so a kill loses at most
    the line being written (flush_each=False: buffered, for a writer that no
    one kills mid-run, such as the simulation's, whose lines come by the
    million)."""

    def __init__(self, path: str | os.PathLike, job: int, rank: int, flush_each: bool = True):
        self.job = job
        self.rank = rank
        self._flush = flush_each
        self._file: IO[str] = open(path, "a", encoding="utf-8", buffering=1 if flush_each else -1)

    def emit(self, kind: str, iter: int, step: int, t: int | None = None, **fields: Any) -> dict:
        event = {"t": t if t is not None else now_ns(), "kind": kind, "job": self.job,
                 "rank": self.rank, "iter": iter, "step": step, **fields}
        validate(event)
        self._file.write(json.dumps(event, separators=(",", ":")) + "\n")
        if self._flush:
            self._file.flush()
        return event

    def close(self) -> None:
        if not self._file.closed:
            self._file.close()

    def __enter__(self) -> EventLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
