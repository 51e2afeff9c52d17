"""The socket layer of the UDP transport on loopback (no root needed): tags in
the source port, ECT(0) on data packets read back with IP_RECVTOS, and two
transports completing steps against each other."""

import random
import socket
import threading
import time

import pytest

from contract import tags
from hosts import wire
from hosts.udp.params import FaultParams, UdpParams
from hosts.udp.sockets import UdpTransport

# a random corner of 127/8, so two test runs at once do not share ports
_NET = f"127.{random.randint(1, 254)}.{random.randint(0, 255)}"
IPS = [f"{_NET}.1", f"{_NET}.2"]


def _transport(rank, port, size, log, faults=None):
    return UdpTransport(job=5, rank=rank, ips=IPS, data_port=port, params=UdpParams(),
                        recv_len=lambda s: size if 0 <= s < 3 else None,
                        log=lambda kind, step, **f: log.append((rank, kind, step, f)),
                        faults=faults)


def test_data_packets_carry_tag_and_ect0():
    sink = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sink.bind((IPS[1], 0))
    sink.setsockopt(socket.IPPROTO_IP, socket.IP_RECVTOS, 1)
    sink.settimeout(2)
    port = sink.getsockname()[1]
    tr = _transport(0, port, 100, [])
    tr.open()
    try:
        tr.send(7, bytes(100))
        tr.ep.service(time.monotonic())
        data, anc, _, addr = sink.recvmsg(2048, socket.CMSG_SPACE(4))
        tos = [d[0] for level, typ, d in anc if level == socket.IPPROTO_IP and typ == socket.IP_TOS]
        assert tos and tos[0] & 3 == tags.ECN_ECT0
        assert addr == (IPS[0], tags.tag_port(7))
        pkt = wire.parse(data)
        # flags: the transmission number (the rank's first), echoed in ACKs
        assert pkt == wire.Data(5, 0, 7, 0, 100, 1)
    finally:
        tr.close()
        sink.close()


def _pair(port, size, faults=None):
    log = []
    trs = [_transport(r, port, size, log, faults) for r in range(2)]
    for t in trs:
        t.open()
    return trs, log


def _exchange(trs, steps, size):
    results = [[None] * steps for _ in trs]

    def run(r):
        for step in range(steps):
            trs[r].send(step, bytes([r + step]) * size)
            results[r][step] = bytes(trs[r].wait(step, time.monotonic() + 20))
        trs[r].linger(0.2, time.monotonic() + 5)

    threads = [threading.Thread(target=run, args=(r,)) for r in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    return results


@pytest.mark.parametrize("port,size,faults", [
    (5300, 50_000, None),
    (5310, 60_000, FaultParams(drop=0.05, duplicate=0.01, reorder=0.02, seed=2)),
], ids=["clean", "faults"])
def test_two_transports_exchange_steps(port, size, faults):
    trs, log = _pair(port, size, faults)
    try:
        res = _exchange(trs, 3, size)
    finally:
        for t in trs:
            t.close()
    for r in range(2):
        for step in range(3):
            assert res[r][step] == bytes([(1 - r) + step]) * size
    if faults:
        assert any(kind == "retransmit" for _, kind, _, _ in log)
        assert sum(t.counters["fault_drop"] for t in trs) > 0
