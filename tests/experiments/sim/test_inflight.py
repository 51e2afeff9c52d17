"""Host NIC semantics of RoCE (issue 22): a flow sends at its DCQCN rate, so
the first CNP to it cuts what it puts on the wire within a few RTTs; what
else bounds it (the in-flight bound the experiments derive,
experiments.config.derive) does not bind below that rate.  A window that
holds a flow below its DCQCN rate (the victim configs' 16 packets, or any
window-limited flow at a quarter of line rate) makes the same CNP change
nothing.  On the simulation target, at the deployment's rates and DCQCN."""

from __future__ import annotations

import pytest

from experiments.config import derive
from experiments.sim.flows import Incast, _plan, delivered_rate_bps, run
from hosts.dcqcn_regime import DEPLOYMENT
from hosts.udp.params import UdpParams
from topologies.switch.params import EcnParams

RTT = DEPLOYMENT.base_rtt_s
T = 0.6e-3                        # the CNP, once every flow is in its steady state
ECN = EcnParams(kmin=400, kmax=1600, pmax=0.2)


def incast(senders: int, window: int | None) -> Incast:
    udp = UdpParams(payload_bytes=1000, rto_ms=1, ack_delay_ms=RTT * 1e3, rto_max_ms=100, window_packets=1)
    net = Incast(senders, DEPLOYMENT.line_rate_bps / 1e6, RTT / 4 * 1e3, 3200, ECN, udp, DEPLOYMENT.dcqcn)
    if window is None:          # the bound the experiments derive for this network
        plan = _plan(net)
        window = derive.window_packets(plan.topo, plan.placed[0], udp)
    return Incast(senders, net.rate_mbit, net.delay_ms, net.queue_pkts, ECN,
                  UdpParams(**{**udp.__dict__, "window_packets": window}), DEPLOYMENT.dcqcn)


def rates(flow, points=(-4, -2, 2, 4, 6, 8, 10)) -> list[float]:
    """Delivered rate over 2-RTT windows starting `points` RTTs after the CNP."""
    return [delivered_rate_bps(flow, T + k * RTT, T + (k + 2) * RTT) for k in points]


@pytest.mark.parametrize("window, feels_it", [(None, True), (16, False)])
def test_the_first_cnp_to_a_lone_flow_cuts_its_rate_unless_a_window_holds_it_below(window, feels_it):
    net = incast(1, window)
    plain, = run(net, [8_000_000], [0.0], until=0.02)
    cut, = run(net, [8_000_000], [0.0], until=0.02, cnp_at={0: T})
    before = delivered_rate_bps(plain, T - 10 * RTT, T)
    if feels_it:
        assert before > 0.9 * DEPLOYMENT.line_rate_bps and plain.max_in_flight < net.udp.window_packets
        # the cut takes the decrease period (50 us, 5 RTTs) to apply, then the rate on the wire halves
        during = delivered_rate_bps(cut, T + 7 * RTT, T + 9 * RTT)
        assert during < 0.6 * before
        assert cut.fct_s > plain.fct_s
    else:
        # 16 packets per RTT: 12.8 Gbit/s, below the 50 Gbit/s the cut leaves
        assert before < 0.2 * DEPLOYMENT.line_rate_bps
        assert cut.delivered == plain.delivered and cut.fct_s == plain.fct_s


def test_window_limited_flows_at_a_quarter_of_line_rate_do_not_feel_the_first_cnp():
    net = incast(4, 34)           # 34 packets per RTT: a quarter of 100 Gbit/s
    plain = run(net, [4_000_000] * 4, [0.0, 1e-5, 2e-5, 3e-5], until=0.03)
    cut = run(net, [4_000_000] * 4, [0.0, 1e-5, 2e-5, 3e-5], until=0.03, cnp_at={0: T})
    share = delivered_rate_bps(plain[0], T - 30 * RTT, T)
    assert 0.2 * DEPLOYMENT.line_rate_bps < share < 0.3 * DEPLOYMENT.line_rate_bps
    assert cut[0].rates and cut[0].rates[0][1] < DEPLOYMENT.line_rate_bps     # the cut did happen
    assert cut[0].delivered == plain[0].delivered                             # and changed nothing


def test_the_derived_bound_does_not_bind_while_dcqcn_shares_a_bottleneck():
    net = incast(4, None)
    flows = run(net, [4_000_000] * 4, [0.0, 1e-5, 2e-5, 3e-5], until=0.03)
    assert all(f.fct_s is not None for f in flows)
    assert max(f.max_in_flight for f in flows) < net.udp.window_packets
