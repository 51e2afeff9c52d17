"""State files and the control-socket directory.  Control sockets live in a
short per-network directory (/run/symphony/<id>/), not in the run directory:
a Unix socket path holds at most 107 bytes, and a run directory under a deep
--out or pytest's tmp_path can be longer.  The directory is recorded in the
network's state file, removed with the network, and by clean-net after a
crash."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.harness import REPO
from tests.harness.specs import make_net
from topologies.network.names import PREFIX
from topologies.network.shell import list_links, list_netns
from topologies.network.state import (
    STATE_DIR,
    STATE_ENV,
    SUN_PATH_MAX,
    StateFile,
    alive,
    clean_state,
    marked_pids,
    remove_orphan_sock_dirs,
    remove_sock_dir,
    sock_path_problem,
    start_time,
    unused_id,
)

# ---------------------------------------------------------------- pure

def test_sock_path_problem_names_the_length_and_the_limit():
    assert sock_path_problem("/run/symphony/ab12/s1.sock") is None
    assert sock_path_problem("/" + "x" * (SUN_PATH_MAX - 1)) is None          # exactly 107 bytes
    long = "/" + "x" * SUN_PATH_MAX                                             # 108 bytes
    problem = sock_path_problem(long)
    assert problem and "108 bytes" in problem and "107" in problem
    # bytes, not characters: a non-ASCII name is longer than it looks
    assert sock_path_problem("/" + "é" * 60) is not None


def test_state_file_records_its_sock_dir_and_remove_takes_it(tmp_path):
    st = StateFile("ab12", f"{PREFIX}ab12", state_dir=tmp_path)
    d = st.make_sock_dir()
    assert d == tmp_path / "ab12" and d.is_dir()
    assert json.loads(st.path.read_text())["sock_dir"] == str(d)
    _stale_socket(d / "s1.sock")            # a twin killed without unlinking its socket
    st.remove()
    assert not d.exists() and not st.path.exists()


def test_clean_state_removes_the_sock_dir_of_a_crashed_network(tmp_path):
    st = StateFile("cd34", f"{PREFIX}cd34", state_dir=tmp_path)
    d = st.make_sock_dir()
    _stale_socket(d / "s1.sock")
    data = json.loads(st.path.read_text())   # what clean-net reads after the owner died
    done = clean_state(st.path, data)
    assert str(d) in done
    assert not d.exists() and not st.path.exists()


def test_a_state_file_cannot_make_clean_net_remove_another_directory(tmp_path):
    other = tmp_path / "elsewhere"
    other.mkdir()
    (other / "keep.txt").write_text("x")
    state_path = tmp_path / "state" / "ef56.json"
    assert remove_sock_dir(state_path, {"id": "ef56", "sock_dir": str(other)}) is None
    assert (other / "keep.txt").exists()
    # its own directory with a file that is not a socket: left alone too
    own = tmp_path / "state" / "ef56"
    own.mkdir(parents=True)
    (own / "notes").write_text("x")
    assert remove_sock_dir(state_path, {"id": "ef56", "sock_dir": str(own)}) is None
    assert (own / "notes").exists()


def test_orphan_sock_dirs_go_and_a_live_networks_stays(tmp_path):
    live = StateFile("aa11", f"{PREFIX}aa11", state_dir=tmp_path)
    _stale_socket(live.make_sock_dir() / "s1.sock")
    orphan = tmp_path / "bb22"               # its state file is gone (crash mid-teardown)
    orphan.mkdir()
    _stale_socket(orphan / "s1.sock")
    assert remove_orphan_sock_dirs(tmp_path) == [str(orphan)]
    assert not orphan.exists() and (live.sock_dir / "s1.sock").exists()
    live.remove()


def test_a_state_file_is_claimed_once_and_whole(tmp_path):
    """Two labs never share an id: the file is created exclusively, whole
    (a reader never sees it half-written), and claim picks a free id."""
    st = StateFile("ab12", f"{PREFIX}ab12", state_dir=tmp_path, what="conformance rig")
    with pytest.raises(FileExistsError):
        StateFile("ab12", f"{PREFIX}ab12", state_dir=tmp_path)
    data = json.loads(st.path.read_text())
    assert (data["id"], data["what"], data["owner"]) == ("ab12", "conformance rig", os.getpid())
    other = StateFile.claim("namespace lab", state_dir=tmp_path)
    assert other.id != "ab12" and other.data["prefix"] == f"{PREFIX}{other.id}"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([st.path.name, other.path.name])
    st.remove()
    other.remove()


def test_a_crashed_claims_first_copy_is_removed(tmp_path):
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = tmp_path / f".cd34.{dead.pid}.new"
    stale.write_text("{}")
    mine = tmp_path / f".ef56.{os.getpid()}.new"      # a claim under way
    mine.write_text("{}")
    assert remove_orphan_sock_dirs(tmp_path) == [str(stale)]
    assert not stale.exists() and mine.exists()


def test_clean_state_kills_a_spawned_process_whose_pid_was_never_written(tmp_path):
    """spawn marks the environment with the lab's id: a process whose owner
    died before recording it is still found (and only processes so marked).
    The id is not hex, so no real lab's names can match it."""
    st = StateFile("zq11", f"{PREFIX}zq11", state_dir=tmp_path)
    recorded = st.spawn(["sleep", "60"], "recorded")
    assert [e["pid"] for e in st.data["pids"]] == [recorded.pid]
    unrecorded = subprocess.Popen(["sleep", "60"], env={**os.environ, STATE_ENV: "zq11"}, start_new_session=True)
    stranger = subprocess.Popen(["sleep", "60"], env={**os.environ, STATE_ENV: "zq111"})
    try:
        assert set(marked_pids("zq11")) == {recorded.pid, unrecorded.pid}
        done = clean_state(st.path, json.loads(st.path.read_text()))
        assert recorded.wait(5) == -9 and unrecorded.wait(5) == -9
        assert stranger.poll() is None
        assert any(f"pid {unrecorded.pid} (marked" in d for d in done)
    finally:
        for p in (recorded, unrecorded, stranger):
            p.kill()
            p.wait()


