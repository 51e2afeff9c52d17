"""The agent's memory model (hosts.job.agent_memory_bytes, which `check`
and `run` hold against the machine's memory) against the peak RSS of real
agents on loopback (no root): 4 ranks, one iteration drawn ahead, and three
iterations of 16 MiB drawn one at a time."""

import subprocess
import sys
import time
from pathlib import Path

import pytest

from hosts.job import JobSpec, RankSpec, agent_memory_bytes, dump_job, precomputed
from tests.harness import REPO


def high_water_mark(pid: int) -> int:
    """The process's peak RSS (VmHWM): its own, from its exec on (ru_maxrss
    would count the forking test process's too)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return 0


@pytest.mark.parametrize("message_bytes, iterations", [(8 * 2**20, 1), (16 * 2**20, 3)])
def test_the_model_bounds_the_measured_peak_closely(tmp_path, message_bytes, iterations):
    n = 4
    spec = JobSpec(job=7, data_port=5710, message_bytes=message_bytes, iterations=iterations,
                   dcqcn={"preset": "off"}, ranks=tuple(RankSpec(r, f"127.0.7.{r + 1}") for r in range(n)))
    assert precomputed(iterations, message_bytes) is (iterations == 1)
    dump_job(spec, tmp_path / "job.toml")
    procs = [subprocess.Popen([sys.executable, "-m", "hosts.agent", "--job", str(tmp_path / "job.toml"),
                               "--rank", str(r), "--log-dir", str(tmp_path)], cwd=REPO,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for r in range(n)]
    peaks = [0] * n
    while any(p.poll() is None for p in procs):
        for r, p in enumerate(procs):
            peaks[r] = max(peaks[r], high_water_mark(p.pid))
        time.sleep(0.01)
    assert [p.returncode for p in procs] == [0] * n
    model = agent_memory_bytes(n, message_bytes, iterations)
    # measured (docs/hosts.md, "Memory"): 6.45 S + 36.5 MB and 10.3 S + 36.5 MB; what the
    # allocator keeps of the last iteration varies: suite runs' peaks of the second case were
    # 188 and 181 MiB against the model's 228 (1.21, 1.26; all four ranks alike, so not a
    # sample missed), where it is usually about 200
    assert max(peaks) <= model <= 1.3 * max(peaks), (max(peaks) / 2**20, model / 2**20)
