"""The twin's delay line: what tc-netem does to frames, applied after a
port's egress queue (and, at a port facing a host, to the frames arriving
from the host before the pipeline sees them).  Pure: the caller passes
``now`` (seconds); the draws come from the line's own generator, seeded.

netem's semantics (net/sched/sch_netem.c, iproute2's tc/q_netem.c and
netem/*.c), kept here as they are:

- delay: ``tabledist(delay, jitter)``: without a distribution uniform in
  [delay - jitter, delay + jitter); with one, delay + jitter x T[r] / 8192,
  T the table iproute2 generates (normal, pareto, paretonormal: 4096 entries
  of the distribution's inverse CDF, scaled by 8192); a negative delay sends
  at once.  Integer nanoseconds, as the kernel computes them.
- correlation (of the delay): each 32-bit uniform draw is
  ``(new x (2^32 - rho) + last x rho) >> 32`` (get_crandom), then taken
  modulo 2 x jitter (ns) or the table's 4096 entries, which scrambles it:
  below 100 % consecutive delays come out practically uncorrelated, at 100 %
  every frame gets the same delay.  That is netem's behaviour; kept, so a
  config behaves alike on both targets.
- loss: a frame is dropped with probability loss_pct before anything else.
- reorder (gap 1, tc's default once reorder is given): a frame is sent at
  once with probability reorder_pct, ahead of every held frame; the others
  are delayed.
- frames leave in the order of their send times (netem's tfifo), FIFO among
  equal times, so jitter wider than the gap between frames reorders them as
  netem does; at most ``limit`` frames are held (more are dropped).
"""

from __future__ import annotations

import functools
import heapq
import math
import random
from collections import deque

from topologies.spec.netem import NetemParams

NETEM_DIST_SCALE = 8192
TABLE_RESOLUTION = 16384          # the generators' grid; tables keep every 4th point
U32 = 1 << 32
U32_MAX = U32 - 1
OFF = NetemParams()


# --- the distribution tables, generated as iproute2's netem/*.c do --------------

def _rint(x: float) -> int:
    return round(x)               # C rint in the default mode: half to even


def _c_div(a: int, b: int) -> int:
    """C integer division (truncates toward zero), b > 0."""
    return a // b if a >= 0 else -((-a) // b)


def _clip16(v: int) -> int:
    return max(-32768, min(32767, v))


@functools.cache
def _normal_inverse() -> tuple[float, ...]:
    """normal.c's inverse CDF on its grid: the last x (from -10 by 0.00005)
    whose rint(16384 F(x)) is i."""
    table = [0.0] * (TABLE_RESOLUTION + 1)
    x = -10.0
    while x < 10.05:
        table[_rint(TABLE_RESOLUTION * (0.5 + 0.5 * math.erf(x / math.sqrt(2.0))))] = x
        x += 0.00005
    return tuple(table)


def _pareto_value(i: int) -> int:
    d = 1.0 / math.pow(i / 65536, 1.0 / 3.0)        # pareto, a = 3
    d = (d - 1.5) * (4.0 / 3.0) * NETEM_DIST_SCALE
    return _rint(min(d, 32767.0))


@functools.cache
def table(name: str) -> tuple[int, ...]:
    """A distribution table (normal.dist, pareto.dist, paretonormal.dist as
    iproute2 ships them); KeyError for another name.  Computed on first use
    (normal's costs ~0.1 s of CPU), the same every time, cached."""
    if name == "normal":
        inv = _normal_inverse()
        return tuple(_clip16(_rint(inv[i] * NETEM_DIST_SCALE)) for i in range(0, TABLE_RESOLUTION, 4))
    if name == "pareto":
        return tuple(_pareto_value(i) for i in range(65536, 0, -16))
    if name == "paretonormal":
        inv = _normal_inverse()
        return tuple(_clip16(_c_div(_rint(inv[i] * NETEM_DIST_SCALE) + 3 * _pareto_value(65536 - 4 * i), 4))
                     for i in range(0, TABLE_RESOLUTION, 4))
    raise KeyError(name)


def _pct_to_u32(pct: float) -> int:
    return _rint(pct / 100.0 * U32_MAX)        # tc's set_percent


