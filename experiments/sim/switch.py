"""A simulated switch: the twin's own data path (topologies.switch.twin.core:
the pipeline, the egress queues, the delay lines, the control methods) with
the simulation's wires at its ports and each queue and delay line woken on
the virtual clock exactly when it has something due (the twin's process
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
        self.out: dict[int, tuple[Callable, int]] = {}        # port -> (peer's receive, peer's port)
        self.delay_s = {p: 0.0 for p in self.ports}             # port -> its wire's propagation delay
        self.wakers: dict[tuple[str, int], Waker] = {}         # (delay line, port) -> its wake-up
        self.queue_wakers = {p: Waker(engine, self._queue_fire(p)) for p in self.ports}

    def connect(self, port: int, receive: Callable, peer_port: int) -> None:
        self.out[port] = (receive, peer_port)

    def has_line(self, direction: str, port: int) -> bool:
        return port in self.lines[direction]

    def set_delay(self, port: int, delay_s: float) -> None:
        self.delay_s[port] = delay_s

    def receive(self, port: int, frame: bytes) -> None:
        """A frame off the wire at `port`."""
        self.arrive(port, frame, self.engine.now)

    def transmit(self, port: int, frame: bytes, now: float) -> None:
        """The frame's last bit is out now (the queue let it go serialised,
        queues.EgressQueue.in_flight_s); the peer has it a propagation
        delay later."""
        self.stats[port]["tx"] += 1
        receive, peer_port = self.out[port]
        self.engine.at(now + self.queues[port].in_flight_s(frame) + self.delay_s[port], receive, peer_port, frame)

    def held(self, kind: str, port: int) -> None:
        if kind == "queue":
            due = self.queues[port].deadline()
            if due is not None:
                self.queue_wakers[port].wake_at(due)
            return
        due = self.due(kind, port)
        if due is not None:
            w = self.wakers.get((kind, port))
            if w is None:
                w = self.wakers[(kind, port)] = Waker(self.engine, self._line_fire(kind, port))
            w.wake_at(due)

    def _queue_fire(self, port: int):
        def fire(now: float) -> None:
            self.drain_queue(port, now)
            self.held("queue", port)
        return fire

    def _line_fire(self, kind: str, port: int):
        def fire(now: float) -> None:
            self.drain_line(kind, port, now)
            self.held(kind, port)
        return fire

    def rate_changed(self, port: int) -> None:
        """A queue's rate was set: its head may leave at once (the twin's
        EgressQueue restarts its clock)."""
        self.held("queue", port)
