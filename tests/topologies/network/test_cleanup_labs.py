"""`make clean-net` against every kind of lab (issue 18, items 1 and 2).

- A live lab's names survive clean-net run from another process, and the lab
  still works: the conformance rig's veths (twin process and simple_switch)
  and the CE-marker harness's namespaces; once the lab's process is killed,
  clean-net removes its names and its switch or forwarder.
- A runner killed while a switch is starting (a switch slow to open its
  control socket or Thrift port) leaves no switch process clean-net cannot
  find: the pid is recorded when the process starts, not when it is ready.

clean-net runs with --id, limited to the lab under test: its names are swept
unless its owner still runs, as the whole sweep would sweep them, and
concurrent tests' labs are not touched."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from tests.harness import REPO
from topologies.network.lab import Lab
from topologies.network.names import PREFIX
from topologies.network.shell import list_links, list_netns
from topologies.network.state import STATE_DIR, alive, read_states

pytestmark = [pytest.mark.root]

RIG_CHILD = textwrap.dedent("""
    import sys
    from topologies.switch import conformance as C, conformance_rig as R
    target = getattr(R, sys.argv[1])()
    vector = next(v for v in C.load_vectors() if v.name == "frontier_advance")
    print("READY", target.id, target.proc.pid, flush=True)
    for line in sys.stdin:
        print("FAILURES", len(C.run_vector(vector, target)), flush=True)
""")

MARKER_CHILD = textwrap.dedent("""
    import sys
    from tests.harness.cemarker import MarkerLab
    lab = MarkerLab(2)
    print("READY", lab.id, lab.marker_proc.pid, lab.tmp, flush=True)
    for line in sys.stdin:
        lab.marker.stats()                  # the forwarder answers on its control socket
        ping = lab.exec(0, "ping", "-c", "1", "-W", "2", lab.ips[1], check=False)
        print("FAILURES", ping.returncode, flush=True)
""")


def names(lab_id: str) -> list[str]:
    return ([x for x in list_links() if x.startswith(f"{PREFIX}{lab_id}")]
            + [x for x in list_netns() if x.startswith(f"{PREFIX}-{lab_id}-")])


def clean_net(lab_id: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "topologies.network.cleanup", "--id", lab_id], cwd=REPO,
                          capture_output=True, text=True, timeout=60)


class Child:
    """A lab in its own process, driven over stdin/stdout."""

    def __init__(self, script: str, *args: str):
        self.proc = subprocess.Popen([sys.executable, "-c", script, *args], cwd=REPO, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline().split()
        if not line or line[0] != "READY":
            self.proc.kill()
            raise AssertionError(f"lab did not start: {line} {self.proc.stderr.read()[-2000:]}")
        self.lab_id, self.worker, self.extra = line[1], int(line[2]), line[3:]

    def failures(self) -> int:
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()
        word, n = self.proc.stdout.readline().split()
        assert word == "FAILURES"
        return int(n)

    def kill(self) -> None:
        self.proc.kill()                    # no teardown at all
        self.proc.wait(timeout=10)
        close_pipes(self.proc)


def close_pipes(proc: subprocess.Popen) -> None:
    """Its pipes, without waiting for their other ends: what the killed
    process started (its switch, forwarder) holds them until clean-net."""
    for f in (proc.stdin, proc.stdout, proc.stderr):
        if f is not None:
            f.close()


def wait_until(cond, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while not cond() and time.monotonic() < deadline:
        time.sleep(0.05)
    return cond()


def check_live_lab_survives_then_goes(child: Child, expected: set[str]) -> None:
    try:
        before = set(names(child.lab_id))
        assert expected <= before
        out = clean_net(child.lab_id)
        assert out.returncode == 0, out.stderr
        assert "still runs" in out.stdout, out.stdout
        assert set(names(child.lab_id)) == before        # not one name removed
        assert alive(child.worker, None)
        assert child.failures() == 0                     # and the lab still works
    finally:
        child.kill()
    state = STATE_DIR / f"{child.lab_id}.json"
    assert state.exists()                                # a killed lab's leftovers
    out = clean_net(child.lab_id)
    assert out.returncode == 0, out.stderr
    assert wait_until(lambda: not names(child.lab_id)), names(child.lab_id)
    assert wait_until(lambda: not alive(child.worker, None))
    assert not state.exists() and not (STATE_DIR / child.lab_id).exists()


RIGS = [pytest.param("TwinProcessTarget", id="twin_process"),
        pytest.param("Bmv2Target", marks=pytest.mark.bmv2, id="bmv2")]


@pytest.mark.parametrize("target", RIGS)
def test_clean_net_leaves_a_live_conformance_rig_alone(target):
    child = Child(RIG_CHILD, target)
    veths = {f"{PREFIX}{child.lab_id}{end}{p}" for end in "st" for p in (1, 2, 3, 4)}
    check_live_lab_survives_then_goes(child, veths)


def test_clean_net_leaves_a_live_ce_marker_lab_alone():
    child = Child(MARKER_CHILD)
    spaces = {f"{PREFIX}-{child.lab_id}-{n}" for n in ("m", "h0", "h1")}
    try:
        check_live_lab_survives_then_goes(child, spaces)
    finally:
        shutil.rmtree(child.extra[0], ignore_errors=True)     # the killed harness's log directory


SLOW_SWITCH = """#!/bin/sh
# a switch that never gets ready: its pid, then a long sleep (same pid)
echo $$ > {pidfile}
exec sleep 120
"""

NET_CHILD = textwrap.dedent("""
    import sys
    from tests.harness.specs import make_net
    net = make_net("star", 2, jobs=(2,), target=sys.argv[1], run_dir=sys.argv[2],
                   net_kw={"switch_bin": sys.argv[3]})
    net.start()
    print("STARTED", flush=True)
