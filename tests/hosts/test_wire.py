"""The packet headers: any bytes parse to a packet or raise a WireError
naming its drop counter; what is packed parses back."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hosts import wire

SETTINGS = settings(max_examples=400, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(st.binary(max_size=100))
def test_parse_raises_only_wire_errors(b):
    try:
        pkt = wire.parse(b)
    except wire.WireError as e:
        assert e.counter
    else:
        assert isinstance(pkt, (wire.Data, wire.Ack, wire.Cnp))


@given(st.integers(0, 65535), st.integers(0, 65535), st.integers(0, 2**32 - 1),
       st.integers(0, 2**32 - 1), st.binary(max_size=64))
def test_data_header_round_trip(job, rank, step, offset, payload):
    pkt = wire.pack_data_header(job, rank, step, offset, len(payload)) + payload
    assert wire.parse(pkt) == wire.Data(job, rank, step, offset, len(payload), 0)


@given(st.integers(0, 65535), st.integers(0, 65535), st.integers(0, 2**32 - 1),
       st.integers(0, 2**32 - 1), st.integers(0, 2**wire.MAX_SACK_BITS - 1), st.integers(0, 65535),
       st.integers(0, 65535))
def test_ack_round_trip(job, rank, step, cum, sack, flags, echo):
    assert wire.parse(wire.pack_ack(job, rank, step, cum, sack, flags, echo)) == \
        wire.Ack(job, rank, step, cum, sack, flags, echo)


def test_an_ack_carries_as_much_bitmap_as_its_highest_packet_needs():
    assert len(wire.pack_ack(1, 0, 0, 0, 0)) == wire.ACK.size
    assert len(wire.pack_ack(1, 0, 0, 0, 1 << 700)) == wire.ACK.size + 88
    full = wire.pack_ack(1, 0, 0, 0, 2**wire.MAX_SACK_BITS - 1)
    assert len(full) == wire.ACK.size + wire.MAX_SACK_BYTES and len(full) + 42 <= 1514   # one frame
    too_long = wire.ACK.pack(wire.MAGIC, wire.VERSION, wire.T_ACK, 1, 0, 0, 0, 0, 0, wire.MAX_SACK_BYTES + 1)
    with pytest.raises(wire.BadLength):
        wire.parse(too_long + bytes(wire.MAX_SACK_BYTES + 1))
