"""How late something ran against its schedule: a histogram that agents (the
pacer, DCQCN's timers) and twins (their egress queues) keep and write into
their records, and the experiments' fidelity monitors merge and judge.

Buckets are geometric, four a factor of two (each about 19 % wider than the
one below), from FLOOR_S up; bucket 0 holds everything under FLOOR_S.  A
quantile is the upper edge of the bucket it falls in (never below the true
value, at most 19 % above it), capped at the largest sample.  Adding a
sample costs one log2.

The record (``as_dict``): ``n``, ``max_ms``, ``mean_ms``, ``p50_ms``,
``p90_ms``, ``p99_ms`` and ``buckets`` ({bucket index: count}, only the
non-empty ones, keys as strings for JSON), which ``from_dict`` reads back
and ``merge`` adds up.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

FLOOR_S = 10e-6             # bucket 0: under 10 us
PER_OCTAVE = 4              # buckets per factor of two
QUANTILES = (("p50_ms", 0.5), ("p90_ms", 0.9), ("p99_ms", 0.99))


def bucket_of(seconds: float) -> int:
    if seconds < FLOOR_S:
        return 0
    return int(PER_OCTAVE * math.log2(seconds / FLOOR_S)) + 1


def upper_edge_s(bucket: int) -> float:
    """The largest value bucket `bucket` holds."""
    return FLOOR_S * 2.0 ** (bucket / PER_OCTAVE)


class Lateness:
    """Lateness samples in seconds (negative ones count as 0: early is on time)."""

    __slots__ = ("counts", "n", "total", "max")

    def __init__(self):
        self.counts: dict[int, int] = {}
        self.n = 0
        self.total = 0.0
        self.max = 0.0

    def add(self, seconds: float) -> None:
        seconds = max(seconds, 0.0)
        b = bucket_of(seconds)
        if seconds > self.max:
            self.max = seconds
        c = self.counts
        c[b] = c.get(b, 0) + 1
        self.n += 1
        self.total += seconds

    def merge(self, other: Lateness) -> Lateness:
        for b, k in other.counts.items():
            self.counts[b] = self.counts.get(b, 0) + k
        self.n += other.n
        self.total += other.total
        self.max = max(self.max, other.max)
        return self

    def quantile_s(self, q: float) -> float | None:
        """The q-quantile (upper bucket edge, capped at the maximum); None when empty."""
        if not self.n:
            return None
        rank = max(1, math.ceil(q * self.n))
        seen = 0
        for b in sorted(self.counts):
            seen += self.counts[b]
            if seen >= rank:
                return min(upper_edge_s(b), self.max) if b else min(FLOOR_S, self.max)
        return self.max

    def as_dict(self) -> dict:
        out: dict = {"n": self.n, "max_ms": round(self.max * 1e3, 4),
                     "mean_ms": round(self.total / self.n * 1e3, 4) if self.n else None}
        for name, q in QUANTILES:
            v = self.quantile_s(q)
            out[name] = None if v is None else round(v * 1e3, 4)
        out["buckets"] = {str(b): k for b, k in sorted(self.counts.items())}
        return out

    @classmethod
    def from_dict(cls, d: Mapping | None) -> Lateness:
        """A histogram back from its record (an empty one from None or {})."""
        h = cls()
        if not d:
            return h
        h.counts = {int(b): int(k) for b, k in (d.get("buckets") or {}).items()}
        h.n = int(d.get("n") or sum(h.counts.values()))
        h.max = float(d.get("max_ms") or 0.0) / 1e3
        h.total = float(d.get("mean_ms") or 0.0) / 1e3 * h.n
        return h


def merged(records: Iterable[Mapping | None]) -> Lateness:
    """One histogram from many records."""
    out = Lateness()
    for r in records:
        out.merge(Lateness.from_dict(r))
    return out
