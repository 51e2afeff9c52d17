"""Property-based fuzzing of what an endpoint does with any bytes that reach
its ports: parse, check, count, drop; nothing raises past the drop counters."""

import struct

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hosts import wire
from hosts.udp.endpoint import Endpoint
from hosts.udp.params import UdpParams
from hosts.wire import DATA

PRED, SUCC = "10.0.0.1", "10.0.0.3"
SETTINGS = settings(max_examples=400, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


class _Out:
    def __init__(self):
        self.n = 0

    def data(self, step, hdr, payload):
        self.n += 1

    def ctrl(self, pkt):
        self.n += 1


def _endpoint():
    ep = Endpoint(job=3, rank=1, pred=(0, PRED), succ=(2, SUCC), data_port=5000,
                  params=UdpParams(payload_bytes=64), recv_len=lambda s: 300 if 0 <= s < 8 else None,
                  out=_Out(), log=lambda *a, **k: None)
    ep.start_send(0, bytes(300), 0.0)
    ep.sender.poll_tx(0.0)
    return ep


def _valid_packets():
    out = []
    for step in range(3):
        for off in range(0, 300, 64):
            ln = min(64, 300 - off)
            out.append(DATA.pack(wire.MAGIC, wire.VERSION, wire.T_DATA, 3, 0, step, off, ln, 0)
                       + bytes(ln))
    out += [wire.pack_ack(3, 2, 0, 128, 0b101), wire.pack_ack(3, 2, 0, 0, 0, wire.ACK_COMPLETE),
            wire.pack_cnp(3, 2, 0)]
    return out


@st.composite
def mutated(draw):
    pkt = bytearray(draw(st.sampled_from(_valid_packets())))
    for _ in range(draw(st.integers(1, 6))):
        op = draw(st.integers(0, 3))
        if op == 0 and pkt:                      # flip a byte
            i = draw(st.integers(0, len(pkt) - 1))
            pkt[i] = draw(st.integers(0, 255))
        elif op == 1:                            # cut
            pkt = pkt[:draw(st.integers(0, len(pkt)))]
        elif op == 2:                            # append junk
            pkt += draw(st.binary(max_size=80))
        elif len(pkt) >= 20:                     # a header field set to an edge value
            fmt, at = draw(st.sampled_from([("!I", 8), ("!I", 12), ("!H", 16), ("!H", 4),
                                             ("!H", 6), ("!Q", 16)]))
            if at + struct.calcsize(fmt) <= len(pkt):
                val = draw(st.sampled_from([0, 1, 63, 64, 299, 300, 2**16 - 1, 2**32 - 1]))
                struct.pack_into(fmt, pkt, at, val & ((1 << (8 * struct.calcsize(fmt))) - 1))
    return bytes(pkt)


packets = st.one_of(st.binary(max_size=200), mutated())
sources = st.sampled_from([PRED, SUCC, "10.9.9.9"])
ports = st.sampled_from([0xC000, 0xC001, 0xC002, 5000, 12345])
tos = st.integers(0, 255)


def _accounted(ep):
    return sum(ep.counters.values())


@SETTINGS
@given(st.lists(st.tuples(packets, sources, ports, tos, st.booleans()), min_size=1, max_size=30))
def test_nothing_raises_and_every_packet_is_counted(batch):
    ep = _endpoint()
    now = 0.001
    for pkt, src, port, t, to_data in batch:
        before = _accounted(ep)
        if to_data:
            ep.on_data_packet(pkt, len(pkt), src, port, t, now)
        else:
            ep.on_ctrl_packet(pkt, len(pkt), src, port, now)
        assert _accounted(ep) > before        # dropped (a drop_ counter) or taken
        now += 0.0001
        ep.service(now)
