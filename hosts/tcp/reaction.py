"""DCQCN over TCP, pure: the marks a switch puts on a TCP flow reach its
sender as they reach a UDP flow's (docs/hosts.md, "TCP transport").

The receiver's kernel counts the CE-marked segments a connection received
(tcpi_received_ce); the rank reads that count and hands each rise to the
DCQCN notification point, which asks for at most one CNP per interval, as
hosts.udp's receiver does per marked packet.  The CNP goes to the sender
(hosts.wire's CNP, over UDP to its control port), whose reaction point cuts
the rate; the sender applies the rate to its connection as the socket's
maximum pacing rate, which TCP's own pacing honours, so a cut slows the flow
whatever its congestion window allows.

No sockets and no clock reads here: counts, times and rates are passed in.
"""

from __future__ import annotations

from collections.abc import Hashable

from hosts.udp.params import ETHERNET_HEADER

# Bytes a full TCP segment adds on an Ethernet link besides its payload:
# Ethernet, IPv4, TCP with the timestamp option Linux sends by default.  The
# kernel paces payload bytes (a segment's length without headers); the
# DCQCN rate, as the UDP pacer, htb and the switches, counts the frame.
TCP_WIRE_OVERHEAD = ETHERNET_HEADER + 20 + 20 + 12


def pacing_bytes_per_s(rate_bps: float, mss: int) -> int:
    """The socket's SO_MAX_PACING_RATE (payload bytes per second) at which
    full segments of `mss` bytes put `rate_bps` on the wire."""
    return max(1, int(rate_bps / 8 * mss / (mss + TCP_WIRE_OVERHEAD)))


class CeNotifier:
    """The receiving half: the connection's count of CE-marked segments in,
    CNP decisions out (the notification point's rule: at most one per
    interval).  The count is cumulative since the connection opened."""

    def __init__(self, np_, flow_key: Hashable):
        self.np = np_
        self.flow_key = flow_key
        self.seen = 0          # the count at the last reading
        self.marked = 0        # CE-marked segments seen in all

    def on_count(self, received_ce: int, now: float) -> bool:
        """The kernel's count now; True: send a CNP now."""
        new = received_ce - self.seen
        if new <= 0:
            return False
        self.seen = received_ce
        self.marked += new
        # one call stands for all the marks since the last reading: the
        # notification point answers at most once per interval whatever
        # their number, as it would for each of them in turn
        return self.np.on_data(self.flow_key, True, now)

    def reset(self) -> None:
        """A new connection counts from zero."""
        self.seen = 0


class PacingRate:
    """The sending half: the reaction point's rate as the connection's
    pacing rate.  `update` returns the rate to apply when it differs from
    the one applied last (None: nothing to do)."""

    def __init__(self, rp):
        self.rp = rp
        self.applied: int | None = None

    def update(self, mss: int) -> int | None:
        rate = pacing_bytes_per_s(self.rp.rate_bps, mss)
        if rate == self.applied:
            return None
        self.applied = rate
        return rate

    def forget(self) -> None:
        """A new connection carries no pacing rate yet."""
        self.applied = None