def test_a_pid_is_alive_only_with_its_start_time():
    me = os.getpid()
    assert alive(me, start_time(me)) and alive(me, None)
    assert not alive(me, start_time(me) + 1)
    assert start_time(2 ** 22 + 1) is None and not alive(2 ** 22 + 1, None)


def test_unused_id_has_no_state_file():
    net_id = unused_id()
    assert len(net_id) == 4 and not (STATE_DIR / f"{net_id}.json").exists()


def _stale_socket(path: Path) -> None:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(str(path))
    s.close()                                # the file stays, as after SIGKILL


# ---------------------------------------------------------------- root

def _long_dir(base: Path) -> Path:
    d = base / ("deep-run-directory-" + "x" * 60) / "results" / "exp" / "20260101T000000-baseline-rep0"
    assert len(str(d)) > 110
    return d


@pytest.mark.root
def test_twin_says_the_path_and_its_length_when_the_socket_path_is_too_long(tmp_path):
    state = StateFile.claim("twin test")
    ifname = f"{state.data['prefix']}sp"
    # a veth pair (this kernel has no dummy type); deleting one end removes both
    subprocess.run(["ip", "link", "add", ifname, "type", "veth", "peer", "name", ifname + "q"],
                   check=True, capture_output=True)
    try:
        sock = _long_dir(tmp_path) / "s1.sock"
        sock.parent.mkdir(parents=True)
        out = subprocess.run([sys.executable, "-m", "topologies.switch.twin", "--name", "s1", "--port", f"1={ifname}",
                              "--control", str(sock)], cwd=REPO, capture_output=True, text=True, timeout=30)
    finally:
        subprocess.run(["ip", "link", "del", ifname], capture_output=True)
        state.remove()
    assert out.returncode == 2
    n = len(os.fsencode(str(sock)))
    assert str(sock) in out.stderr and f"{n} bytes" in out.stderr, out.stderr
    assert "Traceback" not in out.stderr


@pytest.mark.root
def test_network_with_a_run_dir_over_110_characters_comes_up_and_leaves_nothing(tmp_path):
    run_dir = _long_dir(tmp_path)
    net = make_net("star", 2, jobs=(2,), run_dir=run_dir)
    with net:
        sock_dir = STATE_DIR / net.id
        assert json.loads(net.state.path.read_text())["sock_dir"] == str(sock_dir)
        socks = sorted(p.name for p in sock_dir.iterdir())
        assert socks == ["s1.sock"]
        assert net.dead_switches() == []
        ping = net.cmd("h1", "ping", "-c", "1", "-W", "2", net.topo.host("h2").ip)
        assert ping.returncode == 0, ping.stdout + ping.stderr
        twin_pid = net.net.switches[0].switch_pid
    # logs stay in the run directory; nothing of the network is left anywhere else
    assert (run_dir / "logs" / "s1.log").exists()
    assert not (run_dir / "ctl").exists()
    assert not sock_dir.exists()
    assert not list(STATE_DIR.glob(f"{net.id}*"))
    assert not [x for x in list_links() if x.startswith(f"{PREFIX}{net.id}")]
    assert not [x for x in list_netns() if x.startswith(f"{PREFIX}-{net.id}-")]
    assert not Path(f"/proc/{twin_pid}").exists() or _zombie(twin_pid)


def _zombie(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat[stat.rindex(")") + 2] in "ZX"


CHILD = """
import sys, time
from tests.harness.specs import make_net
net = make_net("star", 2, jobs=(2,), run_dir=sys.argv[1])
with net:
    print("READY", net.id, net.state.path, flush=True)
    time.sleep(1000)
"""


@pytest.mark.root
def test_clean_net_removes_the_sock_dir_after_the_owner_was_killed(tmp_path):
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(_long_dir(tmp_path))], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline().split()
    if not line or line[0] != "READY":
        proc.kill()
        raise AssertionError(f"child did not start: {line} {proc.stderr.read()[-2000:]}")
    _, net_id, state_path = line
    state_path = Path(state_path)
    sock_dir = state_path.parent / net_id
    assert (sock_dir / "s1.sock").exists()
    proc.kill()                              # no teardown: the state file is all that is left
    proc.wait(timeout=10)
    proc.stdout.close()
    proc.stderr.close()
    out = subprocess.run([sys.executable, "-m", "topologies.network.cleanup", "--id", net_id], cwd=REPO,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert str(sock_dir) in out.stdout
    assert not sock_dir.exists() and not state_path.exists()
    assert not [x for x in list_links() if x.startswith(f"{PREFIX}{net_id}")]
    assert not [x for x in list_netns() if x.startswith(f"{PREFIX}-{net_id}-")]
