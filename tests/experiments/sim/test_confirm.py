"""experiments/sim/confirm.py: `check --confirm` climbs --scale auto's
ladder until the simulation at K agrees with the deployment's, and its
rungs are the same simulation a batch's prediction runs."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

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
