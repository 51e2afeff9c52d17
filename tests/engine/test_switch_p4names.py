"""The compiled pipeline's names, widths and sizes (engine/src/pipeline.hpp)
are contract/p4names.py's, and its control-frame rule is bmv2.py's."""

from __future__ import annotations

import symphony_engine as E
from contract import p4names as N
from topologies.switch import bmv2


def test_constants_agree_with_p4names():
    for name, value in E.P4_CONSTANTS.items():
        assert getattr(N, name) == value, name
    assert len(E.P4_CONSTANTS) >= 25


def test_registers_and_counters_agree_with_p4names():
    assert [tuple(r) for r in E.P4_REGISTERS] == [(r.name, r.width, r.size) for r in N.REGISTERS.values()]
    assert [tuple(c) for c in E.P4_COUNTERS] == [(c.name, c.size) for c in N.COUNTERS.values()]


def test_table_sizes_and_widths_agree_with_p4names():
    c = E.P4_CONSTANTS
    assert [c["FORWARD_SIZE"], c["ECMP_SELECT_SIZE"], c["FLOWS_SIZE"], c["QUEUE_ECN_SIZE"], c["SYM_ECN_SIZE"],
            c["SYM_VERDICT_SIZE"]] == \
        [t.size for t in N.TABLES.values()]
    assert c["ECMP_SELECT_SIZE"] == c["ECMP_GROUPS"] * c["ECMP_BUCKETS"] == N.ECMP_SELECT_SIZE
    assert dict(N.ACTIONS["set_sym_ecn"])["k"] == c["QDEPTH_BITS"]
    assert dict(N.ACTIONS["ipv4_forward"])["port"] == c["PORT_BITS"]
    assert 1 << c["PORT_BITS"] == c["NUM_PORTS"]


def test_ctrl_frame_size_is_bmv2s():
    assert E.CTRL_FRAME_BYTES == bmv2.CTRL_FRAME_BYTES
