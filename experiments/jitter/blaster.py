"""Cross traffic for the ``cross`` jitter kind: paced UDP datagrams to one
address for a while, then exit.

    python3 -m experiments.jitter.blaster --dst 10.0.0.8 --rate-mbit 10 --duration 2 [--size 1200] [--ect]

Runs on an emulated host (started by the injector through net.popen); it
sends to the discard port, so nothing listens and nothing answers but the
kernel's rate-limited ICMP.  Pacing is per millisecond-ish tick, which is
close enough for cross traffic; it does not react to ECN marks (it is the
traffic Symphony's flows share the links with, not one of them).
"""

from __future__ import annotations

import argparse
import math
import signal
import socket
import sys
import time

DISCARD_PORT = 9
# the simulation's blaster's source port (outside the step tags): with the
# destination port, what an ECMP fabric hashes of cross traffic (the
# emulation's socket takes an ephemeral port, so there its ECMP path is the
# kernel's draw: docs/ecmp.md)
CROSS_SOURCE_PORT = 32768
ECT0_TOS = 0b10
IP_UDP_HEADERS = 28          # --size counts the IPv4 and UDP headers


def packets_due(elapsed_s: float, interval_s: float) -> int:
    """How many datagrams the pacing owes by elapsed_s after the start: one
    at the start, then one every interval_s.  The blaster sends what it owes
    at each of its ~1 ms ticks; the simulation (experiments/sim), whose clock
    needs no ticks, at each datagram's own time."""
    return int(elapsed_s / interval_s) + 1


def packets_before(duration_s: float, interval_s: float) -> int:
    """The datagrams whose times fall before the end: what a run of
    duration_s owes in all, however late its last tick lands."""
    return packets_due(math.nextafter(duration_s, 0.0), interval_s)


def blast(dst: str, rate_mbit: float, duration_s: float, size: int, ect: bool, port: int = DISCARD_PORT,
          clock=time.monotonic, sleep=time.sleep) -> int:
    """Send for duration_s at rate_mbit (IP packet size `size`); returns the
    number of datagrams sent."""
    payload = b"\x00" * max(0, size - IP_UDP_HEADERS)
    interval = size * 8 / (rate_mbit * 1e6)
    sent = 0
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        if ect:
            sock.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, ECT0_TOS)
        start = clock()
        end = start + duration_s
        while True:
            now = clock()
            # a tick that lands past the end (a busy machine) still sends what
            # was owed before it: the rate times the duration, as the simulation
            last = now >= end
            due = (packets_before(duration_s, interval) if last else packets_due(now - start, interval)) - sent
            for _ in range(max(0, due)):
                try:
                    sock.sendto(payload, (dst, port))
                except OSError:
                    pass                                    # ICMP errors, full buffers: cross traffic does not care
                sent += 1
            if last:
                break
            sleep(min(0.001, max(0.0, end - clock())))
    return sent


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m experiments.jitter.blaster", description=__doc__.split("\n")[0])
    ap.add_argument("--dst", required=True)
    ap.add_argument("--rate-mbit", type=float, required=True)
    ap.add_argument("--duration", type=float, required=True)
    ap.add_argument("--size", type=int, default=1200)
    ap.add_argument("--port", type=int, default=DISCARD_PORT)
    ap.add_argument("--ect", action="store_true")
    args = ap.parse_args(argv)
    if args.rate_mbit <= 0 or args.duration <= 0 or not 64 <= args.size <= 1500:
        print("blaster: --rate-mbit and --duration must be > 0, --size in 64..1500", file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        n = blast(args.dst, args.rate_mbit, args.duration, args.size, args.ect, args.port)
    except KeyboardInterrupt:
        return 0
    print(f"blaster: sent {n} datagrams to {args.dst}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
