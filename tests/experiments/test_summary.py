"""summary.json without an analysis of every run (it failed, or a second
Ctrl-C): the run list only, and the exit code says the worst that happened;
with the oracle on the runs' schedules: per job the measured change beside
the oracle's, what was captured of it, the emulation's efficiency."""

import json
from dataclasses import replace
from pathlib import Path

import pytest

from analysis.synthetic import ring_times, write_jobs_run
from experiments import config as C
from experiments import summary as SU
from experiments.config.scale import at, scale
from experiments.jitter import schedule as J
from experiments.signals import Signals
from experiments.supervise import RunResult


def test_without_analysis_the_run_list_only(fake_spec):
    results = [RunResult(Path("/x/a-baseline-rep1"), "baseline", 1, status="ok"),
               RunResult(Path("/x/a-symphony-rep1"), "symphony", 1, status="failed", reason="deadline")]
    s = SU.summary(fake_spec(), results, [None, None], interrupted=False)
    assert s["variants"] == {} and s["cct_change_pct"] is None and s["experiment"] == "fake"
    assert s["runs"] == [
        {"run": "a-baseline-rep1", "variant": "baseline", "repeat": 1, "status": "ok", "reason": "",
         "wrong_result": False},
        {"run": "a-symphony-rep1", "variant": "symphony", "repeat": 1, "status": "failed", "reason": "deadline",
         "wrong_result": False}]
    assert SU.exit_code(results, False) == SU.EXIT_FAILED
    assert SU.exit_code(results, True) == SU.EXIT_INTERRUPTED
    results[0].wrong = True
    assert SU.exit_code(results, True) == SU.EXIT_WRONG
    assert SU.exit_code(results[:0], False) == SU.EXIT_OK


# --- the oracle beside the measured runs ----------------------------------------

def victim_spec() -> C.ExperimentSpec:
    """The strict-priority case of tests/experiments/oracle/test_flowmodel.py
    as a config: a dumbbell at 1 Mbit/s (h1-h3 on s1, h4-h6 on s2), job 1 a
    4-rank ring h1 h2 h4 h5 of 4000 bytes whose rank 1 starts 80 ms late, job 2
    a 2-rank ring h3 h6 of 2000 bytes; threshold 0.  With u = 8 ms (1000
    bytes): job 1 takes 16u in both variants, job 2 4u in the baseline and 2u
    with Symphony (job 1's leading flow yields on the fabric): -50 %."""
    return C.resolve({
        "name": "victim", "topology": {"kind": "dumbbell", "hosts": 6, "host_rate_mbit": 1},
        "jobs": [{"ranks": 4, "hosts": ["h1", "h2", "h4", "h5"], "message_bytes": 4000, "iterations": 1},
                 {"ranks": 2, "hosts": ["h3", "h6"], "message_bytes": 2000, "iterations": 1}],
        "symphony": {"threshold": 0},
        "jitter": [{"kind": "compute", "job": 1, "rank": 1, "iter": 0, "delay_s": 0.08}]})


def test_summary_json_sets_the_oracle_beside_the_measured_change(tmp_path, capsys):
    """Synthetic runs with known CCTs: job 1 192 ms in both variants, job 2
    40 ms baseline and 30 ms Symphony (-25 %); the oracle on the schedule:
    job 1 128 ms both, job 2 32 -> 16 ms (-50 %)."""
    spec, stamp = victim_spec(), "20990101T000000Z"
    exp = tmp_path / "victim"
    results = []
    for variant, job2_step in (("baseline", 0.020), ("symphony", 0.015)):
        # jitter.jsonl: the schedule as the runner writes it before applying it
        d = write_jobs_run(exp / f"{stamp}-{variant}-rep1",
                           {1: ring_times(4, 1, 0.032), 2: ring_times(2, 1, job2_step)}, variant=variant, repeat=1,
                           jitter=J.make_schedule(spec, 1))
        results.append(RunResult(d, variant, 1, status="ok"))
    lines: list[str] = []
    SU.finish_point(spec, results, exp, stamp, signals=Signals(), report=True, say=lines.append)
    assert not lines, lines
    s = json.loads((exp / "summary.json").read_text())
    job1, job2 = s["jobs"]["1"], s["jobs"]["2"]
    assert job2["cct_change_pct"] == pytest.approx(-25.0)
    assert job2["oracle"] == pytest.approx({"baseline_cct_s": 0.032, "symphony_cct_s": 0.016,
                                            "cct_change_pct": -50.0, "bound_s": 0.016})
    assert job2["captured"] == pytest.approx(0.5) and job2["efficiency"] == pytest.approx(0.8)
    assert job1["cct_change_pct"] == pytest.approx(0.0) and job1["oracle"]["cct_change_pct"] == pytest.approx(0.0)
    assert job1["captured"] is None and job1["efficiency"] == pytest.approx(0.128 / 0.192)
    # the model's timeline beside the runs, and the report reads it
    oracle = json.loads((exp / f"{stamp}-oracle.json").read_text())
    assert s["oracle_file"] == str(exp / f"{stamp}-oracle.json") and oracle["schema"] == "symphony-oracle/1"
    assert len(oracle["repeats"]["1"]["variants"]["symphony"]["steps"]) == 4 * 6 + 2 * 2
    report = (exp / f"{stamp}-report" / "report.md").read_text()
    assert "| 2 | 0.0400 | 0.0300 | -25.0 % | -25.0 % | 0.0320 | 0.0160 | -50.0 % | 0.0160 | 0.50 | 0.80 |" in report
    out = capsys.readouterr().out
    assert "captured" in out and "efficiency" in out
    row = next(line.split() for line in out.splitlines() if line.strip().startswith("2 "))
    # (one repeat: no spread; no simulation asked for: its two columns are empty)
    assert row == ["2", "0.040", "0.030", "-25.0", "-", "0.032", "0.016", "-50.0", "0.016", "0.50", "0.80", "-", "-"]


