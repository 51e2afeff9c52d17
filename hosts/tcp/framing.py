"""The TCP transport's byte stream, pure: every step's data goes as one
message, a 16-byte header (hosts.wire's common header with type T_DATA,
then the payload length) and the payload; the receiver finds step
boundaries by this framing alone.
"""

from __future__ import annotations

import struct
from collections.abc import Callable

from hosts.wire import COMMON, MAGIC, T_DATA, VERSION

# magic ver type job rank step | payload length
MSG = struct.Struct("!HBBHHII")
assert MSG.size == COMMON.size + 4


def header(job: int, rank: int, step: int, length: int) -> bytes:
    """The header of a step's message of `length` payload bytes."""
    return MSG.pack(MAGIC, VERSION, T_DATA, job, rank, step, length)


class FramingError(ValueError):
    """The byte stream from the predecessor is not a sequence of our messages."""


class FrameReader:
    """Cuts the predecessor's byte stream into (step, payload) messages; pure.
    Steps must come in order, one after another, each with the length the
    ring expects for it (``recv_len``)."""

    def __init__(self, job: int, pred_rank: int, recv_len: Callable[[int], int | None]):
        self.job, self.pred_rank, self.recv_len = job, pred_rank, recv_len
        self._head = bytearray()
        self._step: int | None = None
        self._payload: bytearray | None = None
        self._got = 0
        self.last_step: int | None = None

    @property
    def step(self) -> int | None:
        """The step the latest bytes belonged to (None before the first header)."""
        return self._step

    def feed(self, data) -> list[tuple[int, bytearray]]:
        out = []
        mv = memoryview(data)
        while len(mv):
            if self._payload is None:
                take = min(MSG.size - len(self._head), len(mv))
                self._head += mv[:take]
                mv = mv[take:]
                if len(self._head) < MSG.size:
                    break
                self._start(*MSG.unpack(bytes(self._head)))
                self._head.clear()
            else:
                take = min(len(self._payload) - self._got, len(mv))
                self._payload[self._got:self._got + take] = mv[:take]
                self._got += take
                mv = mv[take:]
            if self._payload is not None and self._got == len(self._payload):
                out.append((self._step, self._payload))
                self.last_step, self._payload, self._got = self._step, None, 0
        return out

    def _start(self, magic, version, mtype, job, rank, step, length) -> None:
        if magic != MAGIC or version != VERSION or mtype != T_DATA:
            raise FramingError(f"not a step message (magic 0x{magic:04x}, version {version}, "
                               f"type {mtype})")
        if job != self.job or rank != self.pred_rank:
            raise FramingError(f"message of job {job} rank {rank}, expected job {self.job} "
                               f"rank {self.pred_rank}")
        if self.last_step is not None and step != self.last_step + 1:
            raise FramingError(f"step {step} after step {self.last_step}")
        want = self.recv_len(step)
        if want is None or length != want:
            raise FramingError(f"step {step} carries {length} bytes, expected {want}")
        self._step, self._payload, self._got = step, bytearray(length), 0
