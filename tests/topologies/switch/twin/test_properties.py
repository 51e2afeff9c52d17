"""Property tests of the twin pipeline (hypothesis): random ring-like packet
sequences, over UDP (14-bit source-port tag) or TCP (6-bit DSCP tag), keep
the frontier at the slowest local flow, never count a jump and mark only
outpacing flows where packets wait; random and mutated bytes never make the parser raise."""

from __future__ import annotations

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from contract import p4names as N
from contract.tags import serial_diff, tag_dscp, tag_port
from topologies.switch import program as S
from topologies.switch.twin import packets
from topologies.switch.twin.pipeline import Pipeline

HOSTS = [f"10.0.0.{i}" for i in range(1, 9)]
DPORT = 5000


def make_switch(n_flows: int, threshold: int, k_sym: int, first_step: int, pmax: float | None = None,
                seed: int = 0, tcp: bool = False) -> Pipeline:
    sw = Pipeline(seed)
    for i, ip in enumerate(HOSTS):
        sw.table_add("forward", "ipv4_forward", [f"{ip}/32"], [f"00:00:0a:00:00:{i + 1:02x}", str(i + 1)])
    # a ring: flow i from host i to host i+1, all crossing this switch
    for i in range(n_flows):
        S.add_flow(sw, HOSTS[i], HOSTS[(i + 1) % n_flows], DPORT, i, 0, n_flows, threshold, 1, tcp)
    S.install_job(sw, 0, list(range(n_flows)), first_step, tcp)
    S.install_sym_ecn(sw, k_sym, 1.0)
    if pmax is not None:
        S.install_queue_ecn(sw, 2, 6, pmax)
    return sw


def ring_packet(src: int, dst: int, step: int, ecn: int, tcp: bool) -> bytes:
    """A ring flow's data packet with the step tag where its transport puts it."""
    if tcp:
        return packets.build(HOSTS[src], HOSTS[dst], proto="tcp", sport=40000 + src, dport=DPORT,
                             dscp=tag_dscp(step), ecn=ecn)
    return packets.build(HOSTS[src], HOSTS[dst], sport=tag_port(step), dport=DPORT, ecn=ecn)


action = st.tuples(st.integers(0, 7),                     # flow (mod n)
                   st.sampled_from(["advance", "advance", "repeat", "old"]),
                   st.integers(0, 6),                     # enq_qdepth
                   st.sampled_from([0, 1, 2, 3]))         # ECN bits


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tcp=st.booleans(), n_flows=st.integers(2, 6), threshold=st.integers(0, 3), k_sym=st.integers(0, 3),
       first_step=st.one_of(st.integers(0, N.TAG_MASK), st.integers(N.TAG_MASK - 8, N.TAG_MASK),
                            st.integers(N.DSCP_TAG_MASK - 8, N.DSCP_TAG_MASK)),
       actions=st.lists(action, min_size=1, max_size=120), spread=st.sampled_from([3, 8, "max"]))
@example(tcp=True, n_flows=2, threshold=0, k_sym=1, first_step=62, spread=3,      # across the 6-bit wrap
         actions=[(0, "advance", 2, 2), (1, "advance", 2, 2)] * 4)
def test_frontier_is_slowest_flow_and_marks_only_outpacing(tcp, n_flows, threshold, k_sym, first_step, actions,
                                                             spread):
    bits, mask = N.tag_bits(tcp), N.tag_mask(tcp)
    if spread == "max":
        spread = N.max_ranks(tcp) - 1                     # the widest spread a supported ring reaches
    first_step &= mask
    sw = make_switch(n_flows, threshold, k_sym, first_step, tcp=tcp)
    newest = [-1] * n_flows                                # per flow, offset from first_step; -1: not started
    for flow, kind, q, ecn in actions:
        f = flow % n_flows
        if kind == "advance":
            if newest[f] + 1 - min(newest) > spread:        # ring flows stay within W of each other
                continue
            off = newest[f] + 1
        elif kind == "repeat":
            if newest[f] < 0:
                continue
            off = newest[f]
        else:
            if newest[f] < 1:
                continue
            off = max(0, newest[f] - 2)                    # a late retransmission of an older step
        step = (first_step + off) & mask
        frame = ring_packet(f, (f + 1) % n_flows, step, ecn, tcp)
        port, out, pkt = sw.process(f + 1, frame, q)
        assert port is not None and pkt.tracked
        assert not pkt.jump                                # a ring flow never jumps (step_jumps stays 0)
        newest[f] = max(newest[f], off)
        slowest = (first_step + min(newest)) & mask
        frontier = sw.register_read("frontier", 0)
        # the frontier is exactly the slowest local flow's newest step (so it never passes it)
        assert frontier == slowest
        assert serial_diff(frontier, slowest, bits) <= 0
        outpacing = threshold < serial_diff(step, slowest, bits)
        expect_mark = ecn in (1, 2) and outpacing and q >= k_sym
        # no queue ECN installed: CE out iff CE in or a Symphony mark
        assert (out[15] & 3 == 3) == (ecn == 3 or expect_mark)
        assert pkt.sym_mark == expect_mark


