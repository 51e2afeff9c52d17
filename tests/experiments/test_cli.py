"""`python3 -m topologies CONFIG [--cli]`: bad input exits 2 with one line; a
network comes up, and Ctrl-C (or `exit` in the CLI) leaves nothing."""

import json
import signal
import subprocess
import sys
import time

import pytest

from tests.harness import REPO
from topologies.network.lab import list_links
from topologies.network.names import PREFIX


def run(*args, **kw):
    return subprocess.run([sys.executable, "-m", "topologies", *args], cwd=REPO, capture_output=True,
                          text=True, timeout=60, **kw)


@pytest.mark.parametrize("text, message", [
    (None, "no such config file"),
    ("[topology\n", "bad TOML"),
    ("[jobs]\nranks = 2\n", "missing [topology] table"),
    ('[topology]\nkind = "ring"\nhosts = 2\n', "topology.kind"),
    ('[topology]\nkind = "star"\nhosts = 2\n[[jobs]]\nranks = 3\n', "jobs[0].ranks"),
])
def test_bad_config_exits_2_with_one_line(tmp_path, text, message):
    path = tmp_path / "c.toml"
    if text is not None:
        path.write_text(text)
    r = run(str(path), "--target", "soft")
    assert r.returncode == 2
    assert message in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


def net_id_from(stdout) -> str:
    """The JSON description printed at start-up (up to the closing brace)."""
    lines = []
    for line in stdout:
        lines.append(line)
        if line.rstrip() == "}":
            return json.loads("".join(lines))["id"]
    raise AssertionError("no description printed: " + "".join(lines))


@pytest.mark.root
def test_network_up_then_ctrl_c(tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text('[topology]\nkind = "dumbbell"\nhosts = 2\nhost_rate_mbit = 10\n[[jobs]]\nranks = 2\n')
    proc = subprocess.Popen([sys.executable, "-m", "topologies", str(cfg), "--target", "soft",
                             "--run-dir", str(tmp_path / "run")], cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    net_id = net_id_from(proc.stdout)
    assert proc.stdout.readline().startswith("network up")
    assert [x for x in list_links() if x.startswith(f"{PREFIX}{net_id}")]
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=30) == 0
    time.sleep(0.2)
    assert not [x for x in list_links() if x.startswith(f"{PREFIX}{net_id}")]


@pytest.mark.root
def test_cli_pingall_then_exit(tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text('[topology]\nkind = "star"\nhosts = 3\n')
    r = run(str(cfg), "--cli", "--target", "soft", "--run-dir", str(tmp_path / "run"), input="pingall\nexit\n")
    assert r.returncode == 0, r.stderr
    assert "Results: 0% dropped (6/6 received)" in r.stdout + r.stderr
