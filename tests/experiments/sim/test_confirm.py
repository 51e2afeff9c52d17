"""experiments/sim/confirm.py: `check --confirm` climbs --scale auto's
ladder until the simulation at K agrees with the deployment's, and its
rungs are the same simulation a batch's prediction runs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import tomli_w

from experiments import config as C
from experiments.sim import confirm as CF
from experiments.sim import predict as P
from tests.experiments.sim.test_predict import RAW
from tests.harness import REPO
from topologies.network.links import VIA_TWIN


def test_the_rungs_are_the_ladders_above_the_start():
    assert CF.rungs_from(30.0, 100.0) == [30.0, 50.0, 70.0, 100.0]
    assert CF.rungs_from(30.0, 90.0) == [30.0, 50.0, 70.0]
    assert CF.rungs_from(30.0, 30.0) == [30.0]
    assert CF.rungs_from(4.0, 6.0) == [4.0, 5.0]          # a start off the ladder is tried as given


def test_a_rung_agrees_only_when_every_job_is_within_5_points():
    assert CF.Rung(30.0, {"1": 0.7, "2": -22.0}, {"1": 1.5, "2": 4.7}).agrees
    assert not CF.Rung(30.0, {"1": 0.7, "2": -13.4}, {"1": 1.5, "2": 13.3}).agrees
    assert not CF.Rung(30.0, {"1": None}, {"1": None}).agrees          # a job that did not finish
    assert not CF.Rung(30.0, {}, {}).agrees
    assert not CF.Rung(30.0, {"1": 0.7}, {"1": 0.0}, errors=("K=30 baseline: deadline",)).agrees


def fake_run_all(changes_at):
    """run_all stood in for: each task's job 1 at 1.0 s baseline and at
    1 + change/100 with Symphony, the change by the task's scale label."""
    seen = []

    def run_all(todo, cache, workers=None, progress=lambda t, r: None):
        seen.append(todo[0].scale)
        out = {}
        for t in todo:
            cct = 1.0 if t.variant == "baseline" else 1.0 + changes_at[t.scale] / 100
            out[t] = {"jobs": {"1": {"cct_mean_s": cct}}}
            progress(t, out[t])
        return out
    return run_all, seen


def test_it_climbs_until_a_rung_agrees_and_no_further(monkeypatch, tmp_path):
    spec = C.resolve(json.loads(json.dumps(RAW)))
    run_all, seen = fake_run_all({"deployment": -26.7, "K=30": -13.4, "K=50": -18.0, "K=70": -23.0, "K=100": -25.0})
    monkeypatch.setattr(CF, "run_all", run_all)
    told = []
    c = CF.confirm(spec, 30.0, 300.0, VIA_TWIN, tmp_path, on_rung=lambda so_far: told.append(CF.describe_last(so_far)))
    assert seen == ["deployment", "K=30", "K=50", "K=70"]
    assert c.k == 70.0 and [r.agrees for r in c.rungs] == [False, False, True]
    assert c.rungs[0].gaps["1"] == pytest.approx(13.3)
    assert told[0] == "at the deployment's scale: job 1 -26.7 %"
    assert told[1].startswith("at K = 30: job 1 -13.4 % (13.3 points from the deployment's): not within 5")
    assert "--scale 70" in CF.describe(c, 300.0)


def test_none_agreeing_says_so_and_stops_at_the_bound(monkeypatch, tmp_path):
    spec = C.resolve(json.loads(json.dumps(RAW)))
    run_all, seen = fake_run_all({"deployment": -26.7, "K=30": -13.4, "K=50": -15.0})
    monkeypatch.setattr(CF, "run_all", run_all)
    c = CF.confirm(spec, 30.0, 60.0, VIA_TWIN, tmp_path)
    assert seen == ["deployment", "K=30", "K=50"] and c.k is None
    assert CF.describe(c, 60.0).startswith("no K up to 60 agrees")


def test_a_rung_is_the_simulation_a_batch_runs_at_that_scale(tmp_path):
    # K = 1 is the config's own scale: the rung must give the batch prediction's "config" figures
    spec = C.resolve(json.loads(json.dumps(RAW)))
    c = CF.confirm(spec, 1.0, 1.0, VIA_TWIN, tmp_path, coarse=64)
    pred = P.predict(spec, [1], VIA_TWIN, tmp_path, workers=1, coarse=64)
    assert c.deployment["1"] == pytest.approx(pred["scales"]["deployment"]["jobs"]["1"]["cct_change_pct"])
    assert c.rungs[0].changes["1"] == pytest.approx(pred["scales"]["config"]["jobs"]["1"]["cct_change_pct"])
    assert c.rungs[0].gaps["1"] == pytest.approx(abs(c.rungs[0].changes["1"] - c.deployment["1"]))


