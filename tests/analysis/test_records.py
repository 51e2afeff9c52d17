"""Reading run directories: cut lines, bad lines, jitter time forms, missing parts."""

import json
import warnings

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from analysis import metrics as m
from analysis.records import RecordWarning, agent_files, load_run, normalise_jitter, read_jsonl
from analysis.report import analyse_run
from analysis.synthetic import T0_NS, ring_times, write_run
from contract.events import KINDS


def test_cut_last_line_is_skipped_with_a_warning_naming_file_and_line(tmp_path):
    path = tmp_path / "rank0.jsonl"
    path.write_text('{"a": 1}\n{"a": 2}\n{"a": 3, "b": [1, 2')
    with pytest.warns(RecordWarning, match=r"rank0\.jsonl:3: last line is cut"):
        rows = read_jsonl(path)
    assert rows == [{"a": 1}, {"a": 2}]


def test_a_cut_line_is_measured_in_bytes(tmp_path):
    path = tmp_path / "rank0.jsonl"
    path.write_text('{"a": 1}\n{"a": "\u00e9\u00e9', encoding="utf-8")
    with pytest.warns(RecordWarning, match=r"rank0\.jsonl:2: last line is cut \(11 bytes, no newline\)"):
        assert read_jsonl(path) == [{"a": 1}]


def test_complete_last_line_without_newline_is_kept(tmp_path):
    path = tmp_path / "x.jsonl"
    path.write_text('{"a": 1}\n{"a": 2}')
    assert read_jsonl(path) == [{"a": 1}, {"a": 2}]


def test_bad_line_in_the_middle_is_skipped_and_called_what_it_is(tmp_path):
    path = tmp_path / "x.jsonl"
    path.write_bytes(b'{"a": 1}\n\xff\xfe garbage\n[1, 2]\n{"a": 4}\n')
    sink = []
    with pytest.warns(RecordWarning) as caught:
        rows = read_jsonl(path, sink)
    assert rows == [{"a": 1}, {"a": 4}]
    assert [str(w.message) for w in caught] == sink
    assert any(":2: not a JSON object" in s for s in sink) and any(":3: not a JSON object" in s for s in sink)


def test_run_whose_agent_log_was_cut_mid_line_still_loads(tmp_path):
    times = ring_times(3, 2, 0.01)
    run_dir = write_run(tmp_path / "run", times)
    log = run_dir / "agents" / "rank1.jsonl"
    data = log.read_bytes()
    log.write_bytes(data[: len(data) - 25])  # kill mid-line: the last event is half written
    n_lines = data.count(b"\n")
    with pytest.warns(RecordWarning, match=rf"rank1\.jsonl:{n_lines}: last line is cut"):
        run = load_run(run_dir)
    assert len([e for e in run.events if e["rank"] == 1]) == n_lines - 1
    assert any("last line is cut" in w for w in run.warnings)


def test_events_that_break_the_schema_are_skipped(tmp_path):
    run_dir = write_run(tmp_path / "run", ring_times(2, 1, 0.01))
    with (run_dir / "agents" / "rank0.jsonl").open("a") as f:
        f.write(json.dumps({"t": 5, "kind": "step_start", "job": 1, "rank": 0, "iter": 0, "step": 0}) + "\n")
    n_lines = (run_dir / "agents" / "rank0.jsonl").read_text().count("\n")
    with pytest.warns(RecordWarning, match=rf"rank0\.jsonl:{n_lines}: step_start event lacks field 'k'"):
        run = load_run(run_dir)
    assert all(e["t"] != 5 for e in run.events)


def test_missing_parts_are_tolerated(tmp_path):
    (tmp_path / "run").mkdir()
    with pytest.warns(RecordWarning):
        run = load_run(tmp_path / "run")
    assert run.events == [] and run.switches == {} and run.jitter == []
    # without meta.json nothing says how the run ended: it does not count as ok
    assert run.status == "unknown" and run.variant == "unknown"


