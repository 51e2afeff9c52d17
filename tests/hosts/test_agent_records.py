"""An agent whose records cannot be written (its --log-dir on a full disk)
says so in one line and exits 4 (disk full), never 1 (a wrong result)
nor with a traceback (issue 18, item 3).  A 4 MB tmpfs filled up (root)."""

import subprocess
import sys

import pytest

from contract import exits
from hosts.job import JobSpec, RankSpec, dump_job
from tests.harness import REPO
from tests.harness.mounts import fill, tmpfs

pytestmark = [pytest.mark.root]


def test_an_agent_on_a_full_disk_exits_4_with_one_line(tmp_path):
    spec = JobSpec(job=3, data_port=5730, message_bytes=4000, iterations=1,
                   ranks=(RankSpec(0, "127.0.3.1"), RankSpec(1, "127.0.3.2")))
    dump_job(spec, tmp_path / "job.toml")
    with tmpfs(tmp_path / "disk", size="1m") as disk:
        fill(disk)
        r = subprocess.run([sys.executable, "-m", "hosts.agent", "--job", str(tmp_path / "job.toml"), "--rank", "0",
                            "--log-dir", str(disk / "agents")], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert r.returncode == exits.DISK_FULL, r.stderr
    assert r.stderr.splitlines() == [f"hosts.agent rank 0: cannot write its records ({disk}/agents/rank0.jsonl): "
                                     "No space left on device"]
