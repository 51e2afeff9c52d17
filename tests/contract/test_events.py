import json

import pytest

from contract.events import EventLog, SchemaError, validate


def test_log_lines_are_valid_and_flushed(tmp_path):
    path = tmp_path / "rank0.jsonl"
    log = EventLog(path, job=1, rank=0)
    log.emit("step_start", iter=0, step=3, k=3, phase="ag", send_chunk=1, recv_chunk=0)
    # flushed before close: a kill would keep the line
    line = path.read_text().splitlines()[0]
    validate(json.loads(line))
    log.close()


def test_missing_field_is_named():
    with pytest.raises(SchemaError, match="recv_chunk"):
        validate({"t": 1, "kind": "step_start", "job": 1, "rank": 0, "iter": 0,
                  "step": 0, "k": 0, "phase": "rs", "send_chunk": 0})


def test_optional_fields_are_checked_when_present_only():
    base = {"t": 1, "kind": "stats", "job": 1, "rank": 0, "iter": 0, "step": 0, "counters": {}}
    validate(base)                                            # an agent before the field: still valid
    validate({**base, "lateness": {"pacing": {"n": 0}, "dcqcn_timer": {"n": 0}}})
    with pytest.raises(SchemaError, match="lateness"):
        validate({**base, "lateness": 3})


def test_ready_and_the_start_of_iteration_0():
    validate({"t": 1, "kind": "ready", "job": 1, "rank": 0, "iter": 0, "step": 0})
    base = {"t": 2, "kind": "iter_start", "job": 1, "rank": 0, "iter": 0, "step": 0}
    validate(base)                                            # older records, and agents without a start file
    validate({**base, "start": {"at_ns": 2, "seen_ns": 1, "woke_ns": 2}})
    with pytest.raises(SchemaError, match="start"):
        validate({**base, "start": 2})
