"""A runs directory that disappears, or stops being writable, fails the run
(exit 3, a reason), never an "ok" without records (issue 24, item 6): it
used to give exit 0 and "3/3 ok" whose report showed a run with no
records.  On the fake network of conftest.py (no root), but for the
read-only file system."""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess

import pytest

from contract import exits
from experiments import cli_run
from experiments import runner as RN
from tests.harness.mounts import tmpfs


@pytest.fixture
def batch(monkeypatch, fake_net):
    """batch(out, spec, net_class) -> exit code of cli_run.run_points with
    that fake network class."""
    monkeypatch.setattr(RN.Runner, "_netem", lambda self: False)

    def run(out, spec, net_class):
        monkeypatch.setattr(RN.Runner, "_network", lambda self, plan, run_dir: net_class(
            plan=plan, run_dir=run_dir, target=self.target))
        args = argparse.Namespace(out=out, fail_fast=False, no_report=True, target="soft")
        return cli_run.run_points(args, [(None, spec)])
    return run


def statuses(exp):
    summary = json.loads((exp / "summary.json").read_text())
    return [(r["run"].rsplit("-", 1)[1], r["status"]) for r in summary["runs"]]


def test_a_run_directory_removed_during_the_run_fails_it(tmp_path, batch, fake_net, fake_spec, capsys):
    """Removed while the agents run; the switches' dump (mkdir with its
    parents) made it anew, empty, and meta.json went in: it used to say ok."""
    class RemovedMidRun(fake_net):
        def dump_switches(self, out_dir):
            shutil.rmtree(self.run_dir)
            super().dump_switches(out_dir)

    code = batch(tmp_path / "out", fake_spec(variants=["baseline"]), RemovedMidRun)
    assert code == exits.FAILED
    exp = tmp_path / "out" / "fake"
    (run,) = exp.glob("*-rep1")
    meta = json.loads((run / "meta.json").read_text())
    assert meta["status"] == "failed"
    assert meta["reason"] == (f"its run directory {run} was removed and made anew (by a later write) during or "
                              "after the run: its records are lost")
    assert statuses(exp) == [("rep1", "failed")]
    assert "experiments run: a run failed" in capsys.readouterr().err


def test_a_run_directory_removed_after_its_run_fails_it_in_the_summary(tmp_path, batch, fake_net, fake_spec,
                                                                         capsys):
    """Run 1 ended ok; its directory was removed while run 2 ran: the
    summary counts it failed, not ok without records."""
    class RemovesTheFirst(fake_net):
        def __enter__(self):
            if self.run_dir.name.endswith("-rep2"):
                for old in self.run_dir.parent.glob("*-rep1"):
                    shutil.rmtree(old)
            return super().__enter__()

    code = batch(tmp_path / "out", fake_spec(repeats=2, variants=["baseline"]), RemovesTheFirst)
    assert code == exits.FAILED
    exp = tmp_path / "out" / "fake"
    summary = json.loads((exp / "summary.json").read_text())
    (first, second) = summary["runs"]
    assert first["status"] != "ok" and second["status"] == "ok"       # analysis finds no meta.json: "unknown"
    assert summary["variants"]["baseline"]["runs_ok"] == 1
    run1 = exp / first["run"]
    assert f"{run1.name}: failed (its run directory {run1} was removed during or after the run: its records are " \
           "lost)" in capsys.readouterr().err


@pytest.mark.root
def test_a_runs_directory_that_turns_read_only_fails_the_run_not_as_a_full_disk(tmp_path, batch, fake_net,
                                                                                  fake_spec, capsys):
    class TurnsReadOnly(fake_net):
        def dump_switches(self, out_dir):
            subprocess.run(["mount", "-o", "remount,ro", str(tmp_path / "out")], check=True)
            super().dump_switches(out_dir)

    with tmpfs(tmp_path / "out") as out:
        code = batch(out, fake_spec(variants=["baseline"]), TurnsReadOnly)
        (run,) = (out / "fake").glob("*-rep1")
        meta = json.loads((run / "meta.json").read_text())
    assert code == exits.FAILED
    assert meta["status"] == "running"          # the file system took no write after it turned read-only
    err = capsys.readouterr().err
    assert f"{run}: failed (a record could not be written: {run}/meta.json: not written (Read-only file system))" \
        in err
    assert "disk full" not in err
