"""The ECMP hash (contract/ecmp.py) against fixed vectors: CRC-32 as zlib and
BMv2's crc32 compute it, over the 5-tuple's bytes in network order."""

from __future__ import annotations

import ipaddress
import zlib

from contract import ecmp
from contract.tags import tag_port


def ip(a: str) -> int:
    return int(ipaddress.IPv4Address(a))


def test_crc32_is_the_standard_one():
    # the CRC-32 check value (reflected 0x04C11DB7, init and xorout 0xFFFFFFFF)
    assert zlib.crc32(b"123456789") == 0xCBF43926


def test_field_order_and_bytes():
    assert [n for n, _ in ecmp.FIELDS] == ["ipv4.src_addr", "ipv4.dst_addr", "l4.protocol", "l4.src_port",
                                           "l4.dst_port"]
    want = bytes.fromhex("0a000001" "0a000002" "11" "c003" "1388")
    assert ecmp.hash_bytes(ip("10.0.0.1"), ip("10.0.0.2"), 17, 0xC003, 5000) == want


# worked out once with zlib.crc32 over the bytes above; they are the
# conformance vectors' (p4/tests/ecmp.json) and every target's
KNOWN = [
    (("10.0.0.1", "10.0.0.2", 17, 0xC000, 5000), 0xAB4E7ABB),
    (("10.0.0.1", "10.0.0.2", 17, 0xC001, 5000), 0xAA8C108C),
    (("10.0.0.1", "10.0.0.2", 17, 0xC007, 5000), 0xAE016C3E),
    (("10.0.0.1", "10.0.0.2", 0, 0, 0), None),
]


def test_known_vectors():
    for (src, dst, proto, sport, dport), want in KNOWN:
        got = ecmp.flow_hash(ip(src), ip(dst), proto, sport, dport)
        if want is not None:
            assert got == want, (src, dst, sport)
        assert ecmp.bucket(ip(src), ip(dst), proto, sport, dport) == got & 63


def test_buckets_are_a_power_of_two_and_pick_wraps():
    assert ecmp.BUCKETS == 1 << ecmp.BUCKET_BITS
    assert ecmp.BUCKET_TABLE_SIZE == ecmp.GROUPS_SIZE * ecmp.BUCKETS
    assert [ecmp.pick((2, 3, 4), b) for b in range(5)] == [2, 3, 4, 2, 3]


def test_ecmp_flow_mask_leaves_the_step_out():
    mask = ecmp.SPORT_MASKS["ecmp-flow"]
    buckets = {ecmp.bucket(ip("10.0.0.1"), ip("10.0.0.9"), 17, tag_port(k), 5000, mask) for k in range(300)}
    assert len(buckets) == 1
    spread = {ecmp.bucket(ip("10.0.0.1"), ip("10.0.0.9"), 17, tag_port(k), 5000) for k in range(300)}
    assert len(spread) > 32          # plain ECMP: the step spreads a flow over the buckets


def test_routings():
    assert ecmp.DEFAULT_ROUTING == "destination" and ecmp.ROUTINGS[0] == "destination"
    assert [r for r in ecmp.ROUTINGS if ecmp.is_ecmp(r)] == ["ecmp", "ecmp-flow"]
