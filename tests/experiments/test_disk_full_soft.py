"""The disk under --out fills up while a run's agents are writing (issue 18,
item 3), end to end on the soft target: a 4 MB tmpfs, filled once the
agents are up.  The batch ends with one line and exit 4 (disk full), no
traceback, the run's meta.json says failed (not running), no .tmp file
stays, the summary's record says why it is incomplete, the network is gone."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from contract import exits
from tests.experiments.test_runner_soft import _left_behind, _missing, _runs
from tests.harness import REPO
from tests.harness.mounts import fill, tmpfs

pytestmark = [pytest.mark.slow, pytest.mark.skipif(bool(_missing()), reason=_missing() or "ok")]

CONFIG = """name = "full"
[topology]
kind = "star"
hosts = 2
host_rate_mbit = 10
[[jobs]]
ranks = 2
message_bytes = 400000
iterations = 3
[runner]
run_deadline_s = 60
"""


def fill_when_agents_are_up(out: Path, stop: threading.Event) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not stop.is_set():
        logs = list(out.glob("full/*/agents/rank*.jsonl"))
        if len(logs) == 2 and all(p.stat().st_size for p in logs):
            time.sleep(0.2)
            fill(out)
            return
        time.sleep(0.02)


def test_a_disk_that_fills_mid_run_ends_the_batch_with_one_line(tmp_path):
    cfg = tmp_path / "full.toml"
    cfg.write_text(CONFIG)
    with tmpfs(tmp_path / "out", size="4m") as out:
        stop = threading.Event()
        filler = threading.Thread(target=fill_when_agents_are_up, args=(out, stop), daemon=True)
        filler.start()
        try:
            r = subprocess.run([sys.executable, "-m", "experiments", "run", str(cfg), "--no-sim", "--target", "soft",
                                "--repeat", "2", "--out", str(out)], cwd=REPO, capture_output=True, text=True,
                               timeout=300)
        finally:
            stop.set()
            filler.join(5)
        assert r.returncode == exits.DISK_FULL, r.stdout[-2000:] + r.stderr[-2000:]
        assert "Traceback" not in r.stdout + r.stderr
        assert r.stderr.strip().splitlines()[-1] == ("experiments run: disk full: records could not be written "
                                                     "(see the runs' meta.json)")
        (run,) = _runs(out / "full")                                 # the batch stopped after it
        meta = json.loads((run / "meta.json").read_text())
        assert meta["status"] == "failed" and meta["wrong_result"] is False
        assert "disk full" in meta["reason"], meta["reason"]
        assert [str(p) for p in out.rglob("*.tmp")] == []
        assert [str(p) for p in (run / "switches").glob("*.json") if p.stat().st_size == 0] == []
        (stamped,) = (out / "full").glob("*-summary.json")
        assert json.loads(stamped.read_text())["status"] == "incomplete"
        assert f"summary: {stamped}: not written (No space left on device); rewritten in place" in r.stderr
        assert f"disk full: no report; free some space, then make it with: {sys.executable} -m analysis report" \
            in r.stdout
        net_id = meta["network_id"]
    assert _left_behind(net_id) == []
