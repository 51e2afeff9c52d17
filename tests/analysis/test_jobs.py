"""Runs of several jobs, laid out as the runner writes them
(agents/job<id>/rank<r>.jsonl), on synthetic records with known answers:
both jobs read, rank numbers of different jobs kept apart, CCT per job and
iteration, misalignment per job, a timeline row per (job, rank), and the
report's per-job CCT tables."""

import json
import warnings

import pytest

from analysis import metrics as m
from analysis import plots
from analysis.records import RecordWarning, agent_files, load_run
from analysis.report import analyse_run, write_report
from analysis.synthetic import T0_NS, ring_times, write_jobs_run, write_run

MS = 1_000_000

# job 1: 3 ranks in lockstep, 10 ms steps, starting 2 ms after job 2:
#   4 steps per iteration -> CCT 40 ms in both iterations, misalignment 0.
# job 2: 3 ranks, 20 ms steps, rank 1 starts iteration 1 5 ms late:
#   iteration 0: 80 ms.  Iteration 1 (starts at +80 ms): step 0 of ranks 1
#   and 2 ends at +25 (rank 2 waits for rank 1's data), rank 0's at +20;
#   step 1 of every rank ends at +45 (rank 0 waits for rank 2), then
#   lockstep: +65, +85 -> CCT 85 ms.  Misalignment 1 from +80 to +85 (rank 1
#   still on step 3) and from +100 to +105 (rank 0 ahead on step 5), else 0:
#   10 ms of 165 ms.
JOB1 = ring_times(3, 2, 0.010, t0_ns=T0_NS + 2 * MS)
JOB2 = ring_times(3, 2, 0.020, t0_ns=T0_NS, straggle={(1, 1): 0.005})


def two_job_run(path, variant="baseline", repeat=0, job2_step_s=None, **kw):
    job2 = JOB2 if job2_step_s is None else ring_times(3, 2, job2_step_s, t0_ns=T0_NS)
    return write_jobs_run(path, {1: JOB1, 2: job2}, variant=variant, repeat=repeat, **kw)


@pytest.fixture
def run(tmp_path):
    d = two_job_run(tmp_path / "r", jitter=[
        {"kind": "compute", "job": 2, "rank": 1, "start_s": None, "end_s": None,
         "params": {"iter": 1, "delay_s": 0.005}},
        {"kind": "rate", "link": "h5-s1", "start_s": 0.01, "end_s": 0.02, "params": {"rate_mbit": 5}}])
    with warnings.catch_warnings():
        warnings.simplefilter("error", RecordWarning)   # a clean two-job run reads without a warning
        return load_run(d)


# ---------------------------------------------------------------- records

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


def test_a_file_of_another_job_is_kept_under_its_own_job_with_a_warning(tmp_path):
    d = two_job_run(tmp_path / "r")
    (d / "agents" / "job2" / "rank0.jsonl").rename(d / "agents" / "job1" / "rank9.jsonl")
    with pytest.warns(RecordWarning, match=r"job1/rank9.jsonl: \d+ event\(s\) of another job"):
        r = load_run(d)
    assert {e["rank"] for e in r.events if e["job"] == 2} == {0, 1, 2}


def test_the_same_job_and_rank_in_two_files_counts_once(tmp_path):
    d = two_job_run(tmp_path / "r")
    (d / "agents" / "rank0.jsonl").write_bytes((d / "agents" / "job1" / "rank0.jsonl").read_bytes())
    with pytest.warns(RecordWarning, match="job 1 rank 0 is already in"):
        r = load_run(d)
    rm = m.run_metrics(r.events, {}, {})
    assert rm["jobs"]["1"]["cct_s"] == [pytest.approx(0.040), pytest.approx(0.040)]


# ---------------------------------------------------------------- metrics

