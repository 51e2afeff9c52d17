"""Degraded runs kept apart by the analysis (experiments/fidelity.py's
verdict in meta.json): out of a variant's figures while it has a run whose
fidelity is ok, its only figures (marked) when it has none; report.md's
Fidelity table."""

import json

import pytest

from analysis.records import load_run
from analysis.report import analyse_run, summarise, write_report
from analysis.synthetic import ring_times, write_run

SATURATED = {"check": "cpu_saturated_share", "value": 0.9, "limit": 0.5, "ok": False}


def with_fidelity(run_dir, verdict):
    meta_path = run_dir / "meta.json"
    meta = json.loads(meta_path.read_text())
    checks = [SATURATED if verdict == "degraded" else {**SATURATED, "value": 0.1, "ok": True},
              {"check": "port_rate_ratio", "value": None, "limit": 0.95, "ok": None}]
    meta["fidelity"] = {"verdict": verdict, "checks": checks,
                        "reasons": ["cpu_saturated_share 0.9 > 0.5: ..."] if verdict == "degraded" else []}
    meta_path.write_text(json.dumps(meta))
    return run_dir


def runs(tmp_path, verdicts):
    """Baseline runs, one per verdict, each step 10 ms longer than the last."""
    return [with_fidelity(write_run(tmp_path / f"x-baseline-rep{i}", ring_times(3, 1, 0.01 * (i + 1)),
                                    repeat=i), v) for i, v in enumerate(verdicts)]


def test_degraded_runs_are_left_out_while_a_run_is_ok(tmp_path):
    analysed = [analyse_run(load_run(d)) for d in runs(tmp_path, ["ok", "degraded", "ok"])]
    assert [a["fidelity"] for a in analysed] == ["ok", "degraded", "ok"]
    row = summarise(analysed)["variants"]["baseline"]
    assert row["runs_ok"] == 2 and row["runs_degraded"] == ["x-baseline-rep1"] and row["fidelity"] == "ok"
    assert row["cct_run_means_s"] == [analysed[0]["summary"]["cct_mean_s"], analysed[2]["summary"]["cct_mean_s"]]
    job = next(iter(row["jobs"]))
    assert row["jobs"][job]["cct_run_means_s"] == [a["summary"]["jobs"][job]["cct_mean_s"]
                                                   for a in (analysed[0], analysed[2])]


def test_a_variant_of_degraded_runs_only_keeps_them_and_says_so(tmp_path):
    analysed = [analyse_run(load_run(d)) for d in runs(tmp_path, ["degraded", "degraded"])]
    row = summarise(analysed)["variants"]["baseline"]
    assert row["runs_ok"] == 2 and row["fidelity"] == "degraded" and row["cct_mean_s"] == pytest.approx(
        sum(a["summary"]["cct_mean_s"] for a in analysed) / 2)


def test_runs_without_a_verdict_count_as_before(tmp_path):
    d = write_run(tmp_path / "x-baseline-rep0", ring_times(3, 1, 0.01))
    a = analyse_run(load_run(d))
    assert a["fidelity"] is None and a["fidelity_checks"] == {}
    assert summarise([a])["variants"]["baseline"]["runs_ok"] == 1


def test_report_has_the_fidelity_table(tmp_path):
    dirs = runs(tmp_path, ["ok", "degraded"])
    text = write_report(dirs, tmp_path / "report").read_text()
    assert "## Fidelity" in text
    (line,) = [x for x in text.splitlines() if x.startswith("| x-baseline-rep1 | baseline | degraded |")]
    assert "**0.90**" in line and "cpu_saturated_share 0.9 > 0.5" in line
    (line,) = [x for x in text.splitlines() if x.startswith("| x-baseline-rep0 | baseline | ok |")]
    assert "| 0.10 | - |" in line
