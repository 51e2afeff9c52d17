"""The UDP protocol engine on a virtual clock: a ring of endpoints joined by an
in-memory network with delay, loss, duplication and reordering; what arrives
at either port is checked, counted and dropped when it is not ours."""

import random

import pytest

from hosts import wire
from hosts.udp.params import UdpParams
from tests.harness.udp_ring import PORT, Sim, data_packet, lone_endpoint


def _payloads(n, size, step):
    rng = random.Random(step)
    return [bytes(rng.getrandbits(8) for _ in range(size + r)) for r in range(n)]


def _run(sim, n, size, steps):
    for step in range(steps):
        sent = _payloads(n, size, step)
        got = sim.step(step, sent)
        for r in range(n):
            assert got[r] == sent[(r - 1) % n], f"rank {r} step {step}"


@pytest.mark.parametrize("n", [2, 3, 5])
def test_clean_network_delivers_every_step(n):
    size = 20_000
    sim = Sim(n, lambda r, step: size + (r - 1) % n if step < 4 else None)
    _run(sim, n, size, 4)
    for ep in sim.eps:
        assert not any(k.startswith("retransmit") or k.startswith("drop") for k in ep.counters)


def test_loss_dup_reorder_still_exact_and_retransmits_logged():
    n, size = 3, 30_000
    sim = Sim(n, lambda r, step: size + (r - 1) % n, drop=0.05, dup=0.01, reorder=0.05, seed=4)
    _run(sim, n, size, 6)
    total = sum(ep.counters["retransmit_gap"] + ep.counters["retransmit_timeout"]
                + ep.counters["retransmit_probe"] for ep in sim.eps)
    assert total > 0
    logged = [e for log in sim.logs for e in log if e[0] == "retransmit"]
    assert len(logged) == total
    assert {e[2]["why"] for e in logged} <= {"gap", "timeout", "probe"}
    assert sum(ep.counters["dup_data"] for ep in sim.eps) > 0


def test_heavy_loss_including_acks():
    n, size = 2, 10_000
    sim = Sim(n, lambda r, step: size + (r - 1) % n, drop=0.3, seed=7)
    _run(sim, n, size, 3)


@pytest.mark.parametrize("pkt,src,counter", [
    (data_packet()[:11], ("10.0.0.1", 0xC000), "drop_truncated"),
    (data_packet()[:19], ("10.0.0.1", 0xC000), "drop_truncated"),
    (data_packet(magic=0x1234), ("10.0.0.1", 0xC000), "drop_bad_magic"),
    (data_packet(version=9), ("10.0.0.1", 0xC000), "drop_bad_version"),
    (data_packet(length=1000), ("10.0.0.1", 0xC000), "drop_bad_length"),
    (data_packet(job=4), ("10.0.0.1", 0xC000), "drop_job"),
    (data_packet(), ("10.0.0.9", 0xC000), "drop_peer"),
    (data_packet(rank=2), ("10.0.0.1", 0xC000), "drop_peer"),
    (data_packet(), ("10.0.0.1", 0xC001), "drop_tag"),
    (data_packet(step=7), ("10.0.0.1", 0xC007), "drop_step"),
    (data_packet(offset=2800), ("10.0.0.1", 0xC000), "drop_offset"),
    (data_packet(offset=700), ("10.0.0.1", 0xC000), "drop_offset"),
    (data_packet(offset=1400, payload=b"x" * 1401), ("10.0.0.1", 0xC000), "drop_offset"),
    (wire.pack_ack(3, 0, 0, 0), ("10.0.0.1", 0xC000), "drop_misdirected"),
])
def test_bad_data_packets_counted_and_dropped(pkt, src, counter):
    ep, out = lone_endpoint()
    ep.on_data_packet(pkt, len(pkt), src[0], src[1], 0, 0.0)
    assert ep.counters[counter] == 1
    assert ep.counters["rx_data"] == 0
    assert not out.ctrl_pkts
    assert all(f.n_got == 0 for f in ep.receiver.flows.values())


