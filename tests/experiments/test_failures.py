"""Failure paths of a batch as `experiments run` drives it (issue 18, items
3-5 and 8), against the fake network of conftest.py (no root): a Ctrl-C
while the batch closes, two batches in one second, an agent that finds the
disk full, a jitter entry after the run's end, a hung switch.  Each ends in
one line and its exit code, with the summary written and nothing half made."""

import argparse
import json
import os
import re
import shlex
import signal
import subprocess
import sys

import pytest

from analysis import report as AR
from contract import exits
from experiments import cli_run
from experiments import config as C
from experiments import rundir as R
from experiments import runner as RN
from experiments import summary as SU


@pytest.fixture
def batch(tmp_path, monkeypatch, fake_net):
    """batch(spec, mode="ok", stamp=None, **net_kw) -> exit code of
    cli_run.run_points on the fake network, with the report on."""
    monkeypatch.setattr(RN.Runner, "_netem", lambda self: False)

    def run(spec, mode="ok", stamp=None, **net_kw):
        monkeypatch.setattr(RN.Runner, "_network", lambda self, plan, run_dir: fake_net(
            plan=plan, run_dir=run_dir, target=self.target, mode=mode, **net_kw))
        args = argparse.Namespace(out=tmp_path / OUT, fail_fast=False, no_report=False, target="soft")
        return cli_run.run_points(args, [(None, spec)], stamp)
    return run


OUT = "out dir"         # a space in --out: the printed commands must quote it


def interrupt_here(*_, **__):
    """What a Ctrl-C at this point does: the runner's SIGINT handler raises
    KeyboardInterrupt in the main thread."""
    os.kill(os.getpid(), signal.SIGINT)
    raise AssertionError("SIGINT did not interrupt")


def summaries(exp):
    return {p.name: json.loads(p.read_text()) for p in exp.glob("*summary.json")}


def leftovers(root):
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.name.endswith(".tmp") or ".partial" in p.name)


# --- item 4: Ctrl-C while the batch closes ---------------------------------------

def test_ctrl_c_during_the_analysis_still_writes_the_summary(tmp_path, batch, fake_spec, monkeypatch, capsys):
    monkeypatch.setattr(SU, "load_analysed", interrupt_here)
    code = batch(fake_spec(variants=["baseline"]))
    assert code == exits.INTERRUPTED
    exp = tmp_path / OUT / "fake"
    (stamped,) = [s for n, s in summaries(exp).items() if n != "summary.json"]
    assert summaries(exp)["summary.json"] == stamped
    assert stamped["status"] == "interrupted" and [r["status"] for r in stamped["runs"]] == ["ok"]
    assert not list(exp.glob("*-report")) and leftovers(tmp_path) == []
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    hint = next(line for line in out.splitlines() if line.startswith("interrupted: no report"))
    command = hint.split("make it with: ", 1)[1]
    assert command.startswith(f"{shlex.quote(sys.executable)} -m analysis report --out ")
    # as printed, by a shell, from elsewhere: the project's interpreter, the paths quoted
    r = subprocess.run(["bash", "-c", command], cwd="/", capture_output=True, text=True, timeout=120)
    assert r.returncode == exits.OK, r.stdout + r.stderr
    assert (exp / f"{stamped['stamp']}-report" / "report.md").is_file()


def test_ctrl_c_during_the_report_leaves_no_half_report(tmp_path, batch, fake_spec, monkeypatch, capsys):
    monkeypatch.setattr(AR, "make_plots", interrupt_here)
    code = batch(fake_spec(variants=["baseline"]))
    assert code == exits.INTERRUPTED
    exp = tmp_path / OUT / "fake"
    s = summaries(exp)["summary.json"]
    assert s["status"] == "complete" and s["variants"]["baseline"]["runs_ok"] == 1     # analysed before the Ctrl-C
    assert not list(exp.glob("*report*")) and leftovers(tmp_path) == []
    out, err = capsys.readouterr()
    assert f"interrupted: no report; make it with: {shlex.quote(sys.executable)} -m analysis report" in out
    assert "Traceback" not in out + err


# --- item 5: two batches in one second ------------------------------------------

def test_two_batches_of_one_second_keep_their_own_files(tmp_path, batch, fake_spec, monkeypatch):
    monkeypatch.setattr(R, "stamp", lambda now=None: "20990101T000000Z")
    assert batch(fake_spec(variants=["baseline"])) == exits.OK
    assert batch(fake_spec(variants=["baseline"])) == exits.OK
    exp = tmp_path / OUT / "fake"
    names = sorted(p.name for p in exp.iterdir())
    batch_files = ["baseline-rep1", "oracle.json", "regime.json", "report", "summary.json"]
    assert names == [f"{s}-{f}" for s in ("20990101T000000Z", "20990101T000000Z.2") for f in batch_files] \
        + ["summary.json"]
    first, second = (json.loads((exp / f"{s}-summary.json").read_text()) for s in ("20990101T000000Z",
                                                                                      "20990101T000000Z.2"))
    assert [r["run"] for r in first["runs"]] == ["20990101T000000Z-baseline-rep1"]
    assert [r["run"] for r in second["runs"]] == ["20990101T000000Z.2-baseline-rep1"]
    report = json.loads((exp / "20990101T000000Z-report" / "report.json").read_text())
    assert report["runs"] == [str(exp / "20990101T000000Z-baseline-rep1")]


