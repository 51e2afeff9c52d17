"""Build and read the Ethernet/IPv4/UDP/TCP frames the vectors, tests and
benchmark use.  Pure; checksums are real so a frame is valid on a wire."""

from __future__ import annotations

import ipaddress
import struct

from topologies.switch.twin.pipeline import ipv4_checksum


def mac_bytes(mac: str) -> bytes:
    return bytes(int(p, 16) for p in mac.split(":"))


def mac_str(b: bytes) -> str:
    return ":".join(f"{x:02x}" for x in b)


def build(src: str, dst: str, proto: str = "udp", sport: int = 0xC000, dport: int = 5000,
          ecn: int = 2, dscp: int = 0, ttl: int = 64, payload_len: int = 64,
          eth_src: str = "02:00:00:00:00:01", eth_dst: str = "02:00:00:00:00:fe",
          ident: int = 0, frame_len: int | None = None, vihl: int = 0x45, ethertype: int = 0x0800,
          frag_offset: int = 0, ip_flags: int = 0) -> bytes:
    """One frame.  frame_len (total Ethernet frame bytes, no FCS) overrides
    payload_len; ip_flags: the IPv4 header's 3-bit flags (reserved, DF, MF)."""
    l4_len = 8 if proto == "udp" else 20 if proto == "tcp" else 0
    if frame_len is not None:
        payload_len = max(0, frame_len - 14 - 20 - l4_len)
    payload = bytes(i & 0xFF for i in range(payload_len))
    if proto == "udp":
        l4 = struct.pack("!HHHH", sport, dport, 8 + payload_len, 0)
    elif proto == "tcp":
        l4 = struct.pack("!HHIIBBHHH", sport, dport, 1, 0, 5 << 4, 0x18, 65535, 0, 0)
    else:
        l4 = b""
    number = {"udp": 17, "tcp": 6}.get(proto, 1 if proto == "icmp" else 253)
    total = 20 + len(l4) + payload_len
    hdr = bytearray(struct.pack("!BBHHHBBH4s4s", vihl, (dscp << 2) | ecn, total, ident,
                                (ip_flags & 7) << 13 | frag_offset & 0x1FFF,
                                ttl, number, 0, ipaddress.IPv4Address(src).packed, ipaddress.IPv4Address(dst).packed))
    hdr[10:12] = ipv4_checksum(hdr).to_bytes(2, "big")
    return mac_bytes(eth_dst) + mac_bytes(eth_src) + ethertype.to_bytes(2, "big") + bytes(hdr) + l4 + payload


def fields(frame: bytes) -> dict:
    """What the vectors compare of an output frame."""
    out = {"len": len(frame), "eth_dst": mac_str(frame[0:6]), "eth_src": mac_str(frame[6:12])}
    if len(frame) >= 34 and frame[12:14] == b"\x08\x00":
        out.update(ecn=frame[15] & 3, dscp=frame[15] >> 2, ttl=frame[22], ip_flags=frame[20] >> 5,
                   src=str(ipaddress.IPv4Address(frame[26:30])), dst=str(ipaddress.IPv4Address(frame[30:34])),
                   checksum_ok=ipv4_checksum(frame[14:34]) == int.from_bytes(frame[24:26], "big"))
    return out
