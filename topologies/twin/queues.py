"""Per-port egress queues of the twin: finite drop-tail buffer (depth in
packets, BMv2's default 64) drained at a rate in packets/s (set_queue_rate,
like BMv2) or at once when unlimited.  Pure: the caller passes `now`."""

from __future__ import annotations

from collections import deque

DEFAULT_DEPTH = 64
MAX_CATCH_UP_S = 0.002


class EgressQueue:
    def __init__(self, depth: int = DEFAULT_DEPTH, pps: float | None = None):
        self.q: deque[bytes] = deque()
        self.set_depth(depth)
        self.set_rate(pps)            # also sets next_time: when the head may leave
        self.enqueued = 0
        self.dropped = 0

    def set_depth(self, depth: int) -> None:
        depth = int(depth)
        if depth < 1:
            raise ValueError(f"queue depth must be >= 1 packet, got {depth}")
        self.depth = depth

    def set_rate(self, pps: float | None) -> None:
        if pps is not None:
            pps = float(pps)
            if not pps > 0:
                raise ValueError(f"queue rate must be > 0 packets/s (or None: unlimited), got {pps}")
        self.pps = pps
        self.gap = 0.0 if pps is None else 1.0 / pps
        self.next_time = 0.0      # a new rate restarts the pacing clock

    def __len__(self) -> int:
        return len(self.q)

    def room(self) -> bool:
        """False when a packet arriving now would be dropped (drop-tail)."""
        return len(self.q) < self.depth

    def push(self, frame: bytes, now: float) -> None:
        """Enqueue (the caller checked room() and ran egress with len(self)
        as enq_qdepth)."""
        if not self.q and self.next_time < now:
            self.next_time = now          # idle queue: the head may leave at once
        self.q.append(frame)
        self.enqueued += 1

    def pop_due(self, now: float, limit: int = 256) -> list[bytes]:
        """Frames whose departure time has come, at most `limit`."""
        out = []
        if self.pps is None:
            while self.q and len(out) < limit:
                out.append(self.q.popleft())
            return out
        # a late wake-up may catch up a little (the loop cannot wake every
        # gap at high rates), but never with an unbounded burst
        self.next_time = max(self.next_time, now - max(4 * self.gap, MAX_CATCH_UP_S))
        while self.q and self.next_time <= now and len(out) < limit:
            out.append(self.q.popleft())
            self.next_time += self.gap
        return out

    def deadline(self) -> float | None:
        """When pop_due next has something, None when empty."""
        if not self.q:
            return None
        return 0.0 if self.pps is None else self.next_time
