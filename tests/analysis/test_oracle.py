"""The oracle beside measured runs (analysis/oracle.py) and in the report:
measured and oracle CCTs of synthetic runs with known step times, what was
captured, the efficiency, the plots."""

from __future__ import annotations

import json
import statistics

import pytest
from matplotlib import image as mpimg

from analysis import oracle as AO
from analysis.records import RecordWarning
from analysis.report import write_report
from analysis.synthetic import oracle_document, ring_times, write_oracle, write_run
from tests.analysis.pngs import assert_drawn

STAMP = "20990101T000000Z"
# 4 ranks, 6 steps an iteration, 2 iterations: the CCT is 6 x the step time
MEASURED = {"baseline": 0.010, "symphony": 0.008}       # 60 and 48 ms: -20 %
ORACLE = {"baseline": 0.005, "symphony": 0.0045}        # 30 and 27 ms: -10 %


def oracle_times(step_s: dict[str, float], repeats=(1, 2)):
    return {rep: {v: {1: ring_times(4, 2, s)} for v, s in step_s.items()} for rep in repeats}


def experiment(root, oracle_steps=ORACLE, failed_symphony_rep=None):
    """Baseline and Symphony runs of repeats 1 and 2 (a failed one where
    asked), the oracle file beside them."""
    dirs = []
    for rep in (1, 2):
        for v, step_s in MEASURED.items():
            failed = v == "symphony" and rep == failed_symphony_rep
            dirs.append(write_run(root / f"{STAMP}-{v}-rep{rep}", ring_times(4, 2, step_s * (3 if failed else 1)),
                                  variant=v, repeat=rep, status="failed" if failed else "ok",
                                  reason="deadline" if failed else ""))
    write_oracle(root, STAMP, oracle_times(oracle_steps), bound_s=0.024)
    return dirs


def test_measured_beside_the_oracle_captured_and_efficiency(tmp_path):
    dirs = experiment(tmp_path / "exp")
    report = write_report(dirs)
    summary = json.loads((report.parent / "report.json").read_text())
    job = summary["jobs"]["1"]
    assert (job["baseline_cct_s"], job["symphony_cct_s"], job["cct_change_pct"]) == pytest.approx((0.060, 0.048, -20.0))
    assert job["oracle"] == pytest.approx({"baseline_cct_s": 0.030, "symphony_cct_s": 0.027, "cct_change_pct": -10.0,
                                           "bound_s": 0.024})
    assert job["captured"] == pytest.approx(2.0)          # -20 % measured of -10 % possible
    assert job["efficiency"] == pytest.approx(0.5)        # 30 ms of 60 ms
    assert summary["oracle_file"] == str(tmp_path / "exp" / f"{STAMP}-oracle.json")
    text = report.read_text()
    assert "### Against the oracle" in text
    assert ("| 1 | 0.0600 | 0.0480 | -20.0 % | -20.0 %, -20.0 % (sd 0.0); mean -20.0 % +- 0.0 (2 standard errors "
            "over 2 repeats): beyond the run-to-run noise | 0.0300 | 0.0270 | -10.0 % | 0.0240 | 2.00 | 0.50 |") in text


def test_each_repeats_change_and_their_spread(tmp_path):
    """Symphony's change within each repeat, in repeat order: a repeat whose
    Symphony run failed is not one (its baseline has nothing to be set against)."""
    root, dirs = tmp_path / "exp", []
    for rep, sym_step, status in ((2, 0.009, "ok"), (1, 0.008, "ok"), (3, 0.0095, "ok"), (4, 0.007, "failed")):
        dirs.append(write_run(root / f"{STAMP}-baseline-rep{rep}", ring_times(4, 2, 0.010), variant="baseline",
                              repeat=rep))
        dirs.append(write_run(root / f"{STAMP}-symphony-rep{rep}", ring_times(4, 2, sym_step), variant="symphony",
                              repeat=rep, status=status, reason="deadline" if status != "ok" else ""))
    write_oracle(root, STAMP, oracle_times(ORACLE, repeats=(1, 2, 3, 4)), bound_s=0.024)
    report = write_report(dirs)
    job = json.loads((report.parent / "report.json").read_text())["jobs"]["1"]
    assert job["change_per_repeat_pct"] == pytest.approx([-20.0, -10.0, -5.0])
    assert job["change_sd_pct"] == pytest.approx(statistics.stdev([-20.0, -10.0, -5.0]))
    assert job["cct_change_pct"] == pytest.approx((0.008 + 0.009 + 0.0095) / 0.030 * 100 - 100)
    assert job["change_noise"] == pytest.approx({"mean_pct": -35 / 3, "repeats": 3, "beyond_noise": True,
                                                 "half_width_pct": 2 * job["change_sd_pct"] / 3 ** 0.5})
    assert ("| -20.0 %, -10.0 %, -5.0 % (sd 7.6); mean -11.7 % +- 8.8 (2 standard errors over 3 repeats): "
            "beyond the run-to-run noise |") in report.read_text()


