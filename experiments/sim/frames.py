"""The frames simulated hosts put on the wire and read back: Ethernet, IPv4
and UDP around a payload, as the kernel would build them for the agent's
sockets, so the switches' pipeline (topologies.switch.twin.pipeline) reads
the same bytes it reads in the emulation.  Pure.

A frame's headers depend only on its addresses, ports, TOS byte and length,
so each distinct header is built once and kept (``Framer``).
"""

from __future__ import annotations

import ipaddress
import struct

from topologies.switch.twin.pipeline import ETH_LEN, IPV4_LEN, UDP_LEN, ipv4_checksum

HEADERS = ETH_LEN + IPV4_LEN + UDP_LEN      # 42 bytes before the UDP payload
TTL = 64
IPV4_DF = 0x4000                            # Linux sets DF on UDP with path-MTU discovery
_IP = struct.Struct("!BBHHHBBH4s4s")
_UDP = struct.Struct("!HHHH")


def ip_bytes(ip: str) -> bytes:
    return ipaddress.IPv4Address(ip).packed


def mac_bytes(mac: str) -> bytes:
    return bytes(int(p, 16) for p in mac.split(":"))


class Framer:
    """One host's frames: its own MAC and address, its peers' MACs (the
    static ARP of the emulated hosts: every host in one subnet)."""

    def __init__(self, mac: str, ip: str, arp: dict[str, str]):
        self.mac = mac_bytes(mac)
        self.ip = ip_bytes(ip)
        self.arp = {ip_bytes(peer): mac_bytes(m) for peer, m in arp.items()}
        self._headers: dict[tuple, bytes] = {}

    def header(self, dst_ip: bytes, sport: int, dport: int, tos: int, payload_len: int) -> bytes:
        """The 42 bytes of headers of a UDP datagram of payload_len bytes."""
        key = (dst_ip, sport, dport, tos, payload_len)
        hdr = self._headers.get(key)
        if hdr is None:
            ip = bytearray(_IP.pack(0x45, tos, IPV4_LEN + UDP_LEN + payload_len, 0, IPV4_DF, TTL, 17, 0,
                                    self.ip, dst_ip))
            ip[10:12] = ipv4_checksum(ip).to_bytes(2, "big")
            hdr = (self.arp[dst_ip] + self.mac + b"\x08\x00" + bytes(ip)
                   + _UDP.pack(sport, dport, UDP_LEN + payload_len, 0))
            self._headers[key] = hdr
        return hdr

    def udp(self, dst_ip: bytes, sport: int, dport: int, tos: int, *parts) -> bytes:
        """A whole frame: headers, then the payload's parts."""
        n = sum(len(p) for p in parts)
        return b"".join((self.header(dst_ip, sport, dport, tos, n), *parts))


def read_udp(frame: bytes) -> tuple[bytes, int, int, int] | None:
    """(source address, source port, destination port, TOS) of a frame that
    carries an IPv4 UDP datagram without options; None for anything else.
    Its payload starts at HEADERS."""
    if len(frame) < HEADERS or frame[12] != 0x08 or frame[13] != 0 or frame[14] != 0x45 or frame[23] != 17:
        return None
    return (frame[26:30], (frame[34] << 8) | frame[35], (frame[36] << 8) | frame[37], frame[15])