def test_jitter_absolute_ns_and_relative_seconds_forms():
    t0 = T0_NS
    lines = [
        {"kind": "rate", "link": "l1", "start": t0 + 10**9, "end": t0 + 2 * 10**9, "params": {}},  # absolute ns
        {"kind": "rate", "rank": 1, "start": 0.5, "end": 1.5, "t0": t0, "params": {}},  # t0 on the line
        {"t0": t0 / 1e9},                                                                 # header, in seconds
        {"kind": "netem", "link": "l2", "start": 2, "end": 3, "params": {"delay_ms": 5}},
    ]
    out = normalise_jitter(lines, fallback_t0=None, sink=[])
    assert [(w["start_ns"] - t0, w["end_ns"] - t0) for w in out] == [
        (10**9, 2 * 10**9), (5 * 10**8, 15 * 10**8), (2 * 10**9, 3 * 10**9)]


def test_jitter_relative_without_t0_uses_the_first_event_and_says_so():
    sink = []
    with pytest.warns(RecordWarning, match="without t0"):
        out = normalise_jitter([{"kind": "compute", "rank": 2, "start": 1, "end": 2}], 1000, sink)
    assert out[0]["start_ns"] == 1000 + 10**9
    with pytest.warns(RecordWarning, match="unusable"):
        assert normalise_jitter([{"kind": "rate", "start": 1, "end": 2}], None, []) == []


def test_jitter_as_the_runner_writes_it_start_s_and_t0_from_meta(tmp_path):
    times = ring_times(3, 2, 0.01, straggle={(2, 1): 0.004})
    first = min(a for a, _ in times.values())
    run_dir = write_run(tmp_path / "run", times, jitter=[
        {"kind": "rate", "link": "h1-s1", "start_s": 0.5, "end_s": 1.25, "params": {"rate_mbit": 5}},
        {"kind": "compute", "job": 1, "rank": 2, "link": None, "start_s": None, "end_s": None,
         "params": {"iter": 1, "delay_s": 0.004}},
    ])
    meta = json.loads((run_dir / "meta.json").read_text())
    meta["t0_ns"] = first - 10**9  # the agents were started 1 s before their first event
    (run_dir / "meta.json").write_text(json.dumps(meta))
    run = load_run(run_dir)
    rate, compute = run.jitter
    assert (rate["start_ns"], rate["end_ns"]) == (first - 10**9 + 5 * 10**8, first + 25 * 10**7)
    rank2_iter1 = min(e["t"] for e in run.events if e["kind"] == "step_start" and e["rank"] == 2 and e["iter"] == 1)
    assert (compute["start_ns"], compute["end_ns"]) == (rank2_iter1 - 4 * 10**6, rank2_iter1)


def test_events_with_unusable_types_are_skipped(tmp_path):
    run_dir = write_run(tmp_path / "run", ring_times(2, 1, 0.01))
    bad = {"t": 7, "kind": "step_end", "job": 1, "rank": "zero", "iter": 0, "step": 0, "k": 0,
           "phase": "rs", "bytes": 10}
    worse = {**bad, "rank": 0, "bytes": "lots"}
    with (run_dir / "agents" / "rank0.jsonl").open("a") as f:
        f.write(json.dumps(bad) + "\n" + json.dumps(worse) + "\n")
    with pytest.warns(RecordWarning) as caught:
        run = load_run(run_dir)
    messages = " ".join(str(w.message) for w in caught)
    assert "'rank' must be an integer" in messages and "'bytes' must be a number" in messages
    assert all(e["t"] != 7 for e in run.events)


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity"])
def test_non_finite_numbers_are_skipped(tmp_path, value):
    run_dir = write_run(tmp_path / "run", ring_times(2, 1, 0.01))
    line = ('{"t": 7, "kind": "step_end", "job": 1, "rank": 0, "iter": 0, "step": 0, "k": 0, '
            f'"phase": "rs", "bytes": {value}}}')
    with (run_dir / "agents" / "rank0.jsonl").open("a") as f:
        f.write(line + "\n")
    with pytest.warns(RecordWarning, match="'bytes' must be finite"):
        run = load_run(run_dir)
    assert all(e["t"] != 7 for e in run.events)
    analyse_run(run)