def tabledist(mu: int, sigma: int, rnd: int, dist: tuple[int, ...] | None) -> int:
    """netem's tabledist for one 32-bit draw: ns in, ns out."""
    if sigma == 0:
        return mu
    if dist is None:
        return rnd % (2 * sigma) + mu - sigma
    t = dist[rnd % len(dist)]
    x = (sigma % NETEM_DIST_SCALE) * t
    x += NETEM_DIST_SCALE // 2 if x >= 0 else -(NETEM_DIST_SCALE // 2)
    return _c_div(x, NETEM_DIST_SCALE) + (sigma // NETEM_DIST_SCALE) * t + mu


def expected_delay(p: NetemParams) -> tuple[float, float]:
    """(mean, standard deviation) in ms of the delay a frame gets, from the
    distribution itself (negative draws count as 0; correlation below 100 %
    changes neither, see above)."""
    sigma = round(p.jitter_ms * 1e6)
    mu = round(p.delay_ms * 1e6)
    if p.distribution == "uniform":
        # the same uniform over 4096 evenly spaced draws
        values = [max(0, mu + ((2 * k + 1) * sigma) // 4096 - sigma) for k in range(4096)]
    else:
        dist = table(p.distribution)
        values = [max(0, tabledist(mu, sigma, k, dist)) for k in range(len(dist))]
    mean = sum(values) / len(values)
    var = sum((v - mean) ** 2 for v in values) / len(values)
    return mean / 1e6, math.sqrt(var) / 1e6


class _Correlated:
    """netem's crndstate: get_crandom over a shared generator."""

    __slots__ = ("rho", "last")

    def __init__(self, rho: int, rng: random.Random):
        self.rho = rho
        self.last = rng.getrandbits(32)

    def draw(self, rng: random.Random) -> int:
        value = rng.getrandbits(32)
        if self.rho == 0:
            return value
        rho = self.rho + 1
        self.last = (value * (U32 - rho) + self.last * rho) >> 32
        return self.last


class DelayLine:
    """One direction of a link's netem.  push() a frame when it leaves the
    queue (or arrives from a host), pop_due() the frames whose time has come;
    set() changes the parameters at run time (held frames keep their times)."""

    def __init__(self, seed: int | str, params: NetemParams = OFF):
        self.rng = random.Random(seed)
        self._held: list[tuple[float, int, bytes]] = []     # (send time, arrival order, frame)
        self._now: deque[bytes] = deque()                    # reordered: out first
        self._seq = 0
        self.stats = {"in": 0, "out": 0, "lost": 0, "reordered": 0, "limit_drops": 0}
        self.set(params)

    def set(self, params: NetemParams) -> None:
        self.params = params
        self.active = params.active
        self._mu = round(params.delay_ms * 1e6)
        self._sigma = round(params.jitter_ms * 1e6)
        # a table only where a jitter draws from it: built when first needed
        # (~0.1 s for normal's), then shared by every line of the process
        self._dist = table(params.distribution) if self._sigma and params.distribution != "uniform" else None
        self._loss = _pct_to_u32(params.loss_pct)
        self._reorder = _pct_to_u32(params.reorder_pct)
        self._gap = 1 if params.reorder_pct else 0
        self._counter = 0                    # netem_change resets it
        self._delay_cor = _Correlated(_pct_to_u32(params.correlation_pct), self.rng)

    def __len__(self) -> int:
        return len(self._held) + len(self._now)

    def push(self, frame: bytes, now: float) -> bool:
        """Take a frame; False when it is lost or the line is full."""
        self.stats["in"] += 1
        if self._loss and self._loss >= self.rng.getrandbits(32):
            self.stats["lost"] += 1
            return False
        if len(self) >= self.params.limit:
            self.stats["limit_drops"] += 1
            return False
        if self._gap == 0 or self._counter < self._gap - 1 or self._reorder < self.rng.getrandbits(32):
            delay_ns = tabledist(self._mu, self._sigma, self._delay_cor.draw(self.rng) if self._sigma else 0,
                                 self._dist)
            self._counter += 1
            heapq.heappush(self._held, (now + max(0, delay_ns) * 1e-9, self._seq, frame))
            self._seq += 1
        else:
            self._counter = 0
            self._now.append(frame)
            self.stats["reordered"] += 1
        return True

    def pop_due(self, now: float, limit: int = 256) -> list[bytes]:
        """Frames whose send time has come, in netem's order, at most `limit`."""
        out = []
        while self._now and len(out) < limit:
            out.append(self._now.popleft())
        held = self._held
        while held and held[0][0] <= now and len(out) < limit:
            out.append(heapq.heappop(held)[2])
        self.stats["out"] += len(out)
        return out

    def deadline(self) -> float | None:
        """When pop_due next has something; None when empty."""
        if self._now:
            return 0.0
        return self._held[0][0] if self._held else None

    def describe(self) -> dict:
        return {**self.params.as_dict(), **self.stats, "held": len(self)}
