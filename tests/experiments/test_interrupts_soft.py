"""Interrupted at any moment, nothing left behind (issue 24): a real run on
the soft target (root, Mininet, the twin, the agents) stopped by SIGINT or
SIGTERM at each phase of `experiments run` (topologies.network.shield:
SYMPHONY_SIGNAL_AT signals the runner as it enters the phase, so the moment
is the same every time), a second signal while the first is handled, and
`experiments net` during its build and its teardown.  Each time: exit 130
(net: 0 once up), one line naming the signal, no traceback, the run marked
interrupted, the batch's summary not "running", and nothing of any of its
labs left: namespaces, interfaces, state files, socket directories,
processes; signalled in its prediction, none of the simulation's workers
left and none of their runs finished."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from contract import exits
from experiments.sim.predict import SIM_CACHE
from tests.harness import REPO
from tests.harness.configs import TINY
from tests.harness.leftovers import LabWatcher
from tests.harness.procs import carrying
from topologies.network.shield import PHASES, SIGNAL_AT_ENV

pytestmark = [pytest.mark.root, pytest.mark.slow]

RUN_S = 90      # a whole run takes 4-6 s here


def run(tmp_path: Path, signal_at: str, *extra: str) -> tuple[subprocess.CompletedProcess, LabWatcher, Path]:
    """The batch, without its prediction unless signalled there."""
    cfg = tmp_path / "tiny.toml"
    cfg.write_text(TINY)
    out = tmp_path / "out"
    sim = [] if "prediction:" in signal_at else ["--no-sim"]
    with LabWatcher(tmp_path / "state") as labs:
        r = subprocess.run([sys.executable, "-m", "experiments", "run", str(cfg), *sim, "--target", "soft",
                            "--out", str(out), *extra], cwd=REPO, capture_output=True, text=True, timeout=RUN_S,
                           env=labs.env(**{SIGNAL_AT_ENV: signal_at}))
    return r, labs, out / "tiny"


def runs(exp: Path) -> list[dict]:
    return [json.loads((p / "meta.json").read_text()) for p in sorted(exp.glob("*-rep*"))]


def summary_status(exp: Path) -> list[str]:
    return [json.loads(p.read_text())["status"] for p in sorted(exp.glob("*-summary.json"))]


def assert_nothing_left(r: subprocess.CompletedProcess, labs: LabWatcher) -> None:
    assert "Traceback" not in r.stderr, r.stderr[-3000:]
    assert "make clean-net" not in r.stderr, r.stderr[-3000:]     # the runner had nothing to own up to
    assert labs.left() == []


# (phase, signal): every phase of a run after the imports (below), SIGINT and SIGTERM in turn
ONE_SIGNAL = [("startup", "SIGTERM"), ("network", "SIGINT"), ("network", "SIGTERM"), ("agents", "SIGINT"),
              ("running", "SIGTERM"), ("records", "SIGINT"), ("records", "SIGTERM"), ("teardown", "SIGINT"),
              ("teardown", "SIGTERM"), ("analysis", "SIGTERM"), ("prediction", "SIGINT")]


assert {p for p, _ in ONE_SIGNAL} == set(PHASES) - {"imports"}


@pytest.mark.parametrize("phase, sig", ONE_SIGNAL)
def test_a_signal_at_any_phase_leaves_nothing(tmp_path, phase, sig):
    r, labs, exp = run(tmp_path, f"{phase}:{sig}")
    assert r.returncode == exits.INTERRUPTED, r.stdout[-2000:] + r.stderr[-3000:]
    assert r.stderr.strip().splitlines()[-1].startswith(f"experiments run: interrupted ({sig})"), r.stderr[-2000:]
    assert_nothing_left(r, labs)
    if phase != "startup":
        assert labs.ids, "the run built no network"
        (meta,) = runs(exp)
        if phase in ("analysis", "prediction"):     # the run had ended ok; the analysis was cut short, not the run
            assert meta["status"] == "ok"
        else:
            assert meta["status"] == "interrupted" and meta["reason"] == f"interrupted by {sig}", meta["reason"]
    assert summary_status(exp) == ["interrupted"]
    if phase == "prediction":       # its workers killed at once: none finished a simulated run, none is left
        assert list((exp.parent / SIM_CACHE).iterdir()) == []
        assert carrying("SYMPHONY_STATE_DIR", str(labs.state_dir)) == []


@pytest.mark.parametrize("signal_at", ["agents:SIGINT,teardown:SIGTERM", "records:SIGTERM,teardown:SIGINT"])
def test_a_second_signal_during_the_teardown_leaves_nothing(tmp_path, signal_at):
    r, labs, exp = run(tmp_path, signal_at)
    first, second = (x.split(":")[1] for x in signal_at.split(","))
    assert r.returncode == exits.INTERRUPTED, r.stderr[-3000:]
    assert f"second interrupt ({second})" in r.stderr
    assert r.stderr.strip().splitlines()[-1].startswith(f"experiments run: interrupted ({first}, {second})")
    assert_nothing_left(r, labs)
    (meta,) = runs(exp)
    assert meta["status"] == "interrupted"


def test_a_signal_while_the_command_is_imported_is_one_line(tmp_path):
    """Before the runner's own handling (Mininet, matplotlib and the
    runner still being imported): one line naming the signal, exit 130."""
    for sig in ("SIGINT", "SIGTERM"):
        r, labs, exp = run(tmp_path, f"imports:{sig}")
        assert r.returncode == exits.INTERRUPTED
        assert r.stderr.strip().splitlines() == [f"experiments: interrupted ({sig}) before it had started anything"]
        assert labs.ids == set() and not exp.exists()


NET_CONFIG = TINY.replace('kind = "star"', 'kind = "dumbbell"')


def test_net_interrupted_while_it_builds_leaves_nothing(tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text(NET_CONFIG)
    with LabWatcher(tmp_path / "state") as labs:
        r = subprocess.run([sys.executable, "-m", "experiments", "net", str(cfg), "--target", "soft", "--run-dir",
                            str(tmp_path / "run")], cwd=REPO, capture_output=True, text=True, timeout=RUN_S,
                           env=labs.env(**{SIGNAL_AT_ENV: "network:SIGTERM"}))
    assert r.returncode == exits.INTERRUPTED, r.stderr[-2000:]
    assert r.stderr.strip().splitlines()[-1] == ("experiments net: interrupted (SIGTERM) while the network was "
                                                 "being built; torn down")
    assert labs.ids and labs.left() == []


def test_net_ended_by_sigterm_with_a_second_signal_in_its_teardown_leaves_nothing(tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text(NET_CONFIG)
    with LabWatcher(tmp_path / "state") as labs:
        proc = subprocess.Popen([sys.executable, "-m", "experiments", "net", str(cfg), "--target", "soft",
                                 "--run-dir", str(tmp_path / "run")], cwd=REPO, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=labs.env(**{SIGNAL_AT_ENV: "teardown:SIGINT"}))
        try:
            for line in proc.stdout:
                if line.startswith("network up"):
                    break
            proc.send_signal(signal.SIGTERM)
            _, err = proc.communicate(timeout=RUN_S)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    assert proc.returncode == exits.OK, err[-2000:]
    assert "Traceback" not in err and not re.search(r"clean-net", err), err
    assert labs.ids and labs.left() == []
    assert not os.listdir(labs.state_dir)
