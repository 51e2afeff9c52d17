"""Interrupts reach every worker (issue 52): the commands whose simulated
runs go to worker processes (experiments.workers), interrupted while the
workers run: a batch in its prediction, a sweep in a point's, `model`,
`check --confirm` and `run --confirm`; and a batch's runs on the
simulation target in the middle of their loop, in-process (--jobs 1) and on
workers (the default).  Each time: exit 130, a last line
naming the signal, no traceback, no worker left (by pid; a marker in the
environment finds orphans too), what the batch had done kept and marked.
No root: the simulation needs neither root nor a network."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from contract import exits
from experiments.sim.predict import SIM_CACHE
from tests.harness import REPO
from tests.harness.configs import TINY
from tests.harness.procs import carrying, gone_after, kill_all, wait_for
from topologies.network.shield import SIGNAL_AT_ENV

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="one core: the simulation runs without workers")]

MARK = "SYMPHONY_TEST_WORKERS"      # in the command's environment, so in its workers'
STOP_S = 2.0        # issue 52: every worker stopped within this of the signal
BOUND_S = 10.0      # a command's exit after it, on a loaded machine
START_S = 90.0      # a command's workers started, or its run under way (imports, the oracle)
RUN_S = 120         # a whole short batch

# TINY's prediction: two simulated runs (the config's rates, the deployment's scale), each on a worker
SWEEP = TINY + '[sweep]\n"symphony.threshold" = [0, 2]\n'
# minutes per simulated run, of either variant: what an interrupt cuts short
LONG = TINY.replace('"tiny"', '"long"').replace('["baseline"]', '["baseline", "symphony"]').replace(
    "message_bytes = 40000", "message_bytes = 400000").replace("iterations = 1", "iterations = 2000")


def config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "c.toml"
    path.write_text(text)
    return path


def env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {**os.environ, MARK: str(tmp_path), **extra}


def left_behind(tmp_path: Path) -> list[int]:
    """The command's processes still alive after up to STOP_S (its workers,
    orphaned or not)."""
    deadline = time.monotonic() + STOP_S
    while (left := carrying(MARK, str(tmp_path))) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


def assert_interrupted(r: subprocess.CompletedProcess | subprocess.Popen, err: str, last: str) -> None:
    assert r.returncode == exits.INTERRUPTED, err[-3000:]
    assert "Traceback" not in err, err[-3000:]
    assert err.strip().splitlines()[-1].startswith(last), err[-2000:]


def runs(exp: Path) -> list[dict]:
    return [json.loads((p / "meta.json").read_text()) for p in sorted(exp.rglob("*-rep*")) if p.is_dir()]


def statuses(exp: Path, suffix: str) -> list[str]:
    return [json.loads(p.read_text())["status"] for p in sorted(exp.glob(f"*{suffix}"))]


@pytest.mark.parametrize("sig, sweep", [("SIGINT", False), ("SIGTERM", False), ("SIGTERM", True)],
                         ids=["SIGINT", "SIGTERM", "sweep-SIGTERM"])
def test_a_batch_interrupted_in_its_prediction_stops_its_workers(tmp_path, sig, sweep):
    """The signal comes as the prediction's workers have started (the
    runner signals itself there): no simulated run finishes after it, so
    the cache holds no figure, and a sweep runs no further point.  At
    --scale 2 the runs are neither of the prediction's (an unscaled run
    would be its config column, taken as it is), so both go to workers."""
    out = tmp_path / "out"
    r = subprocess.run([sys.executable, "-m", "experiments", "run", str(config(tmp_path, SWEEP if sweep else TINY)),
                        "--target", "sim", "--scale", "2", "--out", str(out), *(["--sweep"] if sweep else [])],
                       cwd=REPO,
                       capture_output=True, text=True, timeout=RUN_S,
                       env=env(tmp_path, **{SIGNAL_AT_ENV: f"prediction:{sig}"}))
    assert_interrupted(r, r.stderr, f"experiments run: interrupted ({sig})")
    assert left_behind(tmp_path) == []
    assert list((out / SIM_CACHE).iterdir()) == []      # no figure, and no killed run's records
    exp = out / "tiny"
    # the runs had ended (a sweep's, every point's, went to the workers at once); the prediction was cut short
    assert [m["status"] for m in runs(exp)] == ["ok"] * (2 if sweep else 1)
    if sweep:
        assert statuses(exp, "-sweep.json") == ["interrupted"]
        assert len(list(exp.glob("*/*-summary.json"))) == 1     # the second point was never finished
    else:
        assert statuses(exp, "-summary.json") == ["interrupted"]


@pytest.mark.parametrize("sig, command", [
    ("SIGINT", ["model"]),
    ("SIGTERM", ["model"]),
    ("SIGTERM", ["check", "--confirm"]),
    ("SIGINT", ["run", "--target", "sim", "--scale", "auto", "--confirm"]),
], ids=["model-SIGINT", "model-SIGTERM", "check-confirm-SIGTERM", "run-confirm-SIGINT"])
def test_a_command_with_its_workers_running_stops_them(tmp_path, sig, command):
    cmd, *opts = command
    proc = subprocess.Popen([sys.executable, "-m", "experiments", cmd, str(config(tmp_path, LONG)), *opts, "--out",
                             str(tmp_path / "out")], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env(tmp_path))
    kids = []
    try:
        kids = wait_for(2, proc.pid, START_S)
        assert len(kids) == 2, f"{cmd} started no workers in {START_S:.0f} s"
        proc.send_signal(signal.Signals[sig])
        left, took = gone_after(kids, BOUND_S)
        _, err = proc.communicate(timeout=BOUND_S)
    finally:
        kill_all(kids)
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert left == [] and took < STOP_S, f"workers {left} still running {took:.1f} s after {sig}"
    assert_interrupted(proc, err, f"experiments {cmd}: interrupted ({sig})")
    assert left_behind(tmp_path) == []


def first_iteration_done(exp: Path) -> bool:
    return any('"iter_end"' in p.read_text() for p in exp.glob("*-rep*/agents/rank*.jsonl"))


@pytest.mark.parametrize("sig, jobs", [("SIGINT", ["--jobs", "1"]), ("SIGTERM", [])], ids=["in-process", "workers"])
def test_a_run_on_the_simulation_interrupted_in_its_loop_keeps_its_records(tmp_path, sig, jobs):
    """With --jobs 1 the simulation runs in the runner's own process: the
    signal stops its loop, the run is marked interrupted with what it had
    recorded, the second variant never starts.  By default both variants
    run at once on workers (experiments.parallel): the signal stops each
    as it would stop the runner's own, each marked so with its records
    (the reason naming the signal the runner had, not the SIGINT it
    forwarded), and no worker is left."""
    exp = tmp_path / "out" / "long"
    proc = subprocess.Popen([sys.executable, "-m", "experiments", "run", str(config(tmp_path, LONG)), "--target",
                             "sim", "--no-sim", "--out", str(tmp_path / "out"), *jobs], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env(tmp_path))
    try:
        deadline = time.monotonic() + START_S
        while not first_iteration_done(exp) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert proc.poll() is None and first_iteration_done(exp), "the run never got through an iteration"
        proc.send_signal(signal.Signals[sig])
        _, err = proc.communicate(timeout=BOUND_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert_interrupted(proc, err, f"experiments run: interrupted ({sig})")
    assert left_behind(tmp_path) == []
    metas = runs(exp)
    assert len(metas) == (1 if jobs else 2)          # in-process, the second variant never started
    for meta, run_dir in zip(metas, sorted(exp.glob("*-rep*")), strict=True):
        assert meta["status"] == "interrupted" and meta["reason"] == f"interrupted by {sig}", meta
        assert list((run_dir / "switches").glob("*.json"))
        assert meta["sim"]["events"] > 0            # the simulation's own figures, as far as it got
    assert first_iteration_done(exp)
    assert statuses(exp, "-summary.json") == ["interrupted"]
