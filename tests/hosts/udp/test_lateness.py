"""How late the sender's loop ran what was due (its stats event's
``lateness``), on a virtual clock: a packet only the pacer held, against its
release time; a DCQCN timer event, against its time.  And the transport's
wait(): a step is done for the ring once received and all sent, its ACKs may
come later."""

from collections import defaultdict

import pytest

from hosts.dcqcn import FixedRate, ReactionPoint, paper_params
from hosts.udp.params import WIRE_OVERHEAD, UdpParams
from hosts.udp.sender import Sender
from tests.harness.udp_ring import Recorder, Sim


def sender(rp, **params):
    return Sender(job=3, rank=1, succ_rank=2, params=UdpParams(**params), out=Recorder(),
                  log=lambda *a, **k: None, counters=defaultdict(int), rp=rp)


def test_pacing_lateness_is_the_delay_past_the_pacers_release_time():
    rate = 8e6
    s = sender(FixedRate(rate), burst_packets=1)
    s.peer_heard = True
    s.start(0, bytes(14_000), 0.0)
    gap = (1400 + WIRE_OVERHEAD) * 8 / rate
    s.poll_tx(0.0)                       # one packet; the next is held until gap
    assert s.late_pacing.n == 0
    s.poll_tx(gap / 2)                   # early call: nothing due, nothing recorded
    assert s.late_pacing.n == 0
    s.poll_tx(gap + 0.003)               # 3 ms late
    assert s.late_pacing.n == 1 and s.late_pacing.max == pytest.approx(0.003)
    rec = s.lateness()["pacing"]
    assert rec["n"] == 1 and rec["max_ms"] == pytest.approx(3.0)


def test_nothing_held_nothing_recorded():
    s = sender(FixedRate(None))          # unpaced: the window alone
    s.peer_heard = True
    s.start(0, bytes(14_000), 0.0)
    s.poll_tx(0.0)
    s.poll_tx(1.0)
    assert s.late_pacing.n == 0 and s.lateness()["dcqcn_timer"]["n"] == 0


def test_timer_lateness_is_the_delay_past_the_reaction_points_event():
    rp = ReactionPoint(paper_params(10e6), now=0.0)
    s = sender(rp)
    s.on_cnp(type("Cnp", (), {"step": 0})(), 0.0)      # the first CNP starts the timers
    due = rp.next_event_time()
    assert 0 < due < 1
    s.fire_timers(due + 0.002)
    assert s.late_timer.n == 1 and s.late_timer.max == pytest.approx(0.002)
    s.fire_timers(due + 0.002)           # nothing due any more: no sample
    assert s.late_timer.n == 1


def test_a_step_is_done_for_the_ring_before_its_acks_are_in():
    """sent_all: every packet sent once; send_done: every packet acked.  The
    UDP transport's wait() needs the first (and the data received)."""
    sim = Sim(2, lambda r, step: 28_000 if step < 2 else None, delay=0.005)
    for ep in sim.eps:
        ep.start_send(0, bytes(28_000), 0.0)
    sim.run_until(lambda: all(ep.sent_all(0) and ep.recv_done(0) for ep in sim.eps))
    assert not all(ep.send_done(0) for ep in sim.eps)     # the last ACKs are still under way
    sim.run_until(lambda: all(ep.send_done(0) for ep in sim.eps))
    assert all(ep.sent_all(0) for ep in sim.eps) and not sim.eps[0].sent_all(1)