def test_one_repeat_has_no_spread(tmp_path):
    root = tmp_path / "exp"
    dirs = [write_run(root / f"{STAMP}-{v}-rep1", ring_times(4, 2, s), variant=v, repeat=1)
            for v, s in MEASURED.items()]
    job = json.loads((write_report(dirs).parent / "report.json").read_text())["jobs"]["1"]
    assert job["change_per_repeat_pct"] == pytest.approx([-20.0]) and job["change_sd_pct"] is None
    assert job["change_noise"] is None


def test_nothing_to_gain_captures_nothing(tmp_path):
    dirs = experiment(tmp_path / "exp", oracle_steps={"baseline": 0.005, "symphony": 0.005})
    job = json.loads((write_report(dirs).parent / "report.json").read_text())["jobs"]["1"]
    assert job["oracle"]["cct_change_pct"] == 0.0 and job["captured"] is None


def test_the_oracle_counts_the_repeats_of_ok_runs_only(tmp_path):
    # the oracle's Symphony CCT differs per repeat; repeat 2's Symphony run failed
    root = tmp_path / "exp"
    dirs = experiment(root, failed_symphony_rep=2)
    doc = oracle_document({1: {"baseline": {1: ring_times(4, 2, 0.005)}, "symphony": {1: ring_times(4, 2, 0.004)}},
                           2: {"baseline": {1: ring_times(4, 2, 0.005)}, "symphony": {1: ring_times(4, 2, 0.001)}}},
                          stamp=STAMP)
    (root / f"{STAMP}-oracle.json").write_text(json.dumps(doc))
    job = json.loads((write_report(dirs).parent / "report.json").read_text())["jobs"]["1"]
    assert job["oracle"]["symphony_cct_s"] == pytest.approx(0.024)       # repeat 1's only
    assert job["oracle"]["baseline_cct_s"] == pytest.approx(0.030)


def test_without_an_oracle_file_the_measured_figures_only(tmp_path):
    d = write_run(tmp_path / "exp" / f"{STAMP}-baseline-rep1", ring_times(3, 1, 0.01), repeat=1)
    report = write_report([d])
    summary = json.loads((report.parent / "report.json").read_text())
    assert summary["jobs"]["1"]["oracle"] is None and summary["oracle_file"] is None
    assert "Against the oracle" not in report.read_text()
    assert not (report.parent / "plots" / "cctjobs.png").exists()


def test_a_file_of_another_schema_is_left_out_with_a_warning(tmp_path):
    path = tmp_path / "x-oracle.json"
    path.write_text(json.dumps({"schema": "other/9", "repeats": {}}))
    sink: list[str] = []
    with pytest.warns(RecordWarning, match="not an oracle file"):
        assert AO.load_oracle(path, sink) is None
    assert len(sink) == 1


def test_find_oracle_by_the_runs_stamp(tmp_path):
    d = tmp_path / f"{STAMP}-symphony-rep3.2"
    d.mkdir()
    assert AO.find_oracle([d]) is None
    (tmp_path / f"{STAMP}-oracle.json").write_text("{}")
    assert AO.find_oracle([d]) == tmp_path / f"{STAMP}-oracle.json"


def test_captured_is_none_near_zero():
    assert AO.captured(-5.0, -10.0) == 0.5
    assert AO.captured(-5.0, 0.2) is None and AO.captured(None, -10.0) is None


def test_the_report_draws_the_oracle(tmp_path):
    with_oracle = experiment(tmp_path / "a")
    report = write_report(with_oracle)
    plots = report.parent / "plots"
    assert (plots / "cctjobs.png").exists() and "](plots/cctjobs.png)" in report.read_text()
    for png in sorted(plots.glob("*.png")):
        assert_drawn(png)
    # the timeline gets a panel per variant of the model: taller than without the oracle
    without = [write_run(tmp_path / "b" / d.name, ring_times(4, 2, MEASURED[d.name.split("-")[1]]),
                         variant=d.name.split("-")[1], repeat=int(d.name[-1])) for d in with_oracle]
    plain = write_report(without).parent / "plots" / "timeline_rep1.png"
    assert mpimg.imread(plots / "timeline_rep1.png").shape[0] > 1.5 * mpimg.imread(plain).shape[0]
