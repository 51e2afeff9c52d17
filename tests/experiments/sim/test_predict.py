"""The simulation's figures for a batch (experiments/sim/predict.py): per
job at the config's scale and the deployment's, on the runs' schedules,
cached by what decides them; a summary's times in the config's units."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import tomli_w

from experiments import config as C
from experiments.config.scale import deployment_scaling, scale
from experiments.runner import Runner
from experiments.sim import predict as P
from experiments.summary import load_analysed, simulated_runs
from tests.harness import REPO
from topologies.network.links import VIA_TWIN

# small enough that the deployment's 125 MB steps stay a few seconds of work
RAW = {"name": "tiny", "seed": 2, "repeats": 1,
       "topology": {"kind": "star", "hosts": 2, "host_rate_mbit": 20},
       "jobs": [{"ranks": 2, "message_bytes": 40000, "iterations": 1}],
       "jitter": [{"kind": "compute", "rank": 1, "iter": 0, "delay_s": 0.01}]}


@pytest.fixture(scope="module")
def predicted(tmp_path_factory):
    cache = tmp_path_factory.mktemp("cache")
    spec = C.resolve(json.loads(json.dumps(RAW)))
    seen = []
    first = P.predict(spec, [1], VIA_TWIN, cache, workers=1, progress=lambda t, r: seen.append(r), coarse=64)
    again = []
    second = P.predict(spec, [1], VIA_TWIN, cache, workers=1, progress=lambda t, r: again.append(r), coarse=64)
    return spec, first, second, seen, again


def test_both_scales_give_every_job_both_variants(predicted):
    spec, first, _, seen, _ = predicted
    assert len(seen) == 4 and not any(r.get("cached") or "error" in r for r in seen)
    for name in P.SCALES:
        row = first["scales"][name]["jobs"]["1"]
        assert row["baseline_cct_s"] > 0 and row["symphony_cct_s"] > 0 and row["cct_change_pct"] is not None
    # config units: a 2-rank ring of 40 kB at 20 Mbit/s needs at least its bandwidth bound (16 ms) plus the straggle
    assert first["scales"]["config"]["jobs"]["1"]["baseline_cct_s"] > 0.016
    assert first["scales"]["deployment"]["jobs"]["1"]["baseline_cct_s"] > 0.016
    assert first["scales"]["deployment"]["coarse"] == 64


def test_a_second_batch_of_the_same_scenario_simulates_nothing(predicted):
    _, first, second, _, again = predicted
    assert all(r.get("cached") for r in again) and second["scales"] == first["scales"]


def test_the_cache_key_holds_what_decides_a_run(predicted):
    spec = predicted[0]
    a, b = (P.tasks(s, [1], VIA_TWIN)[0] for s in (spec, C.resolve({**json.loads(json.dumps(RAW)), "seed": 3})))
    assert a.key() != b.key()
    assert P.tasks(spec, [1], VIA_TWIN)[0].key() == a.key()
    # how many repeats a batch has decides no run: a batch of one finds a batch of four's runs
    four = C.resolve({**json.loads(json.dumps(RAW)), "repeats": 4})
    assert P.tasks(four, [1], VIA_TWIN)[0].key() == a.key()


def test_the_cache_key_holds_the_symphony_track():
    path, leaves = (P.tasks(C.resolve({**json.loads(json.dumps(RAW)), "symphony": {"track": track}}), [1],
                            VIA_TWIN)[0] for track in ("path", "leaves"))
    assert path.spec.symphony.track == "path" and leaves.spec.symphony.track == "leaves"   # kept by the scaling
    assert path.key() != leaves.key()


def test_model_prints_the_simulation_beside_the_oracle(tmp_path):
    cfg = tmp_path / "tiny.toml"
    cfg.write_text(tomli_w.dumps(RAW))
    r = subprocess.run([sys.executable, "-m", "experiments", "model", str(cfg), "--out", str(tmp_path)],
                       capture_output=True, text=True, cwd=REPO, timeout=600)
    assert r.returncode == 0, r.stderr
    head, row = r.stdout.splitlines()[1:3]
    assert head.endswith("sim change %  deployment %")
    cells = row.split()
    assert len(cells) == 10 and cells[0] == "1"                   # the oracle's six, the simulation's four
    assert float(cells[6]) > 0 and float(cells[7]) > 0
    assert r.stderr.count("simulation ") == 4 and "(cached)" not in r.stderr
    again = subprocess.run([sys.executable, "-m", "experiments", "model", str(cfg), "--out", str(tmp_path)],
                           capture_output=True, text=True, cwd=REPO, timeout=600)
    assert again.stdout.splitlines()[1:] == r.stdout.splitlines()[1:] and again.stderr.count("(cached)") == 4


@pytest.mark.parametrize("scale_name", [P.CONFIG_SCALE, P.DEPLOYMENT_SCALE])
def test_a_sim_batchs_runs_are_its_predictions_own(tmp_path, scale_name):
    """A --target sim batch's runs are the very runs its prediction would
    simulate: seeded from them, the cache holds what simulating gives."""
    spec = C.resolve(json.loads(json.dumps(RAW)))
    deployment = scale_name == P.DEPLOYMENT_SCALE
    sc = deployment_scaling(spec, 64) if deployment else None
    ran = scale(spec, sc) if deployment else spec
    runner = Runner(ran, tmp_path / "exp", target="sim", say=lambda line: None, scaling=sc)
    runner.run_all()
    todo = P.tasks(spec, [1], VIA_TWIN, coarse=64, scales=(scale_name,))
    assert len(todo) == 2 and all(r.status == "ok" for r in runner.results)
    cache = tmp_path / "cache"
    done = simulated_runs(ran, sc, runner.results, load_analysed(runner.results))
    assert set(P.seed(todo, done, cache)) == set(todo)
    for t in todo:
        seeded = P.lookup(t, cache)
        assert seeded["run"].startswith(runner.stamp) and seeded["sim"]["frames"] > 0
        assert seeded["jobs"] == P.simulate(t, tmp_path)["jobs"]
    # the other scale's tasks are not the runs: nothing seeded there
    other = P.tasks(spec, [1], VIA_TWIN, coarse=64)
    assert P.seed(other, done, tmp_path / "other") == \
        [t for t in other if t.scale == scale_name]
