"""Ring AllReduce on float32 arrays: the schedule, one rank's state machine and
the reference sum in the ring's own order.  Pure: no sockets, no clock.

Reduce-scatter then all-gather, 2(N-1) steps.  At step k rank r sends chunk
(r - k) mod N to rank r+1 and receives chunk (r - k - 1) mod N from rank r-1;
in the reduce-scatter (k < N-1) it adds what it receives to its own chunk, in
the all-gather it overwrites its chunk with what it receives.

Chunk c is therefore summed starting at rank c and going round the ring:
((x_c + x_{c+1}) + x_{c+2}) + ... + x_{c-1}.  Float addition is commutative but
not associative, so `ring_order_sum` folds each chunk in exactly that order and
a correct AllReduce matches it bit for bit.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from contract.tags import steps_per_iteration

DTYPE = np.dtype("<f4")      # little-endian float32 on the wire, on every host
ITEM = DTYPE.itemsize


def chunk_bounds(n_elems: int, n_ranks: int) -> list[tuple[int, int]]:
    """[start, end) element ranges of the N chunks; when N does not divide the
    size the first (n_elems mod N) chunks hold one element more."""
    base, extra = divmod(n_elems, n_ranks)
    bounds, start = [], 0
    for c in range(n_ranks):
        end = start + base + (1 if c < extra else 0)
        bounds.append((start, end))
        start = end
    return bounds


@dataclass(frozen=True)
class StepPlan:
    k: int
    phase: str          # "rs" (reduce-scatter) | "ag" (all-gather)
    send_chunk: int
    recv_chunk: int


def plan(rank: int, n_ranks: int, k: int) -> StepPlan:
    if not 0 <= k < steps_per_iteration(n_ranks):
        raise ValueError(f"step index {k} outside 0..{steps_per_iteration(n_ranks) - 1}")
    phase = "rs" if k < n_ranks - 1 else "ag"
    return StepPlan(k, phase, (rank - k) % n_ranks, (rank - k - 1) % n_ranks)


def recv_bytes(rank: int, n_ranks: int, n_elems: int, k: int) -> int:
    """Bytes rank receives at step k (the size of its receive chunk)."""
    start, end = chunk_bounds(n_elems, n_ranks)[plan(rank, n_ranks, k).recv_chunk]
    return (end - start) * ITEM


class RingRank:
    """One rank's buffer through the 2(N-1) steps of one AllReduce."""

    def __init__(self, rank: int, n_ranks: int, data: np.ndarray):
        if n_ranks < 2:
            raise ValueError("a ring needs at least 2 ranks")
        self.rank = rank
        self.n = n_ranks
        self.buf = np.array(data, dtype=DTYPE, copy=True)
        self.bounds = chunk_bounds(self.buf.size, n_ranks)

    def plan(self, k: int) -> StepPlan:
        return plan(self.rank, self.n, k)

    def chunk(self, c: int) -> np.ndarray:
        start, end = self.bounds[c]
        return self.buf[start:end]

    def send_bytes(self, k: int) -> bytes:
        """The bytes to send at step k (a copy: the buffer changes later)."""
        return self.chunk(self.plan(k).send_chunk).tobytes()

    def apply(self, k: int, received) -> None:
        """Fold what arrived at step k into the buffer."""
        p = self.plan(k)
        incoming = np.frombuffer(received, dtype=DTYPE)
        mine = self.chunk(p.recv_chunk)
        if incoming.size != mine.size:
            raise ValueError(f"step {k}: got {incoming.size} floats, chunk holds {mine.size}")
        if p.phase == "rs":
            # received + own, the order ring_order_sum reproduces
            np.add(incoming, mine, out=mine)
        else:
            mine[:] = incoming


def ring_order_sum(inputs: list[np.ndarray]) -> np.ndarray:
    """The AllReduce result as the ring computes it: chunk c folded from rank c
    round the ring."""
    n = len(inputs)
    size = inputs[0].size
    out = np.empty(size, dtype=DTYPE)
    for c, (start, end) in enumerate(chunk_bounds(size, n)):
        acc = np.array(inputs[c][start:end], dtype=DTYPE)
        for j in range(1, n):
            acc = acc + np.asarray(inputs[(c + j) % n][start:end], dtype=DTYPE)
        out[start:end] = acc
    return out


def make_input(seed: int, iteration: int, rank: int, n_elems: int) -> np.ndarray:
    """The data rank reduces in an iteration: reproducible from the job's seed,
    so every rank can compute every other rank's input and the exact result."""
    # uniform in [-1, 1): values of many magnitudes, so the order of the sum
    # shows in the last bits; ~10x faster to draw than normal variates
    rng = np.random.default_rng([seed, iteration, rank])
    x = rng.random(n_elems, dtype=np.float32)
    x *= 2
    x -= 1
    return x.astype(DTYPE, copy=False)


def bandwidth_bound_s(message_bytes: int, n_ranks: int, rate_bps: float) -> float:
    """Lower bound of one AllReduce's completion time on links of rate_bps:
    every rank sends 2(N-1)/N x S bytes through its own link."""
    return 2 * (n_ranks - 1) / n_ranks * message_bytes * 8 / rate_bps