# ---- hostile records: whatever the files hold, reading and the metrics never raise

_value = st.one_of(st.integers(-3, 40), st.floats(allow_nan=True), st.text(max_size=3), st.booleans(), st.none())
_event = st.fixed_dictionaries(
    {"t": st.integers(1, 60), "kind": st.sampled_from(KINDS), "job": st.integers(0, 2),
     "rank": st.integers(0, 3), "iter": st.integers(0, 2), "step": st.integers(0, 8)},
    optional={"k": st.integers(0, 6), "phase": st.sampled_from(["rs", "ag", "x"]), "send_chunk": _value,
              "recv_chunk": _value, "bytes": st.one_of(st.integers(0, 10**6), _value), "exact": _value,
              "dir": st.sampled_from(["tx", "rx", "?"]), "peer": _value, "rc": st.floats(0, 1e9),
              "rt": st.floats(0, 1e9), "alpha": st.floats(0, 1), "reason": _value, "counters": _value,
              "offset": _value, "length": _value, "why": _value})


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(events=st.lists(_event, max_size=40), tail=st.binary(max_size=30))
def test_any_records_are_read_and_measured_without_an_exception(tmp_path, events, tail):
    run_dir = tmp_path / "fuzz"
    (run_dir / "agents").mkdir(parents=True, exist_ok=True)
    with (run_dir / "agents" / "rank0.jsonl").open("wb") as f:
        for e in events:
            f.write(json.dumps({**e, "t": e["t"] * 10**6}).encode() + b"\n")
        f.write(tail)
    (run_dir / "switches").mkdir(exist_ok=True)
    (run_dir / "switches" / "s1.json").write_bytes(b'{"counters": {"sym_marks": [1, "x", null, [2, 3]]}}')
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = analyse_run(load_run(run_dir))
    json.dumps(result)  # and it is JSON-serialisable


# ---------------------------------------------------------------- two jobs

def test_both_jobs_are_read_from_their_directories(run):
    assert [(j, p.parent.name, p.name) for j, p in agent_files(run.path / "agents")] == [
        (1, "job1", "rank0.jsonl"), (1, "job1", "rank1.jsonl"), (1, "job1", "rank2.jsonl"),
        (2, "job2", "rank0.jsonl"), (2, "job2", "rank1.jsonl"), (2, "job2", "rank2.jsonl")]
    assert {(e["job"], e["rank"]) for e in run.events} == {(j, r) for j in (1, 2) for r in range(3)}
    assert [e["t"] for e in run.events] == sorted(e["t"] for e in run.events)
    assert run.warnings == []


def test_single_job_layout_still_reads(tmp_path):
    d = write_run(tmp_path / "one", ring_times(3, 1, 0.010))
    assert [(j, p.name) for j, p in agent_files(d / "agents")] == [
        (None, "rank0.jsonl"), (None, "rank1.jsonl"), (None, "rank2.jsonl")]
    assert {e["job"] for e in load_run(d).events} == {1}


def test_a_file_of_another_job_is_kept_under_its_own_job_with_a_warning(tmp_path, two_job_run):
    d = two_job_run(tmp_path / "r")
    (d / "agents" / "job2" / "rank0.jsonl").rename(d / "agents" / "job1" / "rank9.jsonl")
    with pytest.warns(RecordWarning, match=r"job1/rank9.jsonl: \d+ event\(s\) of another job"):
        r = load_run(d)
    assert {e["rank"] for e in r.events if e["job"] == 2} == {0, 1, 2}


def test_the_same_job_and_rank_in_two_files_counts_once(tmp_path, two_job_run):
    d = two_job_run(tmp_path / "r")
    (d / "agents" / "rank0.jsonl").write_bytes((d / "agents" / "job1" / "rank0.jsonl").read_bytes())
    with pytest.warns(RecordWarning, match="job 1 rank 0 is already in"):
        r = load_run(d)
    rm = m.run_metrics(r.events, {}, {})
    assert rm["jobs"]["1"]["cct_s"] == [pytest.approx(0.040), pytest.approx(0.040)]
