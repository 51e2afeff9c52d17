"""What `analysis report` says where a user needs to know (issue 18, item
8): a directory that is no run refused in one line, a rank that logged
nothing and a run without meta.json not counted as ok, runs of different
trees not reported into their common ancestor, and a report either whole
or absent (an interrupt leaves nothing half made)."""

import json
import subprocess
import sys

import pytest

from analysis import report as AR
from analysis.records import RecordWarning, load_run
from analysis.report import write_report
from analysis.synthetic import ring_times, write_run
from contract import exits
from tests.harness import REPO


def analysis(*args):
    return subprocess.run([sys.executable, "-m", "analysis", *map(str, args)], cwd=REPO, capture_output=True,
                          text=True, timeout=120)


@pytest.mark.parametrize("content", ["empty", "garbage", "experiment"])
def test_a_directory_that_is_no_run_is_refused_in_one_line(tmp_path, content):
    d = tmp_path / "d"
    d.mkdir()
    hint = ""
    if content == "garbage":
        (d / "notes.txt").write_bytes(b"\x00\xff garbage")
        (d / "sub").mkdir()
    elif content == "experiment":
        write_run(d / "x-baseline-rep1", ring_times(2, 1, 0.01))
        hint = "; it holds run directories (x-baseline-rep1): give those"
    r = analysis("report", d)
    assert r.returncode == exits.USAGE
    assert r.stderr.splitlines() == [f"analysis: {d}: not a run directory (no meta.json, config.toml or agents/)"
                                     + hint]
    assert r.stdout == "" and sorted(p.name for p in tmp_path.iterdir()) == ["d"]


def test_a_rank_that_logged_nothing_makes_the_run_incomplete(tmp_path):
    d = write_run(tmp_path / "exp" / "x-baseline-rep1", ring_times(3, 1, 0.01))
    (d / "agents" / "rank1.jsonl").write_bytes(b"")
    with pytest.warns(RecordWarning, match=r"rank1\.jsonl: empty \(the rank logged nothing\)"):
        run = load_run(d)
    assert run.status == "incomplete" and run.reason == "job 1 rank 1 logged no events"
    r = analysis("report", d)
    assert r.returncode == exits.OK and "rank1.jsonl: empty (the rank logged nothing)" in r.stderr
    metrics = json.loads((d / "metrics.json").read_text())
    assert metrics["status"] == "incomplete"
    report = json.loads((d / "report.json").read_text())
    assert report["variants"]["baseline"]["runs_ok"] == 0 and report["variants"]["baseline"]["cct_mean_s"] is None
    assert "| baseline | 0 / 1 |" in (d / "report.md").read_text()


def test_a_run_without_meta_json_does_not_count_as_ok(tmp_path):
    d = write_run(tmp_path / "exp" / "x-baseline-rep1", ring_times(2, 1, 0.01))
    (d / "meta.json").unlink()
    r = analysis("report", d)
    assert r.returncode == exits.OK and "meta.json: missing" in r.stderr
    metrics = json.loads((d / "metrics.json").read_text())
    assert metrics["status"] == "unknown" and metrics["reason"].startswith("no readable meta.json")
    assert "| unknown | 0 / 1 |" in (d / "report.md").read_text()


def test_runs_in_different_trees_need_out(tmp_path):
    a = write_run(tmp_path / "one" / "x-baseline-rep1", ring_times(2, 1, 0.01))
    b = write_run(tmp_path / "two" / "x-symphony-rep1", ring_times(2, 1, 0.01), variant="symphony")
    r = analysis("report", a, b)
    assert r.returncode == exits.USAGE
    assert r.stderr.splitlines() == [f"analysis: the runs lie in 2 different directories ({tmp_path / 'one'}, "
                                     f"{tmp_path / 'two'}): say where the report goes with --out DIR"]
    assert not (tmp_path / "report.md").exists() and not (a / "metrics.json").exists()
    r = analysis("report", a, b, "--out", tmp_path / "both")
    assert r.returncode == exits.OK and (tmp_path / "both" / "report.md").exists()


def test_an_interrupted_report_leaves_nothing(tmp_path, monkeypatch):
    d = write_run(tmp_path / "exp" / "x-baseline-rep1", ring_times(2, 1, 0.01))

    def interrupted(*a, **kw):
        raise KeyboardInterrupt
    monkeypatch.setattr(AR, "make_plots", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_report([d], tmp_path / "exp" / "s-report")
    assert sorted(p.name for p in (tmp_path / "exp").iterdir()) == ["x-baseline-rep1"]
    # into the run directory itself: what was there stays, nothing half made is added
    before = sorted(p.name for p in d.iterdir())
    with pytest.raises(KeyboardInterrupt):
        write_report([d])
    assert sorted(p.name for p in d.iterdir()) == before
    assert sorted(p.name for p in (tmp_path / "exp").iterdir()) == ["x-baseline-rep1"]


def test_a_report_into_an_existing_folder_replaces_the_old_one(tmp_path):
    d = write_run(tmp_path / "exp" / "x-baseline-rep1", ring_times(2, 1, 0.01))
    out = tmp_path / "exp" / "s-report"
    (out / "plots").mkdir(parents=True)
    (out / "plots" / "stale.png").write_bytes(b"")
    (out / "keep.txt").write_text("mine")
    assert write_report([d], out) == out / "report.md"
    assert (out / "keep.txt").read_text() == "mine" and not (out / "plots" / "stale.png").exists()
    assert (out / "plots" / "timeline_rep0.png").exists() and (out / "report.json").exists()
