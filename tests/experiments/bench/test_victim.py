"""experiments/bench/victim.py's arithmetic: which job is the victim, the
change's standard error, and every target judged from hand-made figures
(the bench itself runs experiments and prints; it asserts nothing)."""

from __future__ import annotations

import math

import pytest

from contract import exits
from experiments.bench import victim as V
from experiments.bench.victim import job_figures, main, per_run_means, run_means, targets, victim_of


def summary(large_change, victim_change, victim_captured, victim_eff, victim_dep=-40.0, in_regime=True):
    def job(base, change, oracle_change, captured, eff, dep):
        return {"baseline_cct_s": base, "symphony_cct_s": base * (1 + change / 100), "cct_change_pct": change,
                "captured": captured, "efficiency": eff,
                "oracle": {"baseline_cct_s": base * eff, "cct_change_pct": oracle_change},
                "sim": {"config": None, "deployment": {"cct_change_pct": dep}}}
    verdict = {"in_regime": in_regime, "off": [] if in_regime else
               [{"ratio": "rtt_per_step", "value": 0.02, "target": 0.001, "factor": 20.0}]}
    return {"jobs": {"1": job(8.0, large_change, -1.4, None, 0.93, 0.5),
                     "2": job(0.9, victim_change, -52.3, victim_captured, victim_eff, victim_dep)},
            "regime": {"verdicts": {"1": verdict, "2": verdict}}}


MEANS = {"baseline": {"1": [8.0, 8.02, 7.98], "2": [0.89, 0.90, 0.91]},
         "symphony": {"1": [8.2, 8.25, 8.15], "2": [0.58, 0.60, 0.62]}}


def test_the_standard_error_is_of_the_per_run_means_over_the_baseline():
    jobs = job_figures(summary(2.5, -33.3, 0.64, 1.40), MEANS)
    se = math.sqrt(0.02 ** 2 / 3 + 0.05 ** 2 / 3) / 8.0 * 100
    assert jobs["1"]["change_se_pct"] == pytest.approx(se)
    assert (jobs["2"]["runs_baseline"], jobs["2"]["runs_symphony"]) == (3, 3)


def test_a_scaled_runs_means_are_in_the_configs_units_as_the_summarys():
    def run(variant, cct, scale):
        return {"variant": variant, "status": "ok", "fidelity": "ok", "time_factor": scale,
                "summary": {"jobs": {"2": {"cct_mean_s": cct}}}}
    # a demo batch at K = 50 printed the victim 0.571 +- 0.367 s: the spread in
    # the runs' own seconds beside a mean in the config's
    means = run_means([run("baseline", 28.30, 50.0), run("baseline", 28.85, 50.0), run("symphony", 0.5, None)])
    assert means["baseline"]["2"] == pytest.approx([0.566, 0.577])
    assert means["symphony"]["2"] == [0.5]


def test_the_per_run_means_are_the_summarys_own_when_it_has_them(tmp_path):
    # the summary's are the paired runs' and already in the config's units:
    # no run directory is read (there is none here)
    summ = {"variants": {v: {"jobs": {"2": {"cct_run_means_s": m}}} for v, m in
                         (("baseline", [0.566, 0.577]), ("symphony", [0.332, 0.334]))},
            "runs": [{"run": "gone-baseline-rep1"}]}
    assert per_run_means(summ, tmp_path) == {"baseline": {"2": [0.566, 0.577]}, "symphony": {"2": [0.332, 0.334]}}
    del summ["variants"]["symphony"]["jobs"]["2"]["cct_run_means_s"]      # an older summary: from the runs
    assert per_run_means(summ, tmp_path) == {}


def test_without_the_summarys_means_only_paired_runs_count():
    def run(variant, rep, status="ok"):
        return {"variant": variant, "repeat": rep, "status": status, "fidelity": "ok", "scale": None,
                "summary": {"jobs": {"2": {"cct_mean_s": float(rep)}}}}
    means = run_means([run("baseline", 1), run("baseline", 2), run("symphony", 1), run("symphony", 2, "failed")])
    assert means == {"baseline": {"2": [1.0]}, "symphony": {"2": [1.0]}}


def test_the_victim_is_the_job_the_oracle_gains_most_for_and_only_above_2_pct():
    jobs = job_figures(summary(2.5, -33.3, 0.64, 1.40), MEANS)
    assert victim_of(jobs) == "2"
    jobs["2"]["oracle_change_pct"] = -1.9
    assert victim_of(jobs) is None


def test_each_target_is_judged_on_its_own_figure():
    got = {c["what"]: c["met"] for c in targets(job_figures(summary(2.5, -33.3, 0.64, 1.40), MEANS))}
    assert got["job 2 (victim): change against the deployment simulation's"] is True    # -33.3 vs -40 +- 10
    assert got["job 2 (victim): captured (the deployment simulation: 0.76)"] is True    # 0.64 >= 0.50
    assert got["job 1: change against the deployment simulation's"] is True            # +2.5 vs +0.5 +- 5
    assert got["job 1: baseline against the oracle's (oracle / measured)"] is True     # 0.93
    assert got["job 2: baseline against the oracle's (oracle / measured)"] is False    # 1.40
    assert got["job 1: in the deployment's regime"] is True
    noise = next(w for w in got if w.startswith("job 1: oracle"))
    assert got[noise] is False                                   # +2.5 % against 2 SE of about 0.7 %
    worse = {c["what"]: c["met"] for c in targets(job_figures(summary(6.0, -20.0, 0.38, 1.0, in_regime=False),
                                                              MEANS))}
    assert worse["job 1: change against the deployment simulation's"] is False         # +6.0 vs +0.5
    assert worse["job 2 (victim): change against the deployment simulation's"] is False  # -20 vs -40
    assert worse["job 2 (victim): captured (the deployment simulation: 0.76)"] is False
    assert worse["job 2: in the deployment's regime"] is False