def test_a_config_the_model_cannot_run_leaves_the_oracle_out(tmp_path, fake_spec):
    spec = fake_spec()
    spec.topo.links[0] = replace(spec.topo.links[0], rate_mbit=None)
    (tmp_path / "x-baseline-rep1").mkdir()
    (tmp_path / "x-baseline-rep1" / "jitter.jsonl").write_text("")
    lines: list[str] = []
    s = SU.finish_point(spec, [RunResult(tmp_path / "x-baseline-rep1", "baseline", 1, status="failed")], tmp_path,
                        "20990101T000000Z", signals=Signals(), report=False, say=lines.append)
    assert s["oracle_file"] is None and s["jobs"] == {}
    assert lines == ["oracle: link h1-l1 has no rate: the model needs topology.host_rate_mbit (and fabric_rate_mbit)"]


def test_each_job_with_repeats_is_read_against_its_own_noise():
    """noise_lines: a job with two or more repeats gets a line saying whether
    its change is told apart from run-to-run noise; one repeat, none."""
    summ = {"jobs": {"1": {"change_noise": {"mean_pct": 1.3, "half_width_pct": 1.1, "repeats": 4,
                                            "beyond_noise": True}},
                     "2": {"change_noise": {"mean_pct": -0.4, "half_width_pct": 1.6, "repeats": 4,
                                            "beyond_noise": False}},
                     "3": {"change_noise": None}}}
    one, two = SU.noise_lines(summ)
    assert one.startswith("job 1:") and "+1.3 % +- 1.1" in one and one.endswith("beyond the run-to-run noise")
    assert two.startswith("job 2:") and "not told apart from no change" in two


def test_a_scaled_batch_prints_and_reports_the_config_units_alike(tmp_path, capsys):
    """The same victim at --scale 4: its runs' clock and the oracle on their
    schedules run 4 times the config's; the summary, the printed table and
    the report all give the unscaled batch's figures (issue 49: the report
    gave the scaled run's seconds beside the printed summary's)."""
    sc = at(4.0)
    spec, stamp = scale(victim_spec(), sc), "20990101T000000Z"
    exp = tmp_path / "victim"
    results = []
    for variant, job2_step in (("baseline", 0.020), ("symphony", 0.015)):
        d = write_jobs_run(exp / f"{stamp}-{variant}-rep1",
                           {1: ring_times(4, 1, 0.032 * sc.time), 2: ring_times(2, 1, job2_step * sc.time)},
                           variant=variant, repeat=1, jitter=J.make_schedule(spec, 1))
        meta = json.loads((d / "meta.json").read_text())
        (d / "meta.json").write_text(json.dumps({**meta, "scaling": sc.as_dict()}))
        results.append(RunResult(d, variant, 1, status="ok"))
    lines: list[str] = []
    SU.finish_point(spec, results, exp, stamp, signals=Signals(), report=True, say=lines.append, scaling=sc)
    assert not lines, lines
    s = json.loads((exp / "summary.json").read_text())
    report = json.loads((exp / f"{stamp}-report" / "report.json").read_text())
    for doc in (s, report):
        job2 = doc["jobs"]["2"]
        assert (job2["baseline_cct_s"], job2["symphony_cct_s"]) == (pytest.approx(0.040), pytest.approx(0.030))
        assert job2["oracle"] == pytest.approx({"baseline_cct_s": 0.032, "symphony_cct_s": 0.016,
                                                "cct_change_pct": -50.0, "bound_s": 0.016})
    assert s["scaling"]["time"] == 4.0 and s["runs"][0]["job_cct_mean_s"] == pytest.approx({"1": 0.192, "2": 0.040})
    text = (exp / f"{stamp}-report" / "report.md").read_text()
    assert "| 2 | 0.0400 | 0.0300 | -25.0 % | -25.0 % | 0.0320 | 0.0160 | -50.0 % | 0.0160 | 0.50 | 0.80 |" in text
    out = capsys.readouterr().out
    row = next(line.split() for line in out.splitlines() if line.strip().startswith("2 "))
    assert row == ["2", "0.040", "0.030", "-25.0", "-", "0.032", "0.016", "-50.0", "0.016", "0.50", "0.80", "-", "-"]
    # two jobs: no pooled CCT, in the table or the lines under it
    assert "CCT mean" not in out and "Symphony against baseline" not in out and s["cct_change_pct"] is None


def test_the_variants_table_labels_one_jobs_cct_and_gives_none_for_several():
    row = {"runs_ok": 1, "runs": 1, "cct_mean_s": 4.348, "cct_std_s": 0.1, "run_cct_std_s": 0.0,
           "cct_change_pct": -3.0, "misalignment_mean": 1.0, "sym_marks_per_run": 3}
    one = {"variants": {"baseline": row}, "jobs": {"1": {}}, "multi_job": False}
    head, line = SU.table(one).splitlines()
    assert head.split("  ")[2] == "job 1 CCT mean s" and "4.348" in line
    several = {**one, "jobs": {"1": {}, "2": {}}, "multi_job": True}
    assert "CCT" not in SU.table(several) and "4.348" not in SU.table(several)
