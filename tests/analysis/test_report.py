"""The report over synthetic run directories: numbers, failed runs, plots, CLI."""

import json
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from analysis.__main__ import main as analysis_main
from analysis.records import RecordWarning, Run, load_run
from analysis.report import _title, analyse_run, write_report
from analysis.synthetic import T0_NS, demo_experiment, ring_times, sawtooth_rates, write_oracle, write_run
from tests.analysis.conftest import JOB1
from tests.analysis.pngs import assert_drawn
from tests.harness import REPO

SWITCH = {"counters": {"sym_marks": [0, 4], "queue_marks": [7, 1], "pkts": [100, 100]}}


@pytest.fixture(scope="module")
def experiment(tmp_path_factory):
    """baseline: steps of 10 ms, symphony: 8 ms (known CCTs), 2 repeats each,
    plus a failed symphony run with a huge CCT that must not be averaged in."""
    root = tmp_path_factory.mktemp("results") / "exp"
    dirs = []
    for rep in range(2):
        for variant, step_s in (("baseline", 0.010), ("symphony", 0.008)):
            times = ring_times(4, 2, step_s, straggle={(1, 1): 0.005})
            t0 = min(a for a, _ in times.values())
            cnp = [t0 + 5 * 10**6, t0 + 9 * 10**6]
            dirs.append(write_run(root / f"s-{variant}-rep{rep}", times, variant=variant, repeat=rep,
                                  switches={"s1": SWITCH, "s2": {"counters": {"sym_marks": [1]}}},
                                  rates={0: sawtooth_rates(t0, cnp, 20e6)}, cnps={0: cnp},
                                  jitter=[{"kind": "rate", "link": "h1-s1", "start_s": 0.002, "end_s": 0.02,
                                           "params": {"rate_mbit": 10}},
                                          {"kind": "compute", "job": 1, "rank": 1, "start_s": None,
                                           "end_s": None, "params": {"iter": 1, "delay_s": 0.005}}]))
    failed = write_run(root / "s-symphony-rep2", ring_times(4, 2, 1.0), variant="symphony", repeat=2,
                       status="failed", reason="switch s2 exited with code -9 at t=3.2s")
    dirs.append(failed)
    interrupted = root / "s-baseline-rep2"  # Ctrl-C before any agent wrote a line
    (interrupted / "agents").mkdir(parents=True)
    (interrupted / "config.toml").write_text((dirs[0] / "config.toml").read_text())
    (interrupted / "meta.json").write_text(json.dumps(
        {"variant": "baseline", "repeat": 2, "status": "interrupted", "reason": "SIGINT"}))
    dirs.append(interrupted)
    with pytest.warns(RecordWarning, match="no rank<r>.jsonl files"):
        report = write_report(dirs)
    return root, dirs, report


def load_metrics(d):
    return json.loads((d / "metrics.json").read_text())


def test_report_goes_to_the_experiment_dir_with_metrics_in_each_run(experiment):
    root, dirs, report = experiment
    assert report == root.resolve() / "report.md"
    for d in dirs:
        assert load_metrics(d)["run"] == d.name


def test_metrics_json_holds_known_ccts(experiment):
    _, dirs, _ = experiment
    base = load_metrics(dirs[0])
    job = base["jobs"]["1"]
    # lockstep ring, 6 steps of 10 ms; iteration 1: rank 1 starts 5 ms late and the
    # ring waits for it once, so 65 ms
    assert job["cct_s"] == [pytest.approx(0.060), pytest.approx(0.065)]
    assert base["link_rate_bps"] == 20e6
    assert base["marks"]["total"] == {"sym_marks": 5, "queue_marks": 8, "pkts": 200}
    assert base["cnp"] == {"tx": 2, "rx": 2}
    assert job["misalignment"]["max"] >= 1
    assert [w["kind"] for w in base["jitter"]] == ["rate", "compute"]
    assert base["jitter"][0]["rank"] == 0  # h1-s1 is rank 0's access link (config.toml's job hosts)
    # the compute window ends where rank 1 really started iteration 1
    compute = base["jitter"][1]
    assert compute["end_s"] - compute["start_s"] == pytest.approx(0.005)
    assert compute["end_s"] == pytest.approx(0.065)


def test_summary_table_excludes_the_failed_run_and_gives_the_change(experiment):
    root, _, report = experiment
    text = report.read_text()
    base_mean = (0.060 + 0.065) / 2
    sym_mean = (0.048 + 0.053) / 2
    change = (sym_mean - base_mean) / base_mean * 100
    # the report leads with the job's figures (one job: 4 ranks, 2 counted runs, 4 iterations each variant)
    assert f"| 1 | 4 | baseline | 2 | 4 | {base_mean:.4f} |" in text
    assert f"| 1 | 4 | symphony | 2 | 4 | {sym_mean:.4f} |" in text
    assert text.index("## CCT per job (s)") < text.index("## Runs per variant")
    assert "| baseline | 2 / 3 |" in text and "| symphony | 2 / 3 |" in text
    assert f"{change:+.1f} %" in text and change < 0
    assert "switch s2 exited with code -9 at t=3.2s" in text
    assert "| s-symphony-rep2 | symphony | failed |" in text
    assert "| s-baseline-rep2 | baseline | interrupted | SIGINT |" in text


