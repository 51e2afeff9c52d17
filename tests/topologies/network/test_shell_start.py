"""A node whose shell dies as it starts, or never answers, fails the
network's start within a bounded time, naming the node and why, and leaves
nothing (issue 24): on a Debian 12 root whose / was no mount point `mnexec
-n` failed with "remount: Invalid argument" and Mininet waited on the dead
shell forever (topologies.network.nodes.BoundedShell).  A fake `mnexec`
first on PATH plays that machine; a run there fails (exit 3) saying so."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time

import pytest

from contract import exits
from tests.harness import REPO
from tests.harness.leftovers import LabWatcher
from tests.harness.specs import make_net
from topologies.network import nodes
from topologies.network.state import alive, leftovers
from topologies.network.testbed import NetworkError

pytestmark = [pytest.mark.root]

DIES = "#!/bin/sh\necho 'remount: Invalid argument' >&2\nexit 1\n"
SILENT = "#!/bin/sh\nexec sleep 1000\n"
WHY = "h1: its shell (mnexec) exited with code 1 as it started, saying: remount: Invalid argument"


def fake_mnexec(tmp_path, script: str) -> str:
    """A PATH whose mnexec is this script."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "mnexec").write_text(script)
    (bindir / "mnexec").chmod(0o755)
    return f"{bindir}:{os.environ['PATH']}"


def test_a_host_whose_shell_dies_as_it_starts_fails_the_start_naming_why(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", fake_mnexec(tmp_path, DIES))
    net = make_net("star", 2, jobs=(2,), run_dir=tmp_path / "run")
    t0 = time.monotonic()
    with pytest.raises(NetworkError) as err:
        net.start()
    assert str(err.value) == WHY
    assert time.monotonic() - t0 < nodes.SHELL_START_S
    assert leftovers(net.id) == []


def test_a_host_whose_shell_never_answers_fails_the_start_in_bounded_time(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", fake_mnexec(tmp_path, SILENT))
    monkeypatch.setattr(nodes, "SHELL_START_S", 1.0)
    net = make_net("star", 2, jobs=(2,), run_dir=tmp_path / "run")
    t0 = time.monotonic()
    with pytest.raises(NetworkError) as err:
        net.start()
    assert time.monotonic() - t0 < 5
    shell = re.fullmatch(r"h1: its shell \(pid (\d+)\) printed nothing for 1 s", str(err.value))
    assert shell, err.value
    assert not alive(int(shell[1]), None)       # the silent shell is ended, not left waiting
    assert leftovers(net.id) == []


def test_a_run_where_host_shells_die_fails_with_the_reason(tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text('variants = ["baseline"]\n[topology]\nkind = "star"\nhosts = 2\nhost_rate_mbit = 10\n'
                   '[[jobs]]\nranks = 2\nmessage_bytes = 4000\niterations = 1\n')
    with LabWatcher(tmp_path / "state") as labs:
        t0 = time.monotonic()
        r = subprocess.run([sys.executable, "-m", "experiments", "run", str(cfg), "--no-sim", "--target", "soft",
                            "--out", str(tmp_path / "out"), "--no-report"], cwd=REPO, capture_output=True, text=True,
                           timeout=120, env=labs.env(PATH=fake_mnexec(tmp_path, DIES)))
    assert r.returncode == exits.FAILED, r.stderr[-2000:]
    assert time.monotonic() - t0 < 60
    (meta,) = [json.loads(p.read_text()) for p in (tmp_path / "out" / "c").glob("*-rep1/meta.json")]
    assert meta["status"] == "failed" and meta["reason"] == f"NetworkError: {WHY}"
    assert labs.left() == []
