"""The oracle file: what experiments/oracle/export.py writes, analysis/oracle.py
reads back (analysis does not import experiments, so this test holds the two
sides of the schema together)."""

from __future__ import annotations

import json

import pytest

from analysis import oracle as AO
from experiments import config as C
from experiments.jitter import schedule as J
from experiments.oracle.export import SCHEMA, STEP_FIELDS, document
from experiments.oracle.scenario import predict_repeats


def spec():
    return C.resolve({
        "name": "x", "seed": 2, "repeats": 2,
        "topology": {"kind": "dumbbell", "hosts": 4, "host_rate_mbit": 10, "fabric_rate_mbit": 5},
        "jobs": [{"ranks": 2, "message_bytes": 20000, "iterations": 2, "hosts": ["h1", "h3"]},
                 {"ranks": 2, "message_bytes": 20000, "iterations": 2, "hosts": ["h2", "h4"]}],
        "jitter": [{"kind": "compute", "job": 1, "rank": 0, "iter": 0, "delay_s": [0.01, 0.05]}],
    })


@pytest.fixture(scope="module")
def written():
    s = spec()
    pred = predict_repeats(s, {rep: J.make_schedule(s, rep) for rep in (1, 2)})
    doc = json.loads(json.dumps(document(s, pred, "20990101T000000Z")))     # through JSON, as on disk
    return s, pred, doc


def test_the_document_states_its_schema_and_the_means(written):
    _, pred, doc = written
    assert doc["schema"] == SCHEMA == AO.SCHEMA and doc["step_fields"] == list(STEP_FIELDS)
    assert doc["experiment"] == "x" and doc["stamp"] == "20990101T000000Z" and doc["threshold"] == 1
    assert set(doc["repeats"]) == {"1", "2"} and set(doc["repeats"]["1"]["variants"]) == {"baseline", "symphony"}
    for job, p in pred.jobs.items():
        assert doc["jobs"][str(job)] == pytest.approx(p.as_dict())


def test_analysis_reads_the_means_back(written):
    _, pred, doc = written
    back = AO.oracle_jobs(doc)
    for job, p in pred.jobs.items():
        row = back[str(job)]
        assert (row["baseline_cct_s"], row["symphony_cct_s"], row["cct_change_pct"], row["bound_s"]) == \
            pytest.approx((p.baseline_cct_s, p.symphony_cct_s, p.cct_change_pct, p.bound_s))
    # one repeat only: that repeat's figures
    one = AO.oracle_jobs(doc, {"baseline": [2], "symphony": [2]})["1"]
    assert one["baseline_cct_s"] == pytest.approx(pred.repeats[2].jobs[1].baseline_cct_s)


def test_analysis_reads_the_steps_back_as_agent_events(written):
    _, pred, doc = written
    t0 = 10**18
    events = AO.timeline_events(doc, 1, "symphony", t0)
    steps = pred.repeats[1].symphony.steps
    assert len(events) == 2 * len(steps)
    starts = sorted((e["job"], e["rank"], e["step"], e["t"]) for e in events if e["kind"] == "step_start")
    assert starts == sorted((s.job, s.rank, s.step, t0 + round(s.start_s * 1e9)) for s in steps)
    ends = {(e["job"], e["rank"], e["step"]): e for e in events if e["kind"] == "step_end"}
    s = steps[-1]
    assert ends[(s.job, s.rank, s.step)]["bytes"] == s.bytes
    assert AO.timeline_events(doc, 3, "symphony", t0) == []


def test_a_step_that_ends_as_it_starts_still_pairs(written):
    # a step of no length (a document from before a straggler took no
    # packets could hold one: its chunk came while it slept) must still pair
    # start before end on the timeline, whatever the rows' order
    _, _, doc = written
    doc = json.loads(json.dumps(doc))
    steps = doc["repeats"]["1"]["variants"]["baseline"]["steps"]
    i_start, i_end = STEP_FIELDS.index("start_s"), STEP_FIELDS.index("end_s")
    steps[3][i_end] = steps[3][i_start]
    steps.reverse()
    events = AO.timeline_events(doc, 1, "baseline", 0)
    first = {}
    for i, e in enumerate(events):
        first.setdefault((e["job"], e["rank"], e["step"], e["kind"]), i)
    for (job, rank, step, kind), i in first.items():
        if kind == "step_end":
            assert first[(job, rank, step, "step_start")] < i