def experiments(*args):
    return subprocess.run([sys.executable, "-m", "experiments", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=60)


def test_check_refuses_a_bound_without_confirm_in_one_line(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text('[topology]\nkind = "star"\nhosts = 2\nhost_rate_mbit = 10\n'
                    '[[jobs]]\nranks = 2\nmessage_bytes = 4000\niterations = 1\n')
    r = experiments("check", str(path), "--confirm-up-to", "50")
    assert r.returncode == 2 and r.stderr.strip() == "--confirm-up-to needs --confirm"
    r = experiments("check", str(path), "--confirm", "--confirm-up-to", "0")
    assert r.returncode == 2 and r.stderr.strip() == "--confirm-up-to must be a positive K, got 0"


def test_check_confirm_says_why_it_cannot_simulate_a_tcp_job(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text('[topology]\nkind = "star"\nhosts = 2\nhost_rate_mbit = 10\n'
                    '[[jobs]]\nranks = 2\nmessage_bytes = 4000\niterations = 1\ntransport = "tcp"\n')
    r = experiments("check", str(path), "--confirm", "--out", str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert any(line.startswith("note: --confirm: no simulation:") and "TCP" in line
               for line in r.stderr.splitlines()), r.stderr


def test_a_batch_runs_at_the_first_rung_that_agrees_else_at_the_closest():
    agree = CF.Confirmation({"1": -26.7}, (CF.Rung(30.0, {"1": -13.4}, {"1": 13.3}),
                                          CF.Rung(50.0, {"1": -23.0}, {"1": 3.7}),
                                          CF.Rung(70.0, {"1": -26.0}, {"1": 0.7})))
    assert agree.chosen.k == 50.0 and agree.as_dict(70.0)["agrees"] is True
    none = CF.Confirmation({"1": -26.7, "2": 1.0}, (CF.Rung(20.0, {"1": -7.9, "2": 1.1}, {"1": 18.8, "2": 0.1}),
                                                   CF.Rung(30.0, {"1": -14.4, "2": 9.0}, {"1": 12.3, "2": 8.0}),
                                                   CF.Rung(50.0, {"1": -20.0, "2": 1.0}, {"1": 6.7, "2": 0.0})))
    assert none.k is None and none.chosen.k == 50.0            # the smallest largest gap over the jobs
    doc = none.as_dict(60.0)
    assert doc["k"] == 50.0 and doc["agrees"] is False and doc["up_to"] == 60.0 and len(doc["rungs"]) == 3
    assert "K = 50, the closest (up to 6.7 points)" in CF.describe_choice(none, 60.0)
    failed = CF.Confirmation({"1": -26.7}, (CF.Rung(20.0, {"1": None}, {"1": None}),
                                           CF.Rung(30.0, {"1": -9.0}, {"1": 17.7}, errors=("K=30 baseline: x",))))
    assert failed.chosen is None and failed.as_dict(30.0)["k"] is None


def test_run_refuses_confirm_without_scale_auto_in_one_line(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text(tomli_w.dumps(RAW))
    for extra, line in ((["--scale", "20", "--confirm"], "--confirm: only with --scale auto (it climbs from auto's K)"),
                        (["--scale", "auto", "--confirm-up-to", "50"], "--confirm-up-to needs --confirm")):
        r = experiments("run", str(path), "--target", "sim", "--out", str(tmp_path / "out"), *extra)
        assert r.returncode == 2 and r.stderr.strip() == line


def test_run_confirm_runs_the_batch_at_the_confirmed_k_and_simulates_that_k(tmp_path):
    """The whole path on the simulation target: the climb, the batch at
    the K it chose, and the batch's simulation of that K (the rung's own
    figures, from the cache) beside the deployment's, with the record."""
    path = tmp_path / "c.toml"
    path.write_text(tomli_w.dumps(RAW))
    out = tmp_path / "out"
    r = subprocess.run([sys.executable, "-m", "experiments", "run", str(path), "--target", "sim", "--scale", "auto",
                        "--confirm", "--confirm-up-to", "150", "--no-report", "--out", str(out)],
                       cwd=REPO, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    summ = json.loads((out / "tiny" / "summary.json").read_text())
    sim = json.loads(Path(summ["sim_file"]).read_text())
    rec = sim["confirmation"]
    k = rec["k"]
    assert k in (100.0, 150.0) and summ["scaling"]["time"] == k and summ["sim_k"] == k
    assert sim["scales"]["config"]["k"] == k
    rung = next(x for x in rec["rungs"] if x["k"] == k)
    assert sim["scales"]["config"]["jobs"]["1"]["cct_change_pct"] == pytest.approx(rung["changes"]["1"])
    assert sim["scales"]["deployment"]["jobs"]["1"]["cct_change_pct"] == pytest.approx(rec["deployment"]["1"])
    said = [line for line in r.stderr.splitlines() if line.startswith("note: --confirm: ")]
    assert any(f"K = {k:g}" in line and ("the first K" in line or "the closest" in line) for line in said), said
    if rec["agrees"]:
        assert any("answers for the deployment as far as the simulation can say" in x for x in summ["sim_verdict"])