""")


@pytest.mark.parametrize("target", [pytest.param("soft"), pytest.param("bmv2", marks=pytest.mark.bmv2)])
def test_runner_killed_while_a_switch_starts_leaves_nothing(tmp_path, target):
    pidfile = tmp_path / "switch.pid"
    fake = tmp_path / "slow-switch"
    fake.write_text(SLOW_SWITCH.format(pidfile=pidfile))
    fake.chmod(0o755)
    runner = subprocess.Popen([sys.executable, "-c", NET_CHILD, target, str(tmp_path / "run"), str(fake)],
                              cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert wait_until(pidfile.exists, 60), runner.stderr.read() if runner.poll() is not None else "no switch"
        switch_pid = int(pidfile.read_text())
        state = next(p for p, d in read_states() if d.get("owner") == runner.pid)

        def switch_recorded() -> bool:
            # the fake switch writes its pid file as it starts, which can be
            # before the runner, back from Popen, has recorded its pid
            data = json.loads(state.read_text())
            return any(e["pid"] == switch_pid and e["what"] == "switch s1" for e in data["pids"])
        # recorded during the switch's start-up wait, which never returns
        assert wait_until(switch_recorded, 10)
        recorded = json.loads(state.read_text())
        assert runner.poll() is None
    finally:
        runner.send_signal(signal.SIGKILL)
        runner.wait(timeout=10)
        close_pipes(runner)
    out = clean_net(recorded["id"])
    assert out.returncode == 0, out.stderr
    assert wait_until(lambda: not alive(switch_pid, None)), f"switch {switch_pid} left running"
    assert wait_until(lambda: not names(recorded["id"])), names(recorded["id"])
    assert not state.exists()


def test_a_lab_started_in_this_process_is_registered_before_its_names():
    """A namespace lab's state file names its owner and prefix while it lives."""
    with Lab(1) as lab:
        data = json.loads(lab.state.path.read_text())
        assert data["owner"] == os.getpid() and data["what"] == "namespace lab"
        assert all(n.startswith((data["prefix"], f"{PREFIX}-{lab.id}-")) for n in names(lab.id))
    assert not names(lab.id) and not lab.state.path.exists()
