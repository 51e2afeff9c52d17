"""The regime table's measured side (analysis/regime.py): step time, RTT,
recoveries and climbs from the records, the ratios against a regime file's
targets, and the report's table."""

import json

import pytest

from analysis import regime as rg
from analysis.report import write_report
from analysis.synthetic import ring_times, write_run

LINE = 10e6
MS = 1_000_000   # ns


def test_a_halving_that_recovers_is_a_recovery_and_a_cut_target_a_climb():
    trace = [(0, LINE, LINE),
             (10 * MS, LINE / 2, LINE),          # a halving, Rt kept: a recovery starts
             (20 * MS, 0.8 * LINE, LINE),
             (30 * MS, 0.96 * LINE, LINE),        # back at 95 %: 20 ms
             (40 * MS, 0.5 * LINE, 0.96 * LINE),  # Rt cut below line: a climb starts
             (90 * MS, 0.9 * LINE, LINE),
             (100 * MS, LINE, LINE),              # 60 ms
             (110 * MS, 0.5 * LINE, LINE),        # a recovery whose target is then cut ...
             (120 * MS, 0.4 * LINE, 0.5 * LINE),  # ... becomes a climb from here
             (150 * MS, 0.99 * LINE, LINE),
             (160 * MS, 0.3 * LINE, LINE)]        # still open at the end: left out
    got = rg.rate_episodes(trace, LINE)
    assert got["recovery"] == pytest.approx([0.020])
    assert got["climb"] == pytest.approx([0.060, 0.030])


def test_measure_reads_steps_rtt_and_rates_per_job():
    events = [
        {"t": 0, "kind": "step_start", "job": 1, "rank": 0, "step": 0},
        {"t": 40 * MS, "kind": "step_end", "job": 1, "rank": 0, "step": 0},
        {"t": 40 * MS, "kind": "step_start", "job": 1, "rank": 0, "step": 1},
        {"t": 100 * MS, "kind": "step_end", "job": 1, "rank": 0, "step": 1},
        {"t": 0, "kind": "step_start", "job": 1, "rank": 1, "step": 0},
        {"t": 50 * MS, "kind": "step_end", "job": 1, "rank": 1, "step": 0},
        {"t": 5 * MS, "kind": "rate", "job": 1, "rank": 0, "rc": LINE / 2, "rt": LINE},
        {"t": 25 * MS, "kind": "rate", "job": 1, "rank": 0, "rc": LINE, "rt": LINE},
        {"t": 200 * MS, "kind": "stats", "job": 1, "rank": 0,
         "counters": {"rtt_samples": 10, "rtt_sum_us": 50_000, "rtt_min_us": 2000}},
        {"t": 200 * MS, "kind": "stats", "job": 1, "rank": 1,
         "counters": {"rtt_samples": 30, "rtt_sum_us": 250_000, "rtt_min_us": 4000}},
    ]
    got = rg.measure(events, LINE)["1"]
    assert got["step_median_s"] == pytest.approx(0.050) and got["steps"] == 3
    assert got["rtt_min_s"] == pytest.approx(0.003) and got["rtt_mean_s"] == pytest.approx(0.0075)
    assert got["recovery_s"] == pytest.approx([0.020]) and got["climb_s"] == []
    assert got["line_rate_bps"] == LINE
    # without a configured rate the largest target rate seen is the line rate
    assert rg.measure(events, None)["1"]["line_rate_bps"] == LINE


DOC = {"schema": rg.SCHEMA, "targets": {"rtt_per_step": 0.001, "recovery_per_step": 0.022,
                                        "step_per_decrease_period": 200.0, "kmin_per_bdp": 3.2},
       "deployment_step_s": 0.01, "deployment_rtt_s": 1e-5, "labels": {"rtt_per_step": "RTT / step time"},
       "jobs": {"1": {"step_s": 0.08, "line_rate_bps": LINE, "frame_bytes": 1462, "kmin_pkts": 5, "kmax_pkts": 20,
                      "periods": {"alpha": 0.01, "decrease": 0.01, "increase": 0.011, "cnp": 0.01},
                      "recovery_s": 0.04, "climb_s": 0.2, "design": {"recovery_per_step": 0.5}}}}


def test_ratios_use_the_measured_step_and_the_parameters_periods():
    measured = {"step_s": 0.1, "rtt_min_s": 0.004, "recovery_s": 0.02, "climb_s": None}
    r = rg.ratios(measured, DOC["jobs"]["1"])
    assert r["rtt_per_step"] == pytest.approx(0.04) and r["recovery_per_step"] == pytest.approx(0.2)
    assert "climb_per_step" not in r
    assert r["step_per_decrease_period"] == pytest.approx(10) and r["step_per_cnp_interval"] == pytest.approx(10)
    assert r["kmin_per_bdp"] == pytest.approx(5 * 1462 / (LINE * 0.004 / 8))
    rows = rg.table({"baseline": {"1": measured}}, DOC)
    by = {row["quantity"]: row for row in rows}
    assert by["step time"]["design"] == 0.08 and by["step time"]["target"] == 0.01
    assert by["recovery_per_step"]["design"] == 0.5 and by["recovery_per_step"]["target"] == 0.022
    assert by["rtt_per_step"]["measured"] == {"baseline": pytest.approx(0.04)}
    # without a regime file: measured only
    assert all(row["target"] is None and row["design"] is None for row in rg.table({"baseline": {"1": measured}}, None))


