"""The job file shown in docs/hosts.md is one the agent accepts."""
import re

from hosts.job import load_job
from tests.harness import REPO

DOC = REPO / "docs" / "hosts.md"


def test_documented_job_file_loads(tmp_path):
    block = re.search(r"## Job file.*?```toml\n(.*?)```", DOC.read_text(), re.S).group(1)
    path = tmp_path / "job.toml"
    path.write_text(block)
    spec = load_job(path)
    assert spec.job == 1 and spec.data_port == 5000 and len(spec.ranks) >= 1
