"""What the agent needs from a transport, whichever carries the ring
(hosts.udp, hosts.tcp): the Transport protocol and the timeout it raises.

Every transport takes the same keyword arguments, so the job's `transport`
name alone picks the class (hosts.agent.TRANSPORT_CLASSES).
"""

from __future__ import annotations

from typing import Protocol


class TransportTimeout(Exception):
    """A deadline passed; `info` says what the rank was waiting for."""

    def __init__(self, info: dict):
        super().__init__(info.get("what", "deadline"))
        self.info = info


class Transport(Protocol):
    """The constructor takes keyword arguments job, rank, ips, data_port,
    params (UdpParams), recv_len, log, rp, np_, faults; log(kind, step, **f)
    writes retransmit/cnp/rate events."""
    name: str

    def open(self) -> None: ...                      # bind; OSError when it cannot
    def send(self, step: int, payload) -> None: ...  # start sending a step's chunk
    def wait(self, step: int, deadline: float) -> bytearray: ...  # TransportTimeout
    def linger(self, idle_s: float, deadline: float) -> None: ...
    def idle(self, until: float) -> None: ...        # keep receiving, acking, resending until then
    def close(self) -> None: ...
    @property
    def counters(self) -> dict: ...                  # written in the `stats` event