def test_cct_per_job_and_iteration(run):
    rm = m.run_metrics(run.events, run.switches, run.config, run.jitter)
    assert set(rm["jobs"]) == {"1", "2"}
    assert rm["jobs"]["1"]["ranks"] == [0, 1, 2] and rm["jobs"]["2"]["ranks"] == [0, 1, 2]
    assert rm["jobs"]["1"]["cct_s"] == [pytest.approx(0.040), pytest.approx(0.040)]
    assert rm["jobs"]["2"]["cct_s"] == [pytest.approx(0.080), pytest.approx(0.085)]
    it = {j: [(i["iter"], i["start_s"], i["complete"]) for i in rm["jobs"][j]["iterations"]] for j in ("1", "2")}
    assert it["1"] == [(0, pytest.approx(0.002), True), (1, pytest.approx(0.042), True)]
    assert it["2"] == [(0, pytest.approx(0.0), True), (1, pytest.approx(0.080), True)]


def test_misalignment_per_job(run):
    jobs = m.run_metrics(run.events, {}, run.config)["jobs"]
    assert jobs["1"]["misalignment"] == {"mean": 0.0, "max": 0, "frac_misaligned": 0.0}
    assert jobs["2"]["misalignment"]["mean"] == pytest.approx(10 / 165)
    assert jobs["2"]["misalignment"]["max"] == 1
    assert jobs["2"]["misalignment_curve"] == [[pytest.approx(0.0), 0], [pytest.approx(0.080), 1],
                                               [pytest.approx(0.085), 0], [pytest.approx(0.100), 1],
                                               [pytest.approx(0.105), 0], [pytest.approx(0.165), 0]]


def test_jitter_lands_on_the_right_job(run):
    compute, rate = run.jitter
    # job 2's rank 1 starts iteration 1 at +85 ms (job 1's rank 1 at +42 ms)
    assert compute["end_ns"] == T0_NS + 85 * MS and compute["start_ns"] == T0_NS + 80 * MS
    assert (rate["job"], rate["rank"]) == (2, 1)          # h5 is job 2's rank 1


def test_timeline_has_a_row_per_job_and_rank(run):
    rows = plots.timeline_rows(run.events)
    assert rows == [(1, 0), (1, 1), (1, 2), (2, 0), (2, 1), (2, 2)]
    assert plots.row_labels(rows)[3] == "job 2 rank 0"
    assert plots.row_labels([(1, 0), (1, 1)]) == ["rank 0", "rank 1"]


# ---------------------------------------------------------------- report

def test_report_shows_cct_per_job(tmp_path):
    root = tmp_path / "exp"
    dirs = [two_job_run(root / "a-baseline-rep0", "baseline", job2_step_s=0.020),
            two_job_run(root / "a-symphony-rep0", "symphony", job2_step_s=0.016)]
    report = write_report(dirs)
    text = report.read_text()
    summary = json.loads((root / "report.json").read_text())
    sym = summary["variants"]["symphony"]["jobs"]
    assert summary["multi_job"] is True
    assert sym["1"]["cct_mean_s"] == pytest.approx(0.040) and sym["1"]["cct_change_pct"] == pytest.approx(0.0)
    assert sym["2"]["cct_mean_s"] == pytest.approx(0.064) and sym["2"]["cct_change_pct"] == pytest.approx(-20.0)
    assert summary["variants"]["baseline"]["jobs"]["2"]["cct_n"] == 2
    assert "## CCT per job" in text
    assert "| baseline | 2 | 3 | 2 | 0.0800 |" in text
    assert "| symphony | 2 | 3 | 2 | 0.0640 | 0.0000 | -20.0 % |" in text
    assert "| a-symphony-rep0 | symphony | ok | 2 | 2 / 2 | 0: 0.0640, 1: 0.0640 | 0.0640 | True |" in text
    metrics = json.loads((dirs[0] / "metrics.json").read_text())
    assert metrics["summary"]["jobs"]["2"]["cct_by_iter_s"] == {"0": pytest.approx(0.08), "1": pytest.approx(0.08)}


def test_single_job_report_has_no_per_job_tables(tmp_path):
    d = write_run(tmp_path / "one", ring_times(3, 1, 0.010))
    a = analyse_run(load_run(d))
    assert list(a["summary"]["jobs"]) == ["1"]
    assert "CCT per job" not in write_report([d]).read_text()
