"""Receive-side fault injection: the rates it was asked for, and real reordering."""

from hosts.udp.faults import FaultInjector
from hosts.udp.params import FaultParams


def test_fault_injector_rates():
    counters = {"fault_drop": 0, "fault_dup": 0, "fault_reorder": 0}
    f = FaultInjector(FaultParams(drop=0.05, duplicate=0.01, reorder=0.02, seed=1), counters)
    delivered = []
    for i in range(20_000):
        delivered += f.feed(i, 0.0)
    delivered += f.release(1.0)
    assert 800 <= counters["fault_drop"] <= 1200
    assert 120 <= counters["fault_dup"] <= 280
    assert 250 <= counters["fault_reorder"] <= 550
    assert len(delivered) == 20_000 - counters["fault_drop"] + counters["fault_dup"]
    assert delivered != sorted(delivered)
