"""The agent's own rules: which class carries each transport, and how long a
finished agent stays until its predecessor could have retransmitted."""

import pytest

from contract.tags import TRANSPORTS
from hosts.agent import TRANSPORT_CLASSES
from hosts.rank import linger_idle_s
from hosts.udp.params import UdpParams


def test_every_transport_name_has_a_class():
    assert set(TRANSPORT_CLASSES) == set(TRANSPORTS)
    assert all(cls.name == name for name, cls in TRANSPORT_CLASSES.items())


@pytest.mark.parametrize("rto_ms,rto_max_ms", [(50, 1000), (20, 200), (200, 5000), (100, 100)])
def test_linger_outlasts_the_longest_retransmission_gap(rto_ms, rto_max_ms):
    p = UdpParams(rto_ms=rto_ms, rto_max_ms=rto_max_ms)
    # a sender whose last ACK was lost backs off to at most rto_max between tries
    assert linger_idle_s(p) > p.rto_max_ms / 1000.0
