"""The conformance vectors of p4/tests/ and their runner, on the twin's pure
pipeline (the wire targets: test_conformance_rig.py)."""

from __future__ import annotations

import copy

import pytest

from topologies.switch.conformance import TwinTarget, check_output, load_vectors, run_vector

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


def flipped_vector():
    """A vector with one expected ECN and one register value flipped, and
    the failures a target that runs it right must report (so a runner
    that passes everything is caught)."""
    vector = copy.deepcopy(next(v for v in VECTORS if v.name == "outpacing_at_threshold_and_one_past"))
    marked = next(s for s in vector.steps if s.get("expect", {}).get("ecn") == 3)
    marked["expect"]["ecn"] = 2
    vector.registers["frontier"]["0"] = 7
    return vector, ("ecn: expected 2, got 3", "frontier[0]: expected 7")


def assert_flips_reported(target) -> None:
    vector, expected = flipped_vector()
    failures = run_vector(vector, target)
    for text in expected:
        assert any(text in f for f in failures), (text, failures)


def test_runner_reports_a_wrong_expectation():
    """The runner is not vacuous: flip one expected ECN and one register value."""
    assert_flips_reported(TwinTarget())


def test_check_output_drop_and_fields():
    assert check_output({"drop": True}, None) == []
    assert check_output({"drop": True}, (2, b"x" * 60))
    assert check_output({"port": 2}, None) == ["expected a packet, it was dropped"]
