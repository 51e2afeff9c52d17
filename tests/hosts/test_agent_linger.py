"""A finished agent stays until its predecessor could have retransmitted."""
import pytest

from hosts.agent import linger_idle_s
from hosts.transport import UdpParams


@pytest.mark.parametrize("rto_ms,rto_max_ms", [(50, 1000), (20, 200), (200, 5000), (100, 100)])
def test_linger_outlasts_the_longest_retransmission_gap(rto_ms, rto_max_ms):
    p = UdpParams(rto_ms=rto_ms, rto_max_ms=rto_max_ms)
    # a sender whose last ACK was lost backs off to at most rto_max between tries
    assert linger_idle_s(p) > p.rto_max_ms / 1000.0
