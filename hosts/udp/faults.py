"""Receive-side fault injection for tests (the job file's [faults] table):
drops, duplicates and reorders packets before the endpoint sees them.  Pure:
seeded, and the time is passed in.
"""

from __future__ import annotations

import math
import random

from hosts.udp.params import FaultParams


class FaultInjector:
    """Drops, duplicates and reorders received packets (each item is a tuple the
    caller hands on unchanged).  A packet picked for reordering is held back and
    delivered after the next packet, or after HOLD_S if none comes."""

    HOLD_S = 0.005

    def __init__(self, params: FaultParams, counters: dict, salt: int = 0):
        self.p = params
        self.rng = random.Random(params.seed * 1000003 + salt)
        self.counters = counters
        self.held = None
        self.held_since = math.inf

    def feed(self, item, now: float) -> list:
        r = self.rng.random
        if r() < self.p.drop:
            self.counters["fault_drop"] += 1
            return []
        out = [item]
        if r() < self.p.duplicate:
            self.counters["fault_dup"] += 1
            out.append(item)
        if self.held is None and r() < self.p.reorder:
            self.counters["fault_reorder"] += 1
            self.held, self.held_since = out.pop(), now
            return out
        if self.held is not None:
            out.append(self.held)
            self.held, self.held_since = None, math.inf
        return out

    def release(self, now: float) -> list:
        if self.held is not None and now - self.held_since >= self.HOLD_S:
            item, self.held, self.held_since = self.held, None, math.inf
            return [item]
        return []

    def next_release(self) -> float:
        return self.held_since + self.HOLD_S
