"""The packet headers: any bytes parse to a packet or raise a WireError
naming its drop counter; what is packed parses back."""

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
       st.integers(0, 2**32 - 1), st.integers(0, 2**64 - 1), st.integers(0, 65535),
       st.integers(0, 65535))
def test_ack_round_trip(job, rank, step, cum, sack, flags, echo):
    assert wire.parse(wire.pack_ack(job, rank, step, cum, sack, flags, echo)) == \
        wire.Ack(job, rank, step, cum, sack, flags, echo)