def test_report_embeds_every_plot_it_wrote(experiment):
    root, _, report = experiment
    text = report.read_text()
    pngs = sorted((root / "plots").glob("*.png"))
    names = {p.stem for p in pngs}
    assert {"timeline_rep0", "timeline_rep1", "misalignment", "cct", "rates", "marks"} <= names
    for p in pngs:
        assert f"](plots/{p.name})" in text


def test_plots_are_images_with_content(experiment):
    root, _, _ = experiment
    for png in sorted((root / "plots").glob("*.png")):
        assert_drawn(png)


def test_single_run_report_goes_into_the_run_dir(tmp_path):
    d = write_run(tmp_path / "only-baseline-rep0", ring_times(3, 1, 0.01))
    report = write_report([d])
    assert report == d.resolve() / "report.md"
    assert (d / "plots" / "timeline_rep0.png").exists()
    assert (d / "metrics.json").exists()


def test_cut_last_line_through_the_command_line(tmp_path):
    d = write_run(tmp_path / "exp" / "x-baseline-rep0", ring_times(3, 1, 0.01))
    log = d / "agents" / "rank2.jsonl"
    lines = log.read_bytes().splitlines(keepends=True)
    assert b'"iter_end"' in lines[-1] and b'"step_end"' in lines[-2]
    # killed while writing the last step_end: iter_end never came, step_end half there
    log.write_bytes(b"".join(lines[:-2]) + lines[-2][:30])
    out = subprocess.run([sys.executable, "-m", "analysis", "report", str(d)], cwd=REPO,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "last line is cut" in out.stderr and "rank2.jsonl:" in out.stderr
    assert "Traceback" not in out.stderr
    assert "report:" in out.stdout and str(d.name) in out.stdout
    m = json.loads((d / "metrics.json").read_text())
    # rank 2's last step_end is gone, so the iteration is incomplete: no CCT
    assert m["jobs"]["1"]["iterations"][0]["complete"] is False
    assert any("last line is cut" in w for w in m["warnings"])


def test_bad_argument_is_one_line_and_exit_2(tmp_path):
    out = subprocess.run([sys.executable, "-m", "analysis", "report", str(tmp_path / "nope")], cwd=REPO,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2
    assert out.stderr.strip().count("\n") == 0 and "not a directory" in out.stderr


def test_demo_experiment_is_analysable_without_warnings(tmp_path):
    dirs = demo_experiment(tmp_path / "demo", repeats=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RecordWarning)
        report = write_report(dirs)
    assert "| symphony | 1 / 1 |" in report.read_text()
    assert "### Against the oracle" in report.read_text()      # the demo has an oracle file beside its runs


# ---------------------------------------------------------------- two jobs

def test_report_shows_cct_per_job(tmp_path, two_job_run):
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
    # no mean over both jobs' iterations (it was -13.8 % of the demo's, neither job's change)
    pooled = summary["variants"]["symphony"]
    assert pooled["cct_mean_s"] is None and pooled["cct_change_pct"] is None and pooled["cct_run_means_s"] == []
    assert text.index("## CCT per job (s)") < text.index("## Runs per variant")
    assert "| 2 | 3 | baseline | 1 | 2 | 0.0800 |" in text
    assert "| 2 | 3 | symphony | 1 | 2 | 0.0640 | 0.0000 | -20.0 % |" in text
    assert "| a-symphony-rep0 | symphony | ok | 2 | 2 / 2 | 0: 0.0640, 1: 0.0640 | 0.0640 | True |" in text
    assert "| a-symphony-rep0 | symphony | 0 | ok | - | 4 / 4 | 1: 0.0400, 2: 0.0640 |" in text     # the runs table
    metrics = json.loads((dirs[0] / "metrics.json").read_text())
    assert metrics["summary"]["jobs"]["2"]["cct_by_iter_s"] == {"0": pytest.approx(0.08), "1": pytest.approx(0.08)}


def test_single_job_report_leads_with_its_job_and_has_no_per_iteration_table(tmp_path):
    d = write_run(tmp_path / "one", ring_times(3, 1, 0.010))
    a = analyse_run(load_run(d))
    assert list(a["summary"]["jobs"]) == ["1"]
    text = write_report([d]).read_text()
    assert "| 1 | 3 | baseline | 1 | 1 | 0.0400 |" in text and "CCT per job and iteration" not in text


def _with_jobs(a: dict, means: dict[str, float]) -> dict:
    """An analysed run whose jobs have these mean CCTs (one iteration each), in its own clock."""
    jobs = {job: {"cct_by_iter_s": {"0": c}, "cct_s": [c], "cct_mean_s": c} for job, c in means.items()}
    return {**a, "summary": {**a["summary"], "jobs": jobs}}


def test_a_scaled_runs_plot_title_gives_each_job_in_the_config_time():
    """A scaled run's clock runs K times the config's: its panel title gives
    each job's mean CCT divided by it, never one mean over the jobs."""
    run = Run(Path("20261126T122042Z-baseline-rep1"), meta={"status": "ok", "scaling": {"time": 30.0, "bytes": 30.0}})
    scaled = _with_jobs(analyse_run(run), {"1": 90.0, "2": 15.0})
    assert scaled["scale"] == 30.0
    assert _title(run, scaled).endswith("- mean CCT job 1 3.000 s, job 2 0.500 s")
    assert _title(run, _with_jobs(scaled, {"1": 90.0}) | {"time_factor": 1.0}).endswith("- mean CCT 90.000 s")


def test_a_run_at_a_lower_rate_is_at_its_k_with_its_clock_k_over_r():
    """--scale 50 --rate 1/3: K (the bytes' factor, what the simulation's K
    is compared with) is 50; the run's clock runs 150 times the config's."""
    meta = {"status": "ok", "scaling": {"time": 150.0, "rate": 1 / 3, "bytes": 50.0}}
    run = Run(Path("20261126T122042Z-baseline-rep1"), meta=meta)
    a = analyse_run(run)
    assert (a["scale"], a["time_factor"], a["rate_factor"]) == (50.0, 150.0, 1 / 3)
    assert _title(run, _with_jobs(a, {"1": 150.0})).endswith("- mean CCT 1.000 s")


def test_a_scaled_batchs_report_is_in_the_config_units_with_k_said_once(tmp_path, two_job_run):
    """The issue-49 demo's report gave the large job's baseline as 217 s (the
    scaled run's clock, K = 50) beside the simulation's 4.81 s (the
    config's): measured and oracle now divided by the runs' time factor."""
    k = 5.0
    root = tmp_path / "exp"
    dirs = [two_job_run(root / f"s-{v}-rep0", v, job2_step_s=step) for v, step in (("baseline", 0.020),
                                                                                     ("symphony", 0.016))]
    for d in dirs:
        meta = json.loads((d / "meta.json").read_text())
        (d / "meta.json").write_text(json.dumps({**meta, "scaling": {"time": k, "rate": 1.0, "bytes": k}}))
    write_oracle(root, "s", {0: {"baseline": {1: JOB1, 2: ring_times(3, 2, 0.010, t0_ns=T0_NS)},
                                 "symphony": {1: JOB1, 2: ring_times(3, 2, 0.008, t0_ns=T0_NS)}}}, bound_s=0.05)
    text = write_report(dirs).read_text()
    summary = json.loads((root / "report.json").read_text())
    job2 = summary["jobs"]["2"]
    assert job2["baseline_cct_s"] == pytest.approx(0.080 / k) and job2["symphony_cct_s"] == pytest.approx(0.064 / k)
    assert job2["oracle"]["baseline_cct_s"] == pytest.approx(0.040 / k) and job2["oracle"]["bound_s"] == 0.05 / k
    assert job2["efficiency"] == pytest.approx(0.5) and job2["cct_change_pct"] == pytest.approx(-20.0)
    assert summary["time_factor"] == k and summary["scale"] == k
    assert f"| 2 | {0.080 / k:.4f} | {0.064 / k:.4f} | -20.0 % |" in text
    assert f"| 2 | 3 | baseline | 1 | 2 | {0.080 / k:.4f} |" in text
    assert text.count(f"--scale K = {k:g}") == 1 and "divided by 5 here" in text
    # metrics.json keeps the run's own clock
    assert json.loads((dirs[0] / "metrics.json").read_text())["summary"]["jobs"]["2"]["cct_mean_s"] == \
        pytest.approx(0.080)


def test_a_report_out_in_a_system_directory_is_one_line_and_exit_2(tmp_path, capsys):
    d = write_run(tmp_path / "one", ring_times(3, 1, 0.010))
    (tmp_path / "to-proc").symlink_to("/proc")
    for out in (tmp_path / "to-proc" / "report", "/sys/report"):
        assert analysis_main(["report", str(d), "--out", str(out)]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith(f"analysis: --out {out}: inside the system directory /"), err
    assert not (d / "metrics.json").exists()        # refused before anything was written


def test_runs_already_loaded_give_the_same_report_as_their_directories(experiment, tmp_path):
    """A batch hands the report the runs it read and analysed (not read
    again): the report's figures are those made from the directories; runs
    that are not the directories given are refused."""
    root, dirs, report = experiment
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loaded = [(run, analyse_run(run)) for run in map(load_run, dirs)]
        again = write_report(dirs, tmp_path / "again", loaded=loaded)
    assert json.loads((again.parent / "report.json").read_text()) == \
        json.loads((report.parent / "report.json").read_text())
    assert again.read_text().count("![") == report.read_text().count("![")
    with pytest.raises(ValueError, match="not the run directories given"):
        write_report(dirs[:2], tmp_path / "wrong", loaded=loaded[1:3])
