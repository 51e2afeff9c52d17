"""The TCP transport's framing: whole steps out of a stream cut anywhere,
and a reason for every stream that is not ours."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hosts.tcp.framing import MSG, FrameReader, FramingError, header
from hosts.wire import MAGIC, T_DATA, VERSION

JOB, PRED = 3, 4


def msg(step, payload, job=JOB, rank=PRED, mtype=T_DATA):
    return MSG.pack(MAGIC, VERSION, mtype, job, rank, step, len(payload)) + payload


def lengths(step):
    return None if step >= 10 else 10 * step + 3


def stream(steps):
    return b"".join(msg(s, bytes([s]) * lengths(s)) for s in steps)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 40), max_size=30))
def test_frames_come_out_whole_however_the_stream_is_cut(cuts):
    data = stream(range(10))
    pos, got = 0, []
    reader = FrameReader(JOB, PRED, lengths)
    for c in cuts + [len(data)]:
        got += reader.feed(data[pos:pos + c])
        pos += c
        if pos >= len(data):
            break
    got += reader.feed(data[pos:])
    assert [s for s, _ in got] == list(range(10))
    assert all(p == bytes([s]) * lengths(s) for s, p in got)


@pytest.mark.parametrize("bad, why", [
    (msg(0, b"x" * 3, job=9), "job 9"),
    (msg(0, b"x" * 3, rank=1), "rank 1"),
    (msg(0, b"x" * 4), "expected 3"),
    (msg(0, b"x" * 3) + msg(2, b"x" * 23), "after step 0"),
    (msg(12, b""), "expected None"),
    (b"\0" * MSG.size, "not a step message"),
])
def test_bad_streams_are_refused_with_a_reason(bad, why):
    with pytest.raises(FramingError, match=why):
        FrameReader(JOB, PRED, lengths).feed(bad)


def test_header_frames_a_step_the_reader_takes():
    assert FrameReader(JOB, PRED, lengths).feed(header(JOB, PRED, 0, 3) + b"abc") == [(0, bytearray(b"abc"))]
