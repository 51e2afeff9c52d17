"""The regime file the experiments layer writes beside the runs (the
targets and each job's parameters, which analysis cannot compute without
hosts), and the summary's regime table from it."""

import json

import pytest

from analysis import regime as rg
from analysis.synthetic import ring_times, write_jobs_run
from experiments import config as C
from experiments import summary as SU
from experiments.signals import Signals
from experiments.supervise import RunResult
from hosts import dcqcn
from hosts.dcqcn_regime import RECOVERED_FRACTION


def spec() -> C.ExperimentSpec:
    return C.resolve({
        "name": "regime", "topology": {"kind": "dumbbell", "hosts": 4, "host_rate_mbit": 20},
        "jobs": [{"ranks": 2, "hosts": ["h1", "h3"], "message_bytes": 400_000, "iterations": 1},
                 {"ranks": 2, "hosts": ["h2", "h4"], "message_bytes": 40_000, "iterations": 1,
                  "transport": "tcp"}],
        "dcqcn": {"step_ms": 800, "timer_floor_ms": 20, "clamp_target_rate": True},
        "ecn": {"kmin": 27, "kmax": 60}})


def test_the_regime_file_holds_the_targets_and_each_jobs_parameters():
    doc = SU.regime_document(spec(), "20990101T000000Z")
    assert doc["schema"] == rg.SCHEMA and doc["targets"] == pytest.approx(dcqcn.regime_targets())
    assert doc["deployment_step_s"] == pytest.approx(0.01) and doc["deployment_rtt_s"] == pytest.approx(1e-5)
    job = doc["jobs"]["1"]
    # what hosts.agent.rate_control builds: the emulation preset at 20 Mbit/s, its
    # timers from an 800 ms step, floored at 20 ms, the clamp overridden
    p = dcqcn.make_params("emulation", 20e6, 0.8, 0.02, clamp_target_rate=True)
    assert job["step_s"] == 0.8 and job["periods"]["decrease"] == pytest.approx(p.decrease_period_s) == 0.02
    assert job["design"] == pytest.approx(dcqcn.regime_ratios(p, 0.8))
    assert job["recovery_s"] == pytest.approx(job["design"]["recovery_per_step"] * 0.8)
    assert (job["kmin_pkts"], job["kmax_pkts"], job["frame_bytes"]) == (27, 60, 1462)
    assert "step_per_decrease_period" in job["drift"]
    # TCP: DCQCN paces its connections with the same parameters and timers
    assert doc["jobs"]["2"]["periods"] == job["periods"] and doc["jobs"]["2"]["base_rtt_s"] > 0
    json.dumps(doc)                                 # a JSON document


def test_a_job_without_dcqcn_has_no_regime_document_and_a_tcp_job_a_verdict():
    raw = json.loads(json.dumps(spec().as_dict()))
    raw.pop("sweep_point", None)
    raw["dcqcn"] = {"preset": "off"}
    assert SU.regime_document(C.resolve(raw), "20990101T000000Z")["jobs"] == {"1": None, "2": None}
    doc = SU.regime_document(spec(), "20990101T000000Z")
    # a TCP agent records no RTT samples: the verdict counts the network's base RTT
    verdict = rg.job_verdicts({"baseline": {"2": {"step_s": 0.01}}}, doc)["2"]
    assert verdict["in_regime"] is not None


def test_a_job_with_shorter_steps_is_held_to_its_own_ratios_in_the_deployment():
    raw = {"name": "sizes", "topology": {"kind": "dumbbell", "hosts": 4, "host_rate_mbit": 20},
           "jobs": [{"ranks": 2, "hosts": ["h1", "h3"], "message_bytes": 400_000, "iterations": 1},
                    {"ranks": 2, "hosts": ["h2", "h4"], "message_bytes": 100_000, "iterations": 1}]}
    doc = SU.regime_document(C.resolve(raw), "20990101T000000Z")
    large, small = doc["jobs"]["1"], doc["jobs"]["2"]
    assert large["targets"] == pytest.approx(doc["targets"]) and large["deployment_step_s"] == pytest.approx(0.01)
    # a quarter of the scenario's step: four times the RTTs per step, a quarter of the periods
    assert small["deployment_step_s"] == pytest.approx(0.0025)
    assert small["targets"]["rtt_per_step"] == pytest.approx(4 * doc["targets"]["rtt_per_step"])
    assert small["targets"]["step_per_decrease_period"] == pytest.approx(doc["targets"]["step_per_decrease_period"] / 4)
    # and the same timers as the large job: those of the scenario's step
    assert small["step_s"] == large["step_s"] and small["periods"] == large["periods"]
    measured = {"rtt_min_s": small["base_rtt_s"], "step_s": small["line_step_s"]}
    assert rg.job_verdicts({"baseline": {"2": measured}}, doc)["2"] == rg.verdict(
        rg.verdict_ratios(measured, small), small["targets"])


def test_analysis_counts_a_recovery_as_hosts_does():
    assert rg.RECOVERED == RECOVERED_FRACTION


def test_finish_point_writes_the_regime_file_and_the_summary_has_the_table(tmp_path, capsys):
    s, stamp = spec(), "20990101T000000Z"
    exp = tmp_path / "regime"
    results = []
    for variant in ("baseline", "symphony"):
        d = write_jobs_run(exp / f"{stamp}-{variant}-rep1", {1: ring_times(2, 1, 0.2), 2: ring_times(2, 1, 0.02)},
                           variant=variant, repeat=1, jitter=[])
        results.append(RunResult(d, variant, 1, status="ok"))
    lines: list[str] = []
    summ = SU.finish_point(s, results, exp, stamp, signals=Signals(), report=True, say=lines.append)
    assert (exp / f"{stamp}-regime.json").is_file()
    rows = {(r["job"], r["quantity"]): r for r in summ["regime"]["rows"]}
    assert rows[("1", "step time")]["measured"]["baseline"] == pytest.approx(0.2)
    assert rows[("1", "step time")]["design"] == 0.8 and rows[("1", "step time")]["target"] == pytest.approx(0.01)
    assert rows[("1", "recovery_per_step")]["target"] == pytest.approx(dcqcn.regime_targets()["recovery_per_step"])
    assert rows[("2", "step time")]["design"] == 0.8       # TCP: DCQCN's pacing, the same timers
    assert "regime" in capsys.readouterr().out
    assert "### Regime" in (exp / f"{stamp}-report" / "report.md").read_text()


def test_an_out_of_regime_job_of_a_confirmed_batch_is_told_so():
    """regime_lines: out of regime by its ratios is not the answer, unless
    the simulation of the batch's own K agrees with the deployment's."""
    off = {"in_regime": False, "off": [{"ratio": "rtt_per_step", "value": 0.0004, "target": 0.001, "factor": 2.5}]}
    summ = {"regime": {"verdicts": {"2": off}},
            "jobs": {"2": {"sim": {"deployment": {"cct_change_pct": -26.7}}}}}
    [line] = SU.regime_lines(summ)
    assert "not the scenario's answer" in line and "-26.7 %" in line
    [line] = SU.regime_lines({**summ, "sim_confirmed": True})
    assert "not the scenario's answer" not in line and "the regime's second criterion" in line