def test_bad_control_packets_counted_and_dropped():
    ep, out = lone_endpoint()
    ep.start_send(0, bytes(2800), 0.0)
    ep.sender.poll_tx(0.0)
    cases = [
        (wire.pack_ack(3, 2, 0, 2800, 0, wire.ACK_COMPLETE), "10.0.0.1", "drop_peer"),
        (wire.pack_ack(3, 0, 0, 2800, 0, wire.ACK_COMPLETE), "10.0.0.3", "drop_peer"),
        (wire.pack_ack(5, 2, 0, 2800, 0, wire.ACK_COMPLETE), "10.0.0.3", "drop_job"),
        (wire.pack_ack(3, 2, 0, 9999), "10.0.0.3", "drop_bad_ack"),
        (wire.pack_ack(3, 2, 0, 700), "10.0.0.3", "drop_bad_ack"),
        (wire.pack_cnp(3, 0, 0), "10.0.0.1", "drop_peer"),
        (data_packet(), "10.0.0.3", "drop_misdirected"),
        (wire.pack_ack(3, 2, 0, 2800)[:20], "10.0.0.3", "drop_truncated"),
    ]
    for pkt, src, counter in cases:
        before = ep.counters[counter]
        ep.on_ctrl_packet(pkt, len(pkt), src, PORT, 0.001)
        assert ep.counters[counter] == before + 1, counter
    assert not ep.send_done(0)
    good = wire.pack_ack(3, 2, 0, 2800, 0, wire.ACK_COMPLETE)
    ep.on_ctrl_packet(good, len(good), "10.0.0.3", PORT, 0.002)
    assert ep.send_done(0)


def test_waiting_on_names_peer_and_step():
    ep, _ = lone_endpoint()
    ep.start_send(2, bytes(100), 0.0)
    info = ep.waiting_on(2)
    assert info["waiting_for"] == "data" and info["peer"] == 0 and info["step"] == 2
    assert "rank 0" in info["what"]


def test_rtt_samples_are_counted_for_the_stats_event():
    """The senders' RTT samples (Karn's) in the counters the agent writes in
    its stats event: their number, sum and minimum, and the final SRTT, in us.
    Every packet takes 2 ms each way here: no sample is below 4 ms."""
    sim = Sim(2, lambda r, step: 20_000 + (r - 1) % 2 if step < 2 else None, delay=0.002)
    _run(sim, 2, 20_000, 2)
    for ep in sim.eps:
        c = ep.counters
        assert c["rtt_samples"] >= 2
        assert 4000 <= c["rtt_min_us"] <= c["rtt_sum_us"] / c["rtt_samples"]
        # plus at most the ACK delay and pacing
        assert 4000 <= c["rtt_srtt_us"] < 4000 + UdpParams().ack_delay_ms * 1000 + 3000


def test_a_finished_rank_lingers_while_its_successor_still_acknowledges_new_data():
    """A rank that has finished stays while its last step is not all
    acknowledged and its successor still acknowledges new data (leaving
    stranded the successor until its step deadline); it goes once
    everything is acknowledged, or once the successor has acknowledged
    nothing new for idle_s."""
    ep, _ = lone_endpoint()
    assert ep.quiet_at(1.0, 0.3) == pytest.approx(1.3)           # nothing sent: the predecessor alone
    ep.start_send(3, bytes(2800), 1.0)
    ep.service(1.0)
    assert ep.quiet_at(1.0, 0.3) == pytest.approx(1.3)           # no ACK yet: idle_s from the linger's start
    part = wire.pack_ack(3, 2, 3, 1400)                          # the first of two packets
    ep.on_ctrl_packet(part, len(part), "10.0.0.3", PORT, 2.0)
    assert ep.quiet_at(1.0, 0.3) == pytest.approx(2.3)           # new data acknowledged at 2.0: stays
    done = wire.pack_ack(3, 2, 3, 2800, 0, wire.ACK_COMPLETE)
    ep.on_ctrl_packet(done, len(done), "10.0.0.3", PORT, 2.1)
    assert ep.send_done(3) and ep.quiet_at(1.0, 0.3) == pytest.approx(1.3)