def test_no_captured_fraction_where_the_oracle_offers_nothing():
    doc = summary(2.5, -33.3, 0.64, 1.40)
    doc["jobs"]["1"]["oracle"]["cct_change_pct"] = 1.3e-14       # the oracle's 0 %, as a float sum leaves it
    jobs = job_figures(doc, MEANS)
    assert jobs["1"]["deployment_captured"] is None
    assert jobs["2"]["deployment_captured"] == pytest.approx(-40.0 / -52.3)


def test_captured_is_a_target_only_where_the_deployment_simulation_captures_half():
    checks = targets(job_figures(summary(2.5, -10.0, 0.19, 1.0, victim_dep=-20.0), MEANS))
    assert not [c for c in checks if "captured" in c["what"]]       # -20 / -52.3 = 0.38 < 0.50
    change = next(c for c in checks if c["what"].startswith("job 2 (victim): change"))
    assert change["met"] is True                                    # -10 vs -20 +- 10


def test_a_target_without_enough_runs_is_not_judged():
    one_run = {v: {j: xs[:1] for j, xs in jobs.items()} for v, jobs in MEANS.items()}
    checks = targets(job_figures(summary(0.1, -33.3, 0.64, 1.0), one_run))
    noise = next(c for c in checks if "within the noise" in c["what"])
    assert noise["met"] is None


@pytest.mark.parametrize("content, says", [
    (None, "cannot read a summary"),
    ("{not json", "cannot read a summary"),
    ('{"status": "running", "pid": 1}', "no figures yet (status running"),
])
def test_a_batch_without_figures_is_one_line_and_exit_2(tmp_path, capsys, content, says):
    path = tmp_path / "x-summary.json"
    if content is not None:
        path.write_text(content)
    assert main(["--batch", str(path)]) == exits.USAGE
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and says in err[0], err


def test_a_scenario_of_ones_own_that_is_not_there_is_one_line_and_exit_2(tmp_path, capsys):
    missing = tmp_path / "mine.toml"
    assert main(["--config", str(missing)]) == exits.USAGE
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"experiments.bench.victim: {missing}: no such config file"]


@pytest.mark.root
def test_a_bad_scenario_of_ones_own_is_refused_before_any_run(tmp_path, capsys):
    bad = tmp_path / "mine.toml"
    bad.write_text('[topology]\nkind = "ring"\nhosts = 4\nhost_rate_mbit = 10\n'
                   '[[jobs]]\nranks = 4\nmessage_bytes = 400\niterations = 1\n')
    assert main(["--config", str(bad), "--out", str(tmp_path / "out")]) == exits.USAGE
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"experiments.bench.victim: {bad}: config error: topology.kind")
    assert not (tmp_path / "out").exists()


def test_a_signal_stops_the_bench_not_only_the_batch_it_came_in(tmp_path, capsys, monkeypatch):
    """A bench of several scenarios used to take a SIGTERM as the end of one
    batch and go on to the next (a --family bench ran on for 45 minutes)."""
    ran = []

    def fake(config, args):
        ran.append(config.name)
        return tmp_path / "none-summary.json", exits.INTERRUPTED if len(ran) == 2 else exits.OK

    monkeypatch.setattr(V, "run_scenario", fake)
    monkeypatch.setattr(V.os, "geteuid", lambda: 0)
    configs = [tmp_path / f"s{i}.toml" for i in range(3)]
    for c in configs:
        c.write_text("")
    monkeypatch.setattr(V, "evaluate", lambda path: {"scenario": path.name, "summ": {}, "jobs": {}, "targets": []})
    monkeypatch.setattr(V, "print_scenario", lambda *a: None)
    args = [x for c in configs for x in ("--config", str(c))]
    assert main(args) == exits.INTERRUPTED
    assert ran == ["s0.toml", "s1.toml"]
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"experiments.bench.victim: interrupted in {configs[1]}; not run: {configs[2]}"]


def test_a_confirmed_batch_meets_the_regime_target_by_the_second_criterion():
    """Out of regime by its ratios, but the simulation of the batch's own K
    agrees with the deployment's (summary "sim_confirmed"): the regime target
    is met, and says why; the batch's simulated change is its own column."""
    doc = summary(2.5, -33.3, 0.64, 1.40, in_regime=False)
    doc["sim_k"] = 100.0
    doc["jobs"]["2"]["sim"]["config"] = {"cct_change_pct": -37.0}
    jobs = job_figures(doc, MEANS)
    assert jobs["2"]["sim_at_k_change_pct"] == -37.0
    assert {c["what"]: c["met"] for c in targets(jobs)}["job 2: in the deployment's regime"] is False
    doc["sim_confirmed"] = True
    regime = next(c for c in targets(job_figures(doc, MEANS)) if c["what"] == "job 2: in the deployment's regime")
    assert regime["met"] is True and "the regime's second criterion" in regime["target"]
    doc["sim_k"] = 1.0                                     # K = 1's figures are not the batch's own
    assert job_figures(doc, MEANS)["2"]["sim_at_k_change_pct"] is None
