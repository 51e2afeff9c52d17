"""The conformance vectors of p4/tests/ on the twin's pure pipeline (always),
on the twin process over veths (root) and on BMv2 simple_switch (when it is
installed; skipped with the reason otherwise)."""

from __future__ import annotations

import copy

import pytest

from topologies.switch.conformance import (
    Bmv2Target,
    TwinProcessTarget,
    TwinTarget,
    check_output,
    load_vectors,
    run_vector,
)

VECTORS = load_vectors()
IDS = [v.id for v in VECTORS]


def test_vectors_cover_the_issue_list():
    names = {v.name for v in VECTORS}
    for needed in ("new_step_detection", "step_completion_by_n_local", "frontier_advance",
                   "outpacing_at_threshold_and_one_past", "wrap_around", "two_jobs_kept_apart",
                   "non_ect_never_marked", "unknown_flows_forwarded_unmarked", "symphony_disabled_is_baseline",
                   "malformed_and_short_dropped", "step_window_edges", "garbage_from_a_ranks_address_is_counted",
                   "garbage_within_the_window_moves_the_flow", "tcp_step_window"):
        assert needed in names


@pytest.mark.parametrize("vector", VECTORS, ids=IDS)
def test_vector_on_twin(vector):
    failures = run_vector(vector, TwinTarget())
    assert not failures, "\n".join(failures)


def test_runner_reports_a_wrong_expectation():
    """The runner is not vacuous: flip one expected ECN and one register value."""
    vector = copy.deepcopy(next(v for v in VECTORS if v.name == "outpacing_at_threshold_and_one_past"))
    marked = next(s for s in vector.steps if s.get("expect", {}).get("ecn") == 3)
    marked["expect"]["ecn"] = 2
    vector.registers["frontier"]["0"] = 7
    failures = run_vector(vector, TwinTarget())
    assert any("ecn: expected 2, got 3" in f for f in failures)
    assert any("frontier[0]: expected 7" in f for f in failures)


def test_check_output_drop_and_fields():
    assert check_output({"drop": True}, None) == []
    assert check_output({"drop": True}, (2, b"x" * 60))
    assert check_output({"port": 2}, None) == ["expected a packet, it was dropped"]


# the wire targets: packets on veths through AF_PACKET sockets, queue depth
# made real with a held queue and fillers; BMv2's simple_switch, and the twin
# process taking the same path
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
