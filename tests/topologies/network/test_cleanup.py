"""Teardown leaves nothing: after a normal end, an exception, SIGINT, SIGTERM
(TestbedNetwork.stop), and after SIGKILL of the owner (`make clean-net`'s
module, topologies.network.cleanup)."""

import json
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.harness import REPO
from tests.harness.specs import make_net
from topologies.network.names import PREFIX
from topologies.network.shell import list_links, list_netns
from topologies.network.state import STATE_DIR, alive

pytestmark = [pytest.mark.root]

# The child takes SIGINT as a terminal's Ctrl-C would reach it: a suite run from a
# background job (`cmd &` in a script) starts every process with SIGINT ignored (POSIX)
CHILD = textwrap.dedent("""
    import signal, sys, time
    signal.signal(signal.SIGINT, signal.default_int_handler)
    from tests.harness.specs import make_net
    net = make_net("dumbbell", 2, 50, jobs=(2,), run_dir=sys.argv[1])
    with net:
        p = net.popen("h1", ["sleep", "1000"])
        print("READY", net.id, net.state.path, p.pid, flush=True)
        time.sleep(1000)
""")


def leftovers(net_id: str) -> list[str]:
    """Prefixed interfaces and named host namespaces of one network."""
    return ([name for name in list_links() if name.startswith(f"{PREFIX}{net_id}")]
            + [ns for ns in list_netns() if ns.startswith(f"{PREFIX}-{net_id}-")])


def start_child(tmp_path):
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(tmp_path)], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline().split()
    if not line or line[0] != "READY":
        proc.kill()
        raise AssertionError(f"child did not start: {line} {proc.communicate()[1][-2000:]}")
    _, net_id, state_path, sleeper = line
    state = json.loads(Path(state_path).read_text())
    assert leftovers(net_id), "the network should have prefixed interfaces while it runs"
    assert {f"{PREFIX}-{net_id}-h1", f"{PREFIX}-{net_id}-h2"} <= set(list_netns())
    assert alive(int(sleeper), None)
    return proc, net_id, Path(state_path), state, int(sleeper)


def clean_net(net_id):
    """`make clean-net`'s module, limited to this test's network: its sweep of
    every other prefixed name would also take concurrent test labs."""
    return subprocess.run([sys.executable, "-m", "topologies.network.cleanup", "--id", net_id], cwd=REPO,
                          capture_output=True, text=True, timeout=60)


def assert_nothing_left(net_id, state_path, state, sleeper):
    deadline = time.monotonic() + 5
    def running():
        return [e for e in state["pids"] if alive(e["pid"], e["start"])] or alive(sleeper, None)
    while time.monotonic() < deadline and (leftovers(net_id) or state_path.exists() or running()):
        time.sleep(0.1)
    assert leftovers(net_id) == []
    assert not state_path.exists()
    still = [e for e in state["pids"] if alive(e["pid"], e["start"])]
    assert still == []
    assert not alive(sleeper, None)
    assert len(state["netns"]) == 2          # both hosts' namespaces were recorded


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_signal_tears_everything_down(tmp_path, sig):
    proc, net_id, state_path, state, sleeper = start_child(tmp_path)
    proc.send_signal(sig)
    proc.communicate(timeout=30)
    assert_nothing_left(net_id, state_path, state, sleeper)


def test_clean_net_removes_what_a_killed_run_left(tmp_path):
    proc, net_id, state_path, state, sleeper = start_child(tmp_path)
    proc.kill()            # no teardown at all: the state file is all that is left
    proc.communicate(timeout=10)
    assert state_path.exists() and leftovers(net_id)
    out = clean_net(net_id)
    assert out.returncode == 0, out.stderr
    assert_nothing_left(net_id, state_path, state, sleeper)


def test_exception_inside_with_tears_down(tmp_path):
    net = make_net("star", 2, jobs=(2,), run_dir=tmp_path)
    with pytest.raises(RuntimeError, match="boom"):
        with net:
            state = json.loads(net.state.path.read_text())
            sleeper = net.popen("h2", ["sleep", "1000"]).pid
            raise RuntimeError("boom")
    assert_nothing_left(net.id, net.state.path, state, sleeper)
    assert not list(STATE_DIR.glob(f"{net.id}*"))


def test_clean_net_leaves_a_live_network_alone(tmp_path):
    proc, net_id, state_path, state, sleeper = start_child(tmp_path)
    try:
        out = clean_net(net_id)
        assert out.returncode == 0, out.stderr
        assert f"network {net_id} still runs" in out.stdout
        assert state_path.exists() and alive(sleeper, None)
        assert {f"{PREFIX}-{net_id}-h1", f"{PREFIX}{net_id}s1e1"} <= set(leftovers(net_id))
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=30)
    assert_nothing_left(net_id, state_path, state, sleeper)
