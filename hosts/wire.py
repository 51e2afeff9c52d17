"""The agents' packet headers (after the UDP header): data, ACK and CNP.

The step tag a switch reads (source port or DSCP) is contract.tags'.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

# --- packet headers (after the UDP header) ------------------------------------
# Every packet starts with the same 12 bytes: magic, version, type, job, the
# rank that sent it, and the global step it belongs to.  Network byte order.
MAGIC = 0x5359            # "SY"
VERSION = 2               # 2: the ACK's SACK bitmap is as long as it needs (was 64 bits)
T_DATA = 1
T_ACK = 2
T_CNP = 3

COMMON = struct.Struct("!HBBHHI")            # magic ver type job rank step      12 B
# data: + offset (bytes into the step's chunk), length (payload bytes), flags  20 B
#       (flags: the low 16 bits of the sender's transmission number, echoed in
#       ACKs so the sender knows which copy of a retransmitted packet arrived)
DATA = struct.Struct("!HBBHHIIHH")
# ack:  + cum (bytes received in order from offset 0), flags (ACK_COMPLETE: the
#       receiver holds the whole step; ACK_ECHO: echo is valid), echo (the
#       flags field of the newest data packet received for the step),
#       sack_len (bytes of SACK bitmap that follow), then the bitmap: bit j
#       (of byte j // 8, least significant first) = the packet with index
#       cum_index + 1 + j, packets of the job's payload_bytes; as long as the
#       highest packet received needs, so it covers any window    22 B + bitmap
ACK = struct.Struct("!HBBHHIIHHH")
# cnp:  + reserved                                                          16 B
CNP = struct.Struct("!HBBHHII")

ACK_COMPLETE = 0x1
ACK_ECHO = 0x2
# the longest SACK bitmap: 8,192 packets past the cumulative point (an ACK
# still fits a 1500-byte MTU); a window may not be wider (hosts.udp.params)
MAX_SACK_BYTES = 1024
MAX_SACK_BITS = 8 * MAX_SACK_BYTES


class Data(NamedTuple):
    job: int
    rank: int
    step: int
    offset: int
    length: int
    flags: int


class Ack(NamedTuple):
    job: int
    rank: int
    step: int
    cum: int
    sack: int
    flags: int
    echo: int = 0


class Cnp(NamedTuple):
    job: int
    rank: int
    step: int


Packet = Data | Ack | Cnp


class WireError(ValueError):
    """A packet that is not ours or is damaged; `counter` names the drop counter
    the receiver increments."""
    counter = "bad_packet"


class Truncated(WireError):
    counter = "truncated"


class BadMagic(WireError):
    counter = "bad_magic"


class BadVersion(WireError):
    counter = "bad_version"


class BadType(WireError):
    counter = "bad_type"


class BadLength(WireError):
    counter = "bad_length"


def pack_data_header(job: int, rank: int, step: int, offset: int, length: int,
                     flags: int = 0) -> bytes:
    return DATA.pack(MAGIC, VERSION, T_DATA, job, rank, step, offset, length, flags)


def pack_ack(job: int, rank: int, step: int, cum: int, sack: int = 0, flags: int = 0,
             echo: int = 0) -> bytes:
    """An ACK; sack: the bitmap as an integer (bit j = packet cum_index + 1 + j)."""
    bitmap = sack.to_bytes((sack.bit_length() + 7) // 8, "little")
    return ACK.pack(MAGIC, VERSION, T_ACK, job, rank, step, cum, flags, echo, len(bitmap)) + bitmap


def pack_cnp(job: int, rank: int, step: int) -> bytes:
    return CNP.pack(MAGIC, VERSION, T_CNP, job, rank, step, 0)


def parse(buf, nbytes: int | None = None) -> Packet:
    """Parse one packet (bytes, bytearray or memoryview; `nbytes` of it are
    valid).  Raises a WireError subclass for anything not well formed; a data
    packet's payload is buf[DATA.size : DATA.size + length]."""
    n = len(buf) if nbytes is None else nbytes
    if n < COMMON.size:
        raise Truncated(f"{n} bytes, shorter than the {COMMON.size}-byte header")
    magic, version, ptype, job, rank, step = COMMON.unpack_from(buf, 0)
    if magic != MAGIC:
        raise BadMagic(f"magic 0x{magic:04x}")
    if version != VERSION:
        raise BadVersion(f"version {version}")
    if ptype == T_DATA:
        if n < DATA.size:
            raise Truncated(f"data packet of {n} bytes")
        _, _, _, job, rank, step, offset, length, flags = DATA.unpack_from(buf, 0)
        if n != DATA.size + length:
            raise BadLength(f"length field {length}, payload {n - DATA.size}")
        return Data(job, rank, step, offset, length, flags)
    if ptype == T_ACK:
        if n < ACK.size:
            raise Truncated(f"ack of {n} bytes")
        _, _, _, job, rank, step, cum, flags, echo, sack_len = ACK.unpack_from(buf, 0)
        if sack_len > MAX_SACK_BYTES or n != ACK.size + sack_len:
            raise BadLength(f"sack_len field {sack_len}, bitmap {n - ACK.size}")
        sack = int.from_bytes(buf[ACK.size:n], "little") if sack_len else 0
        return Ack(job, rank, step, cum, sack, flags, echo)
    if ptype == T_CNP:
        if n < CNP.size:
            raise Truncated(f"cnp of {n} bytes")
        return Cnp(job, rank, step)
    raise BadType(f"type {ptype}")