@settings(max_examples=100, deadline=None)
@given(tcp=st.booleans(), n_flows=st.integers(2, 4), pmax=st.floats(0, 1), seed=st.integers(0, 2**16),
       actions=st.lists(action, min_size=1, max_size=60))
def test_symphony_marks_counted_only_when_outpacing_and_queued(tcp, n_flows, pmax, seed, actions):
    """With queue marking on as well (random draws), the sym_marks counter
    grows only for packets of outpacing flows that saw q >= K_sym."""
    sw = make_switch(n_flows, 0, 1, 0, pmax=pmax, seed=seed, tcp=tcp)
    newest = [-1] * n_flows
    for flow, kind, q, ecn in actions:
        f = flow % n_flows
        off = newest[f] + 1 if kind == "advance" and newest[f] + 1 - min(newest) <= 3 else max(newest[f], 0)
        frame = ring_packet(f, (f + 1) % n_flows, off, ecn, tcp)
        before = sw.counter_read("sym_marks", f).packets
        _, out, pkt = sw.process(f + 1, frame, q)
        newest[f] = max(newest[f], off)
        grew = sw.counter_read("sym_marks", f).packets - before
        if grew:
            assert ecn in (1, 2) and q >= 1 and serial_diff(off, min(newest), N.tag_bits(tcp)) > 0
            assert out[15] & 3 == 3
        if pkt.queue_mark:
            assert q > 2 and out[15] & 3 == 3


# --- parser fuzzing (issue 9): nothing raises past the drop counters --------

def _fuzz_switch(tcp: bool = False) -> Pipeline:
    return make_switch(3, 1, 1, 0, pmax=0.5, tcp=tcp)


@settings(max_examples=400, deadline=None)
@given(data=st.binary(max_size=200), port=st.integers(0, 600), q=st.integers(-5, 1 << 20), tcp=st.booleans())
def test_parser_random_bytes_never_raise(data, port, q, tcp):
    sw = _fuzz_switch(tcp)
    out_port, out, pkt = sw.process(port, data, q)
    assert (out is None) == (pkt.drop is not None)
    if out is None:
        assert sum(sw.drops.values()) == 1
    else:
        assert len(out) == len(data)


VALID = [packets.build("10.0.0.1", "10.0.0.2", sport=tag_port(3), dport=DPORT),
         packets.build("10.0.0.2", "10.0.0.3", proto="tcp", sport=tag_port(3), dport=DPORT),
         packets.build("10.0.0.3", "10.0.0.1", proto="icmp")]


@settings(max_examples=400, deadline=None)
@given(base=st.sampled_from(VALID),
       edits=st.lists(st.tuples(st.integers(0, 120), st.integers(0, 255)), max_size=8),
       cut=st.integers(0, 130), tcp=st.booleans())
def test_parser_mutated_frames_never_raise(base, edits, cut, tcp):
    frame = bytearray(base)
    for pos, byte in edits:
        if pos < len(frame):
            frame[pos] = byte
    frame = bytes(frame[:cut])
    sw = _fuzz_switch(tcp)
    out_port, out, pkt = sw.process(1, frame, 3)
    if out is not None:
        assert out_port in range(1, 9)
        assert packets.fields(out)["checksum_ok"]
    else:
        assert pkt.drop in sw.drops
