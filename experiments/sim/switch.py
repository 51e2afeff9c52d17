"""A simulated switch: the twin's own data path (topologies.switch.twin.core:
the pipeline, the egress queues, the delay lines, the control methods) with
the simulation's wires at its ports and its wake-ups on the virtual clock,
exactly when a queue or delay line has something due (the twin's process
rounds a queue's wait up to the millisecond; here nothing is late).
"""

from __future__ import annotations

from collections.abc import Callable

from experiments.sim.engine import Engine, Waker
from topologies.switch.twin.core import SwitchCore


class SimSwitch(SwitchCore):
    def __init__(self, engine: Engine, name: str, ports: dict[int, str], queue_depth: int, seed: int):
        super().__init__(name, ports, queue_depth, seed)
        self.engine = engine
        self.waker = Waker(engine, self._wake)
        self.out: dict[int, tuple[Callable, int]] = {}        # port -> (peer's receive, peer's port)

    def connect(self, port: int, receive: Callable, peer_port: int) -> None:
        self.out[port] = (receive, peer_port)

    def receive(self, port: int, frame: bytes) -> None:
        """A frame off the wire at `port`."""
        now = self.engine.now
        self.arrive(port, frame, now)
        self._schedule(now)

    def transmit(self, port: int, frame: bytes, now: float) -> None:
        """The frame starts on the wire now; the peer has it once its last
        bit is there (the queue's rate: it held the port that long)."""
        self.stats[port]["tx"] += 1
        receive, peer_port = self.out[port]
        self.engine.at(now + self.queues[port].service_time(frame), receive, peer_port, frame)

    def _wake(self, now: float) -> None:
        self.drain(now)
        self._schedule(now)

    def _schedule(self, now: float) -> None:
        due = self.next_due()
        if due is not None:
            self.waker.wake_at(due if due > now else now)
