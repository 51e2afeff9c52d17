"""The receiving half of the UDP engine: steps buffered ahead, CNPs on CE
marks, re-acks of steps already handed on."""

from contract import tags
from hosts import wire
from hosts.dcqcn import NotificationPoint
from tests.harness.udp_ring import Sim, data_packet, lone_endpoint


def test_receiver_buffers_steps_ahead():
    # rank 0 sends steps 0 and 1 while rank 1 has not taken step 0 yet: rank 1
    # buffers and acknowledges both, so rank 0 is never held up by it
    n, size = 2, 5000
    sim = Sim(n, lambda r, step: size)
    a, b = bytes(range(250)) * 20, bytes(reversed(range(250))) * 20
    sim.eps[0].start_send(0, a, 0.0)
    sim.eps[0].start_send(1, b, 0.0)
    assert sim.run_until(lambda: sim.eps[0].send_done(0) and sim.eps[0].send_done(1))
    assert sim.eps[1].recv_done(0) and sim.eps[1].recv_done(1)
    assert bytes(sim.eps[1].take(0)) == a and bytes(sim.eps[1].take(1)) == b


def test_cnp_sent_on_ce_and_logged():
    n, size = 2, 14_000
    sim = Sim(n, lambda r, step: size, tos=tags.ECN_CE, np_factory=lambda: NotificationPoint(0.0))
    sim.step(0, [bytes(size)] * n)
    for r, ep in enumerate(sim.eps):
        assert ep.counters["rx_ce"] == 10
        assert ep.counters["tx_cnp"] == 10
        assert ep.counters["rx_cnp"] == 10
        kinds = [(k, f["dir"]) for k, _, f in sim.logs[r] if k == "cnp"]
        assert kinds.count(("cnp", "tx")) == 10 and kinds.count(("cnp", "rx")) == 10


# --- bad input: counted and dropped ------------------------------------------


def test_old_step_data_is_reacked_complete():
    ep, out = lone_endpoint(size=1400)
    pkt = data_packet()
    ep.on_data_packet(pkt, len(pkt), "10.0.0.1", 0xC000, 0, 0.0)
    assert ep.recv_done(0)
    ep.take(0)
    out.ctrl_pkts.clear()
    ep.on_data_packet(pkt, len(pkt), "10.0.0.1", 0xC000, 0, 0.1)
    ack = wire.parse(out.ctrl_pkts[-1])
    assert isinstance(ack, wire.Ack) and ack.flags & wire.ACK_COMPLETE and ack.step == 0


def test_packets_behind_a_newer_steps_are_counted():
    # under ECMP a step's tail can arrive after the next step's head: the
    # receiver counts each such valid packet once (rx_older_step), and not
    # the packets of the newest step it has seen
    ep, _ = lone_endpoint(size=2800)
    arrivals = [(1, 0), (0, 0), (0, 1400), (1, 1400), (2, 0), (1, 1400)]
    for t, (step, off) in enumerate(arrivals):
        pkt = data_packet(step=step, offset=off)
        ep.on_data_packet(pkt, len(pkt), "10.0.0.1", 0xC000 | step, 0, 0.01 * t)
    assert ep.counters["rx_data"] == 6
    assert ep.counters["rx_older_step"] == 3      # step 0 twice after step 1, step 1 again after step 2
