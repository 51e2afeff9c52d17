"""The CE-marking harness itself: pure packet handling, then (as root) the
forwarder between namespaces."""

import json
import subprocess
import sys
import time

import pytest
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.l2 import Ether

from tests.harness.cemarker import Marker, MarkerLab, ipv4_checksum, parse, set_ce


def frame(tos=0b10, proto="udp", dport=5000, payload=b"x" * 100):
    l4 = UDP(sport=0xC001, dport=dport) if proto == "udp" else TCP(sport=40000, dport=dport, flags="A")
    return bytes(Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
                 / IP(src="10.0.0.1", dst="10.0.0.2", tos=tos) / l4 / payload)


def test_checksum_matches_scapy():
    raw = frame()
    hdr = bytearray(raw[14:34])
    hdr[10:12] = b"\0\0"
    assert ipv4_checksum(bytes(hdr)) == IP(raw[14:]).chksum


@pytest.mark.parametrize("tos", [0b01, 0b10, (5 << 2) | 0b10])
def test_set_ce_keeps_dscp_and_fixes_the_checksum(tos):
    out = set_ce(frame(tos=tos))
    ip = IP(out[14:])
    assert ip.tos == (tos | 0b11)
    recomputed = IP(src=ip.src, dst=ip.dst, tos=ip.tos, id=ip.id, flags=ip.flags, ttl=ip.ttl,
                    proto=ip.proto) / ip.payload
    assert ip.chksum == IP(bytes(recomputed)).chksum
    assert UDP(bytes(ip.payload)).chksum == UDP(frame(tos=tos)[34:]).chksum   # L4 untouched


def test_marker_marks_only_ect_matching_packets_at_the_given_fraction():
    m = Marker(seed=7)
    assert m.handle(frame(), 0) == frame()                # off
    m.set(1.0, {"dport": 5000}, 0)
    assert parse(m.handle(frame(), 1))["ecn"] == 0b11
    assert parse(m.handle(frame(tos=0), 2))["ecn"] == 0   # not ECN-capable: never marked
    assert parse(m.handle(frame(dport=6000), 3))["ecn"] == 0b10   # filter
    m.set(0.3, {"dport": 5000}, 4)
    n = sum(parse(m.handle(frame(), 5 + i))["ecn"] == 0b11 for i in range(4000))
    assert 0.25 < n / 4000 < 0.35
    with pytest.raises(ValueError):
        m.set(1.5, {}, 0)


def test_marker_records_tcp_dscp_sequence_of_data_segments():
    m = Marker()
    for dscp in (0, 0, 1, 1, 2, 0):
        m.handle(frame(tos=dscp << 2 | 0b10, proto="tcp"), 0)
    m.handle(frame(tos=9 << 2, proto="tcp", payload=b""), 0)    # pure ACK: not data
    (flow,) = m.stats()["flows"].values()
    assert flow["dscp_seq"] == [0, 1, 2, 0]
    m.handle(bytes(Ether() / IP(src="10.0.0.2", dst="10.0.0.1") / TCP(dport=40000, flags="AE")), 0)
    seg = frame(proto="tcp")
    m.handle(seg[:47] + bytes([0x90]) + seg[48:], 0)      # TCP flags byte at 14 + 20 + 13: CWR|ACK
    flows = m.stats()["flows"]
    assert flows["10.0.0.2>10.0.0.1/6/40000"]["ece"] == 1
    assert flows["10.0.0.1>10.0.0.2/6/5000"]["cwr"] == 1 and flows["10.0.0.1>10.0.0.2/6/5000"]["ece"] == 0


RECEIVER = r"""
import socket, sys, json, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.IPPROTO_IP, socket.IP_RECVTOS, 1)
s.bind(("0.0.0.0", 5000))
s.settimeout(3)
counts = {}
try:
    while True:
        data, anc, _f, _a = s.recvmsg(2048, socket.CMSG_SPACE(1))
        if data == b"end":
            break
        tos = anc[0][2][0] if anc else 0
        counts[tos & 3] = counts.get(tos & 3, 0) + 1
except socket.timeout:
    pass
print(json.dumps(counts))
"""

SENDER = r"""
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, 0b10)
n = int(sys.argv[2])
for i in range(n):
    s.sendto(b"x" * 500, (sys.argv[1], 5000))
    time.sleep(0.0005)
time.sleep(0.2)
s.sendto(b"end", (sys.argv[1], 5000))
"""


def run_udp(lab, n):
    rx = lab.popen(1, [sys.executable, "-c", RECEIVER], stdout=subprocess.PIPE, text=True)
    time.sleep(0.3)
    tx = lab.popen(0, [sys.executable, "-c", SENDER, lab.ips[1], str(n)])
    tx.wait(timeout=30)
    out, _ = rx.communicate(timeout=30)
    return {int(k): v for k, v in json.loads(out).items()}


@pytest.mark.root
def test_forwarder_marks_between_namespaces_and_switches_off():
    with MarkerLab(2) as lab:
        lab.exec(0, "ping", "-c", "1", "-W", "2", lab.ips[1])
        counts = run_udp(lab, 200)
        assert counts.get(3, 0) == 0 and counts.get(2, 0) == 200     # off: ECT(0) arrives unmarked
        t_on = lab.marker.mark(0.5, dport=5000)
        counts = run_udp(lab, 400)
        assert 140 < counts.get(3, 0) < 260 and counts[3] + counts.get(2, 0) == 400
        t_off = lab.marker.off()
        counts = run_udp(lab, 200)
        assert counts.get(3, 0) == 0
        stats = lab.marker.stats()
        key = f"{lab.ips[0]}>{lab.ips[1]}/17/5000"
        assert stats["flows"][key]["marked"] == pytest.approx(200, abs=60)
        log = lab.marker_log()
        assert [e["t"] for e in log] == [t_on, t_off]
