"""ECMP: the one hash every target computes to pick among equal-cost next hops.

A switch with several shortest-path next hops towards a destination hashes
the packet's 5-tuple and takes a bucket of the hash; the control plane fills
(group, bucket) -> candidates[bucket % n], so the data plane needs no
modulo (Tofino has none).  The P4 program (v1model's HashAlgorithm.crc32,
T2NA's CRC32 polynomial), the twin, the compiled engine and the Python
paths (topologies.spec.routes) all compute this definition; the tests hold
them to the fixed vectors in tests/contract/test_ecmp.py.

The hash: CRC-32 as zlib computes it (polynomial 0x04C11DB7 reflected,
init and final xor 0xFFFFFFFF), which is BMv2's ``crc32`` (behavioral-model
src/bm_sim/calculations.cpp: the MSB-first table with reflected input bytes
and remainder), over the fields in FIELDS' order, each in network byte
order, 13 bytes.  The protocol and ports are the L4 header's the parser
read (UDP or TCP of an unfragmented IPv4 packet without options), all 0
for any other packet: every target's parser holds them so (the compiled
engine's descriptor cannot carry another protocol).

The UDP source port is where RoCEv2 puts a flow's entropy and where the
Symphony step tag lives (contract.tags: 0xC000 | step), so under plain
ECMP a ring flow hashes anew every step.  ``ecmp-flow`` masks the tag's
bits out of the source port before hashing (per-queue-pair ECMP): a ring
flow keeps one path (docs/ecmp.md).
"""

from __future__ import annotations

import zlib

from contract.tags import TAG_MASK

# [topology] routing: per destination (the forward table alone, today's),
# ECMP on the 5-tuple, ECMP with the step tag's bits left out of the hash
ROUTINGS = ("destination", "ecmp", "ecmp-flow")
DEFAULT_ROUTING = "destination"

# (field, bytes), in the order the hash reads them
FIELDS = (("ipv4.src_addr", 4), ("ipv4.dst_addr", 4), ("l4.protocol", 1), ("l4.src_port", 2),
          ("l4.dst_port", 2))

BUCKET_BITS = 6
BUCKETS = 1 << BUCKET_BITS      # a power of two: a bucket is the hash's low bits, no modulo
GROUPS_SIZE = 256               # ECMP groups a switch holds (distinct candidate sets)
BUCKET_TABLE_SIZE = GROUPS_SIZE * BUCKETS

# the source-port mask each ECMP routing hashes with (the forward entry carries it)
SPORT_MASKS = {"ecmp": 0xFFFF, "ecmp-flow": 0xFFFF & ~TAG_MASK}


def is_ecmp(routing: str) -> bool:
    return routing in SPORT_MASKS


def hash_bytes(src_ip: int, dst_ip: int, proto: int, sport: int, dport: int) -> bytes:
    """The 13 bytes the hash reads (FIELDS), addresses as 32-bit ints."""
    return (src_ip.to_bytes(4, "big") + dst_ip.to_bytes(4, "big") + bytes((proto & 0xFF,))
            + (sport & 0xFFFF).to_bytes(2, "big") + (dport & 0xFFFF).to_bytes(2, "big"))


def flow_hash(src_ip: int, dst_ip: int, proto: int, sport: int, dport: int) -> int:
    """CRC-32 (zlib's, BMv2's crc32) of the 5-tuple's bytes."""
    return zlib.crc32(hash_bytes(src_ip, dst_ip, proto, sport, dport))


def bucket(src_ip: int, dst_ip: int, proto: int, sport: int, dport: int, sport_mask: int = 0xFFFF) -> int:
    """The bucket a packet hashes to: the hash's low BUCKET_BITS, the source
    port masked first (SPORT_MASKS)."""
    return flow_hash(src_ip, dst_ip, proto, sport & sport_mask, dport) & (BUCKETS - 1)


def pick(candidates: tuple[int, ...] | list[int], b: int) -> int:
    """The candidate a bucket maps to (what the control plane installs)."""
    return candidates[b % len(candidates)]
