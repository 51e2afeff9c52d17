"""The conformance vectors of p4/tests/ over the wire: on the twin process
over veths (root) and on BMv2 simple_switch (when it is installed; skipped
with the reason otherwise), packets through AF_PACKET sockets, a queue depth
made real with a held queue and fillers; closing a rig leaves no socket
behind."""

from __future__ import annotations

import copy
import gc
import warnings

import pytest

from topologies.switch.conformance import load_vectors, run_vector
from topologies.switch.conformance_rig import Bmv2Target, TwinProcessTarget

VECTORS = load_vectors()
IDS = [v.id for v in VECTORS]

# BMv2's simple_switch, and the twin process taking the same path
WIRE_TARGETS = [pytest.param(Bmv2Target, marks=[pytest.mark.bmv2, pytest.mark.root], id="bmv2"),
                pytest.param(TwinProcessTarget, marks=pytest.mark.root, id="twin_process")]


@pytest.fixture(scope="module", params=WIRE_TARGETS)
def wire_target(request):
    target = request.param()
    yield target
    target.close()


@pytest.mark.parametrize("vector", VECTORS, ids=IDS)
def test_vector_on_a_wire_target(vector, wire_target):
    failures = run_vector(vector, wire_target)
    assert not failures, "\n".join(failures)


def test_wire_queue_depth_is_exact(wire_target):
    """The held queue gives exactly the vector's depth: one packet more or
    less at queue_marking_thresholds' Kmax boundary (mark when q > 4) flips
    the mark."""
    vector = copy.deepcopy(next(v for v in VECTORS if v.name == "queue_marking_thresholds"))
    at_kmax = next(s for s in vector.steps if s.get("qdepth") == 4 and s["expect"]["ecn"] == 2)
    past = next(s for s in vector.steps if s.get("qdepth") == 5)
    at_kmax["qdepth"], past["qdepth"] = 5, 4
    failures = run_vector(vector, wire_target)
    assert [f for f in failures if "ecn: expected" in f] == ["step 2: ecn: expected 2, got 3",
                                                            "step 3: ecn: expected 3, got 2"], failures


@pytest.mark.bmv2
@pytest.mark.root
def test_bmv2_hold_too_short_is_detected_and_lengthened():
    """A hold shorter than the switch needs to queue the fillers and the
    packet is caught (TargetTooSlow, by the probes' timing), and the vector
    runs again with a longer one."""
    target = Bmv2Target(hold_pps=2000)          # 0.5 ms: less than one Thrift round trip
    try:
        vector = next(v for v in VECTORS if v.name == "queue_marking_thresholds")
        assert run_vector(vector, target) == []
        assert target.hold_pps < 2000
    finally:
        target.close()


@pytest.mark.parametrize("target_class", WIRE_TARGETS)
def test_a_closed_rig_leaves_no_socket_for_the_collector(target_class):
    """close() closes the switch's control client too (for BMv2, p4-utils'
    two Thrift connections, which p4-utils never closes): what is left of
    the rig goes without a ResourceWarning, an error under `-W error`."""
    target = target_class()
    target.close()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        del target
        gc.collect()
    assert [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)] == []
