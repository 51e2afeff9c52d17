"""Unit tests of the twin pipeline: its control input, tables, registers and
the marking it does with what topologies.switch.program installs."""

from __future__ import annotations

import pytest

from contract import p4names as N
from topologies.switch import program as S
from topologies.switch.twin import packets
from topologies.switch.twin.pipeline import Pipeline, TwinError, after, ipv4_checksum


def test_serial_after_wraps():
    assert after(0, N.TAG_MASK) and after(1, N.TAG_MASK - 1)
    assert not after(N.TAG_MASK, 0) and not after(5, 5)
    assert not after(N.TAG_HALF, 0) and after(N.TAG_HALF - 1, 0)


def test_serial_after_on_the_dscp_tag():
    # TCP mode: 6-bit tags, 0 after 63, half range 32
    assert after(0, 63, tcp=True) and after(31, 0, tcp=True)
    assert not after(32, 0, tcp=True) and not after(63, 0, tcp=True) and not after(7, 7, tcp=True)
    assert not after(0, 63)                      # the same values are far apart on the 14-bit tag


def test_checksum_matches_a_known_header():
    # RFC 1071-style example header (checksum 0xb861)
    hdr = bytes.fromhex("450000730000400040110000c0a80001c0a800c7")
    assert ipv4_checksum(hdr) == 0xB861


@pytest.mark.parametrize("call, message", [
    (lambda sw: sw.table_add("nope", "drop", [], []), "unknown table"),
    (lambda sw: sw.table_add("forward", "track", ["10.0.0.1/32"], []), "unknown action"),
    (lambda sw: sw.table_add("forward", "ipv4_forward", ["10.0.0.1/33"], ["00:00:00:00:00:01", "1"]), "prefix length"),
    (lambda sw: sw.table_add("forward", "ipv4_forward", ["10.0.0.1/32"], ["00:00:00:00:00:01", "512"]), "9 bits"),
    (lambda sw: sw.table_add("forward", "ipv4_forward", ["10.0.0.1/32"], ["zz", "1"]), "cannot read"),
    (lambda sw: sw.table_add("queue_ecn", "queue_mark_prob", ["5->1"], ["10"], 1), "empty range"),
    (lambda sw: sw.table_add("queue_ecn", "queue_mark_prob", ["5"], ["10"], 1), "lo->hi"),
    (lambda sw: sw.table_add("sym_ecn", "set_sym_ecn", [], ["1", "2"]), "no key"),
    (lambda sw: sw.register_write("flow_step", 1024, 0), "out of range"),
    (lambda sw: sw.register_write("frontier", 0, 1 << 16), "16 bits"),
    (lambda sw: sw.register_read("nope", 0), "unknown register"),
    (lambda sw: sw.counter_read("pkts", -1), "out of range"),
])
def test_bad_control_input_is_a_one_line_error(call, message):
    with pytest.raises(TwinError, match=message):
        call(Pipeline())


def test_duplicate_entries_refused_and_clear_works():
    sw = Pipeline()
    sw.table_add("forward", "ipv4_forward", ["10.0.0.0/8"], ["00:00:00:00:00:01", "1"])
    with pytest.raises(TwinError, match="duplicate"):
        sw.table_add("forward", "ipv4_forward", ["10.1.2.3/8"], ["00:00:00:00:00:01", "1"])
    sw.table_clear("forward")
    _, out, pkt = sw.process(1, packets.build("10.0.0.1", "10.0.0.2"))
    assert out is None and pkt.drop == "no_route"


def test_register_read_whole_array_and_reset():
    sw = Pipeline()
    sw.register_write("frontier", 3, 77)
    assert sw.register_read("frontier")[3] == 77
    assert len(sw.register_read("frontier")) == N.MAX_JOBS
    sw.register_reset("frontier")
    assert sw.register_read("frontier", 3) == 0


def test_max_ranks_per_mode():
    # a ring spreads N-1 steps: below W and below the tag's half range
    assert N.max_ranks(False) == N.W == 64
    assert N.max_ranks(True) == N.DSCP_TAG_HALF == 32


def test_ecn_probability_is_statistical_on_the_ramp():
    sw = Pipeline(seed=3)
    sw.table_add("forward", "ipv4_forward", ["10.0.0.2/32"], ["00:00:00:00:00:02", "2"])
    S.install_queue_ecn(sw, 0, 10, 1.0)
    marks = sum(sw.process(1, packets.build("10.0.0.1", "10.0.0.2", sport=1), 5)[1][15] & 3 == 3
                for _ in range(4000))
    assert 0.45 < marks / 4000 < 0.55           # P = Pmax (5 - 0) / (10 - 0) = 0.5


def test_dump_has_every_register_and_counter():
    sw = Pipeline()
    d = sw.dump()
    assert set(d["registers"]) == set(N.REGISTERS) and set(d["counters"]) == set(N.COUNTERS)
