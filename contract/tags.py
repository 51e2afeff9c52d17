"""Step tags, flow identity and serial arithmetic: what a switch reads from a
ring flow's packets, and so the contract between the agents and the switches.

The P4 program's constants are checked against this module by the tests
(tests/contract/test_p4names.py).
"""

from __future__ import annotations

# Where each transport carries the step tag: UDP in the source port (a flow
# is free to change it per step), TCP in the DSCP (a connection keeps its ports).
TRANSPORTS = ("udp", "tcp")

# --- step tag in the UDP source port (UDP mode) -----------------------------
TAG_PORT_BASE = 0xC000
TAG_BITS = 14
TAG_MASK = (1 << TAG_BITS) - 1          # 0x3FFF

# --- step tag in the DSCP field (TCP mode: a connection keeps its ports) ----
DSCP_TAG_BITS = 6
DSCP_TAG_MASK = (1 << DSCP_TAG_BITS) - 1

# --- ECN codepoints (low two bits of the IPv4 TOS byte) ----------------------
ECN_NOT_ECT = 0b00
ECN_ECT1 = 0b01
ECN_ECT0 = 0b10
ECN_CE = 0b11

# --- a leaf's verdict, carried to the switches after it (track "verdict") ---
# The reserved (most significant) bit of the IPv4 header's 3-bit flags field:
# outside the 5-tuple ECMP hashes, the ECN bits and the DSCP that TCP mode's
# tag takes, so it rides every routing and both transports.  A tracking
# switch writes whether it found the flow ahead; a switch that tracks nothing
# marks on it (docs/ecmp.md, "The leaves' verdict").
VERDICT_BIT = 2                         # hdr.ipv4.flags[2:2]
VERDICT_FLAG = 1 << VERDICT_BIT         # in hdr.ipv4.flags
VERDICT_BYTE = 20                       # its byte in an Ethernet + IPv4 frame
VERDICT_MASK = VERDICT_FLAG << 5        # 0x80 of that byte (flags are its top 3 bits)

# ACKs and CNPs go to the sender's control port, the job's data port + 1, so a
# switch never counts them as progress of the ring flow.
CONTROL_PORT_OFFSET = 1


def tag_bits(tcp: bool | int) -> int:
    """Width of a flow's step tag: 6 bits (DSCP) in TCP mode, 14 (UDP source port) otherwise."""
    return DSCP_TAG_BITS if tcp else TAG_BITS


def tag_mask(tcp: bool | int) -> int:
    return (1 << tag_bits(tcp)) - 1


def tag_half(tcp: bool | int) -> int:
    """2^(w-1): serial arithmetic orders tags less than this far apart."""
    return 1 << (tag_bits(tcp) - 1)


def tag_port(step: int) -> int:
    """UDP source port that carries `step`."""
    return TAG_PORT_BASE | (step & TAG_MASK)


def port_tag(port: int) -> int | None:
    """Step tag carried by a UDP source port, None if the port is untagged."""
    if port & ~TAG_MASK & 0xFFFF != TAG_PORT_BASE:
        return None
    return port & TAG_MASK


def tag_dscp(step: int) -> int:
    return step & DSCP_TAG_MASK


def control_port(data_port: int) -> int:
    return data_port + CONTROL_PORT_OFFSET


def serial_diff(a: int, b: int, bits: int) -> int:
    """a - b in serial-number arithmetic modulo 2^bits, as a signed value in
    [-2^(bits-1), 2^(bits-1))."""
    mod = 1 << bits
    d = (a - b) % mod
    return d - mod if d >= mod >> 1 else d


def serial_after(a: int, b: int, bits: int) -> bool:
    """True when step tag a is after b: 0 < (a - b) mod 2^bits < 2^(bits-1)."""
    return serial_diff(a, b, bits) > 0


def steps_per_iteration(n_ranks: int) -> int:
    """Steps of one ring AllReduce of N ranks: N-1 of reduce-scatter, N-1 of all-gather."""
    return 2 * (n_ranks - 1)


def ring_step(iteration: int, k: int, n_ranks: int) -> int:
    """The global step an agent tags its packets with and records: step k of
    an iteration, counted from the run's first step (iteration * 2(N-1) + k)."""
    return iteration * steps_per_iteration(n_ranks) + k