def test_a_stamp_is_claimed_exclusively(tmp_path):
    stamps = [R.claim_stamp(tmp_path, "-summary.json", {"status": "running"}) for _ in range(3)]
    assert len(set(stamps)) == 3 and stamps[1] == f"{stamps[0]}.2"
    for s in stamps:
        assert json.loads((tmp_path / f"{s}-summary.json").read_text()) == {"status": "running", "stamp": s}


# --- item 3: an agent that finds the disk full ------------------------------------

def test_an_agent_on_a_full_disk_fails_the_run_as_disk_full(tmp_path, batch, fake_spec, capsys):
    code = batch(fake_spec(repeats=2, variants=["baseline"]), mode="full")
    assert code == exits.DISK_FULL
    exp = tmp_path / OUT / "fake"
    (run,) = [p for p in exp.iterdir() if p.name.endswith("-rep1")]    # the batch stopped: rep 2 never ran
    meta = json.loads((run / "meta.json").read_text())
    assert meta["status"] == "failed" and meta["wrong_result"] is False
    assert "exited with code 4" in meta["reason"] and "(disk full: it could not write its records)" in meta["reason"]
    assert not (exp.parent / "fake" / f"{run.name.split('-baseline')[0]}-report").exists()
    out, err = capsys.readouterr()
    assert "disk full: stopping after" in err
    assert "experiments run: disk full: records could not be written" in err.splitlines()[-1]
    assert "disk full: no report; free some space, then make it with:" in out


def test_meta_json_keeps_its_status_where_only_its_own_room_is_left(tmp_path, monkeypatch):
    """The full file cannot be written (no room for a new one); the status
    goes into the room the old file holds, and no .tmp stays."""
    path = tmp_path / "meta.json"
    R.write_json(path, {"status": "running", "versions": {"x": "y" * 400}})

    def full(self, *a, **kw):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(type(path), "write_text", full)
    problem = R.write_status(path, {"status": "ok", "big": "z" * 5000}, {"status": "failed", "reason": "disk full"})
    assert problem == f"{path}: not written (No space left on device); rewritten in place with reason, status only"
    assert json.loads(path.read_text()) == {"status": "failed", "reason": "disk full"}
    assert list(tmp_path.iterdir()) == [path]


# --- item 8: a jitter entry after the run's end; a hung switch ---------------------------

def test_a_jitter_entry_after_the_run_is_reported_never_applied(tmp_path, batch, fake_spec, capsys):
    raw = fake_spec(variants=["baseline"]).as_dict()
    raw["jitter"].append({"kind": "rate", "rank": 0, "start_s": 500.0, "duration_s": 1.0, "fraction": 0.5})
    assert batch(C.resolve(raw)) == exits.OK
    exp = tmp_path / OUT / "fake"
    (run,) = [p for p in exp.iterdir() if p.name.endswith("-rep1")]
    meta = json.loads((run / "meta.json").read_text())
    assert meta["status"] == "ok" and meta["jitter_not_applied"] == ["rate on h1-l1 at 500 s"]
    assert summaries(exp)["summary.json"]["runs"][0]["jitter_not_applied"] == 1
    out, err = capsys.readouterr()
    assert "ended before these entries started, never applied: rate on h1-l1 at 500 s" in err
    assert "note: 1 jitter entry started after the run had ended and were never applied" in out


def test_a_hung_switch_is_the_reason_not_the_jitter_action_it_stalls(tmp_path, batch, fake_spec):
    """The fake spine stops answering 0.05 s after the agents are up, before
    the squeeze ends: the run fails naming the switch, not the action."""
    assert batch(fake_spec(variants=["baseline"]), mode="hang", hang_after=0.05) == exits.FAILED
    (run,) = [p for p in (tmp_path / OUT / "fake").iterdir() if p.name.endswith("-rep1")]
    meta = json.loads((run / "meta.json").read_text())
    assert re.fullmatch(r"switch p1 hung at t=\d+\.\ds: stopped \(process 4242 in state T: SIGSTOP or a debugger\)",
                        meta["reason"]), meta["reason"]
    assert meta["problems"] == ["switch dump skipped: p1 hung"]