def test_the_report_has_a_regime_table_beside_the_regime_file(tmp_path):
    stamp = "20990101T000000Z"
    dirs = []
    for variant in ("baseline", "symphony"):
        d = write_run(tmp_path / f"{stamp}-{variant}-rep1", ring_times(4, 2, 0.08), variant=variant, repeat=1)
        dirs.append(d)
    (tmp_path / f"{stamp}-regime.json").write_text(json.dumps(DOC))
    assert rg.find_regime(dirs) == tmp_path / f"{stamp}-regime.json"
    text = write_report(dirs, tmp_path / "report").read_text()
    assert "### Regime" in text
    assert "| 1 | step time (ms) | 80 | 80 | 80 | 10 |" in text
    report = json.loads((tmp_path / "report" / "report.json").read_text())
    assert report["regime"]["measured"]["baseline"]["1"]["step_s"] == pytest.approx(0.08)


def test_a_file_of_another_schema_is_left_out_with_a_warning(tmp_path):
    path = tmp_path / "x-regime.json"
    path.write_text(json.dumps({"schema": "other", "jobs": {}}))
    sink: list[str] = []
    with pytest.warns(UserWarning):
        assert rg.load_regime(path, sink) is None
    assert "not a regime file" in sink[0]



def test_a_run_is_in_regime_when_every_deciding_ratio_is_within_a_factor_two():
    verdict, describe, job_verdicts, REGIME_FACTOR = rg.verdict, rg.describe, rg.job_verdicts, rg.REGIME_FACTOR
    targets = {"rtt_per_step": 0.001, "step_per_decrease_period": 200, "kmin_per_bdp": 3.2}
    assert verdict({"rtt_per_step": 0.0019, "step_per_decrease_period": 110, "kmin_per_bdp": 6.0}, targets) == \
        {"in_regime": True, "off": []}
    v = verdict({"rtt_per_step": 0.05, "step_per_decrease_period": 210, "kmin_per_bdp": 0.5}, targets)
    assert v["in_regime"] is False and [o["ratio"] for o in v["off"]] == ["rtt_per_step", "kmin_per_bdp"]
    assert v["off"][0]["factor"] == 50 > REGIME_FACTOR
    assert describe(v).startswith("out of regime: rtt_per_step 0.05 (deployment 0.001, x50 off)")
    assert verdict({}, targets)["in_regime"] is None and describe(verdict({}, targets)) == "regime unknown"
    # the RTT counts against the step at line rate, the thresholds against the measured BDP
    doc = {"targets": targets, "jobs": {"1": {"line_step_s": 0.01, "line_rate_bps": 1e11, "frame_bytes": 1000,
                                              "kmin_pkts": 400, "at_line_step": {"step_per_decrease_period": 200}}}}
    verdicts = job_verdicts({"baseline": {"1": {"rtt_min_s": 0.00001, "step_s": 0.05}}}, doc)
    assert verdicts["1"] == {"in_regime": True, "off": []}
    verdicts = job_verdicts({"baseline": {"1": {"rtt_min_s": 0.001, "step_s": 0.05}}}, doc)
    assert [o["ratio"] for o in verdicts["1"]["off"]] == ["rtt_per_step", "kmin_per_bdp"]


def test_the_verdict_counts_the_networks_base_rtt_not_the_loaded_minimum():
    """The runs' minimum sample carries DCQCN's standing queue: the verdict
    takes the network's base RTT where the regime file has it, and the
    measured minimum only where it does not (a file from before)."""
    targets = {"rtt_per_step": 0.001, "kmin_per_bdp": 3.2}
    job = {"line_step_s": 0.01, "line_rate_bps": 1e11, "frame_bytes": 1000, "kmin_pkts": 400, "base_rtt_s": 1e-5}
    doc = {"targets": targets, "jobs": {"1": job}}
    loaded = rg.job_verdicts({"baseline": {"1": {"rtt_min_s": 4e-5, "step_s": 0.05}}}, doc)["1"]
    assert loaded == {"in_regime": True, "off": []}           # 10 us: exactly the deployment's
    assert rg.verdict_ratios({"rtt_min_s": 4e-5}, job)["kmin_per_bdp"] == pytest.approx(3.2)
    old = {k: v for k, v in job.items() if k != "base_rtt_s"}
    off = rg.job_verdicts({"baseline": {"1": {"rtt_min_s": 1e-4, "step_s": 0.05}}}, {**doc, "jobs": {"1": old}})["1"]
    assert [(o["ratio"], round(o["factor"])) for o in off["off"]] == [("rtt_per_step", 10), ("kmin_per_bdp", 10)]
    assert rg.verdict_rtt_s({"rtt_min_s": None}, job) == 1e-5 and rg.verdict_rtt_s({"rtt_min_s": 3e-6}, None) == 3e-6
