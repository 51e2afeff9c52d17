"""The job file's [udp] and [faults] tables, checked when they are built:
ValueError names the field and the range it left.
"""

from __future__ import annotations

from dataclasses import dataclass

from hosts import wire
from hosts.wire import DATA

# Bytes a data packet adds on an Ethernet link besides its payload (Ethernet,
# IPv4, UDP and our header): what the pacer, tc htb and the twin count.
ETHERNET_HEADER = 14
WIRE_OVERHEAD = ETHERNET_HEADER + 20 + 8 + DATA.size


@dataclass(frozen=True)
class UdpParams:
    """The job file's [udp] table.  rto_ms is the initial and minimum RTO; the
    RTO adapts to the measured RTT above it.  window_packets bounds the
    packets in flight past the first unacknowledged one, as a RoCE NIC's
    in-flight limit does (IRN's BDP-FC): not the sender's rate, which is
    DCQCN's; the experiments derive it per job so that it never binds below
    the DCQCN rate (docs/hosts.md, "In flight"), and the SACK bitmap covers
    it (at most wire.MAX_SACK_BITS).  ack_delay_ms: a receiver acks
    every ack_every packets, else this long after the first unacked one
    (10 ms: about 8 packets of 1400 bytes at 10 Mbit/s; at 2 ms the timer
    fired every other packet at that rate, and ACKs were a third of the
    frames the switches forwarded)."""
    payload_bytes: int = 1400
    rto_ms: float = 50.0
    window_packets: int = 1024
    ack_every: int = 8
    ack_delay_ms: float = 10.0
    burst_packets: int = 8
    rto_max_ms: float = 1000.0

    def __post_init__(self):
        _check(self.payload_bytes, "payload_bytes", int, 4, 65507 - DATA.size)
        _check(self.rto_ms, "rto_ms", (int, float), 1, 60000)
        _check(self.window_packets, "window_packets", int, 1, wire.MAX_SACK_BITS)
        _check(self.ack_every, "ack_every", int, 1, 1024)
        _check(self.ack_delay_ms, "ack_delay_ms", (int, float), 0, 10000)
        _check(self.burst_packets, "burst_packets", int, 1, 1024)
        _check(self.rto_max_ms, "rto_max_ms", (int, float), self.rto_ms, 600000)

    @property
    def frame_bytes(self) -> int:
        """A full data packet's Ethernet frame (no FCS): the link MTU must
        hold frame_bytes - ETHERNET_HEADER, or the kernel fragments it."""
        return self.payload_bytes + WIRE_OVERHEAD


@dataclass(frozen=True)
class FaultParams:
    """Receive-side fault injection (the job file's [faults] table), for tests:
    probabilities per received packet."""
    drop: float = 0.0
    duplicate: float = 0.0
    reorder: float = 0.0
    seed: int = 0

    def __post_init__(self):
        for name in ("drop", "duplicate", "reorder"):
            _check(getattr(self, name), name, (int, float), 0.0, 0.5)
        _check(self.seed, "seed", int, 0, 2**63)

    @property
    def active(self) -> bool:
        return self.drop > 0 or self.duplicate > 0 or self.reorder > 0


def _check(value, name, types, lo, hi):
    if isinstance(value, bool) or not isinstance(value, types):
        raise ValueError(f"{name}: expected a number, got {value!r}")
    if not lo <= value <= hi:
        raise ValueError(f"{name}: {value} outside {lo}..{hi}")
