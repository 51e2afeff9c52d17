"""State files under /run/symphony/<id>.json, one per lab: a network, a
namespace lab, the conformance rig, the CE-marker harness, the netem probe.
Each records its owner (pid and start time), every pid it starts (with its
start time, so a reused pid is never killed), its hosts' namespaces and its
name prefixes, so `make clean-net` leaves a live lab alone and removes what
a crashed one left, by pid and by name, never by process name; and the
lab's short directory for control sockets, /run/symphony/<id>/ (why:
docs/topologies.md, "Teardown").

A lab claims its state file (``StateFile.claim``: an id no one uses,
created exclusively) before it creates any name, and starts its processes
through ``spawn``, which records the pid as soon as the process exists and
marks its environment with the lab's id (``STATE_ENV``): clean-net finds a
process of a dead lab even when its owner died before writing its pid.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

from contract.files import temporary_for, write_atomic
from topologies.network.names import PREFIX, new_lab_id
from topologies.network.shell import list_links, list_netns, remove_links, remove_netns

STATE_DIR = Path(os.environ.get("SYMPHONY_STATE_DIR", "/run/symphony"))
SUN_PATH_MAX = 107        # bytes of a Unix socket path (sockaddr_un.sun_path less the NUL)
STATE_ENV = "SYMPHONY_STATE"   # in the environment of every process a lab spawns: the lab's id


def sock_path_problem(path: str | os.PathLike) -> str | None:
    """Why a Unix socket cannot be bound at this path (too long), or None."""
    n = len(os.fsencode(path))
    if n > SUN_PATH_MAX:
        return f"the path is {n} bytes long, over the {SUN_PATH_MAX}-byte limit of a Unix socket path"
    return None


def _stat_fields(pid: int) -> list[str] | None:
    """/proc/<pid>/stat from field 3 (state) on; None if the process is gone.
    The command name (field 2) may hold spaces and parentheses: split after the last ')'."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat[stat.rindex(")") + 2:].split()


def process_state(pid: int) -> str | None:
    """A process's state letter (R, S, D, T stopped, t traced, Z, ...), None if gone."""
    fields = _stat_fields(pid)
    return None if fields is None else fields[0]


def start_time(pid: int) -> int | None:
    """Kernel start time of a process (clock ticks since boot), None if gone."""
    fields = _stat_fields(pid)
    return None if fields is None else int(fields[19])


def netns_inode(pid: int) -> int | None:
    try:
        return os.stat(f"/proc/{pid}/ns/net").st_ino
    except OSError:
        return None


def alive(pid: int, started: int | None) -> bool:
    """The recorded process still runs (a zombie waiting to be reaped does not)."""
    fields = _stat_fields(pid)
    if fields is None or fields[0] in ("Z", "X"):
        return False
    return started is None or int(fields[19]) == started


class StateFile:
    """The state of one lab; created exclusively (FileExistsError when the id
    is taken), rewritten atomically on every change."""

    def __init__(self, net_id: str, prefix: str, state_dir: Path | None = None, what: str = "network"):
        self.dir = Path(state_dir or STATE_DIR)
        self.path = self.dir / f"{net_id}.json"
        self.data = {"id": net_id, "what": what, "prefix": prefix, "owner": os.getpid(),
                     "owner_start": start_time(os.getpid()), "created": time.time(),
                     "pids": [], "netns": []}
        self.dir.mkdir(parents=True, exist_ok=True)
        # whole content first, then the name, atomically and only if free: a
        # reader never sees a half-written file, two labs never share an id
        tmp = self.dir / f".{net_id}.{os.getpid()}.new"
        tmp.write_text(json.dumps(self.data, indent=1))
        try:
            os.link(tmp, self.path)
        finally:
            tmp.unlink()

    @classmethod
    def claim(cls, what: str, state_dir: Path | None = None) -> StateFile:
        """A state file under an id no other lab, network or leftover name
        uses (names are ``sym<id>...`` and ``sym-<id>-...``), before the
        caller creates any of them."""
        for _ in range(100):
            try:
                net_id = unused_id(state_dir)
                return cls(net_id, f"{PREFIX}{net_id}", state_dir, what)
            except FileExistsError:
                continue
        raise RuntimeError("no unused lab id")

    @property
    def id(self) -> str:
        return self.data["id"]

    @property
    def sock_dir(self) -> Path:
        """The network's directory for control sockets, short whatever the
        run directory is (created by ``make_sock_dir``)."""
        return self.dir / self.data["id"]

    def make_sock_dir(self) -> Path:
        self.sock_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        if self.data.get("sock_dir") != str(self.sock_dir):
            self.data["sock_dir"] = str(self.sock_dir)
            self._write()
        return self.sock_dir

    def add_pid(self, pid: int, what: str) -> None:
        self.data["pids"].append({"pid": pid, "start": start_time(pid), "what": what})
        self._write()

    def spawn(self, args: Sequence[str], what: str, **popen_kw) -> subprocess.Popen:
        """Start a process of this lab in its own session (so teardown and
        clean-net can kill its group), its environment marked with the
        lab's id, and record its pid before anyone waits for it."""
        env = dict(popen_kw.pop("env", None) or os.environ)
        env[STATE_ENV] = self.id
        popen_kw.setdefault("start_new_session", True)
        proc = subprocess.Popen(list(args), env=env, **popen_kw)
        self.add_pid(proc.pid, what)
        return proc

    def add_netns(self, pid: int, what: str) -> None:
        ino = netns_inode(pid)
        if ino is not None:
            self.data["netns"].append({"inode": ino, "what": what})
            self._write()

    def _write(self) -> None:
        write_atomic(self.path, json.dumps(self.data, indent=1), f"the state file of lab {self.id}")

    def remove(self) -> None:
        remove_sock_dir(self.path, self.data)
        _unlink(self.path)


def remove_sock_dir(state_path: Path, data: dict) -> str | None:
    """Remove the socket directory a state file records: its sockets, then
    the directory.  Only the one named for this network beside its state file
    (a state file is not trusted to name any other path), and only socket
    files in it.  Returns the path when it was removed."""
    recorded = data.get("sock_dir")
    net_id = data.get("id")
    if not recorded or not net_id or Path(recorded) != Path(state_path).parent / str(net_id):
        return None
    d = Path(recorded)
    if not d.is_dir() or d.is_symlink():
        return None
    for entry in d.iterdir():
        if entry.is_socket():
            try:
                entry.unlink()
            except FileNotFoundError:
                pass
    try:
        d.rmdir()
    except OSError:         # something else in it: not ours to remove
        return None
    return str(d)


def remove_orphan_sock_dirs(state_dir: Path | None = None) -> list[str]:
    """Socket directories whose network has no state file: a network writes
    its state file before its socket directory and removes it after, so such
    a directory is left from a crash.  Also a state file's first copy
    (.<id>.<pid>.new) whose writer died before it took its name.  Returns
    the ones removed."""
    d = Path(state_dir or STATE_DIR)
    out = []
    for tmp in sorted(d.glob(".*.*.new")) if d.is_dir() else []:
        pid = tmp.name.split(".")[2]
        if pid.isdigit() and not alive(int(pid), None):
            tmp.unlink(missing_ok=True)
            out.append(str(tmp))
    for sub in sorted(d.iterdir()) if d.is_dir() else []:
        state = d / f"{sub.name}.json"
        if sub.is_dir() and not state.exists():
            gone = remove_sock_dir(state, {"id": sub.name, "sock_dir": str(sub)})
            if gone:
                out.append(gone)
    return out


def kill_pid(pid: int, started: int | None, sig: int = signal.SIGKILL) -> bool:
    """Kill a process (its whole group when it leads one) if it is still the
    process recorded.  Returns True when a signal was sent."""
    if not alive(pid, started):
        return False
    try:
        if os.getpgid(pid) == pid:
            os.killpg(pid, sig)
        else:
            os.kill(pid, sig)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def pids_in_netns(inodes: set[int]) -> list[int]:
    """Processes whose network namespace is one of these (our hosts')."""
    out = []
    # never the root namespace (ours or init's), whatever a state file says
    inodes = set(inodes) - {netns_inode(1), netns_inode(os.getpid())}
    if not inodes:
        return out
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            ino = netns_inode(int(entry))
            if ino in inodes and int(entry) != os.getpid():
                out.append(int(entry))
    return out


def kill_netns_processes(inodes: set[int]) -> int:
    """SIGKILL everything left in these namespaces; the namespace (and the
    veth ends inside it) goes away with its last process."""
    n = 0
    for _ in range(5):
        pids = pids_in_netns(inodes)
        if not pids:
            break
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
                n += 1
            except ProcessLookupError:
                pass
        time.sleep(0.05)
    return n


def marked_pids(lab_id: str) -> list[int]:
    """Processes whose environment carries this lab's id (STATE_ENV): what
    its ``spawn`` started, recorded or not."""
    marker = f"{STATE_ENV}={lab_id}".encode()
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            try:
                env = Path(f"/proc/{entry}/environ").read_bytes()
            except OSError:
                continue
            if marker in env.split(b"\0"):
                out.append(int(entry))
    return out


def read_states(state_dir: Path | None = None) -> list[tuple[Path, dict]]:
    d = Path(state_dir or STATE_DIR)
    out = []
    if not d.is_dir():
        return out
    for p in sorted(d.glob("*.json")):
        try:
            out.append((p, json.loads(p.read_text())))
        except (OSError, ValueError):
            out.append((p, {}))
    return out


def owner_alive(data: dict) -> bool:
    return bool(data.get("owner")) and alive(data["owner"], data.get("owner_start"))


def clean_state(path: Path, data: dict) -> list[str]:
    """Remove what one state file records: pids, processes marked with its
    id, processes in its host namespaces, its prefixed interfaces; then the
    file.  Returns what it did."""
    done = []
    for entry in data.get("pids", []):
        if kill_pid(entry["pid"], entry.get("start")):
            done.append(f"pid {entry['pid']} ({entry.get('what', '?')})")
    net_id = data.get("id")
    # started by the lab's spawn, its pid maybe never written (the owner died first)
    for pid in marked_pids(net_id) if net_id else []:
        if kill_pid(pid, None):
            done.append(f"pid {pid} (marked {STATE_ENV}={net_id})")
    # the hosts' namespaces by name (sym-<id>-<host>): a name pins the
    # namespace, so it is ours for sure (a bare inode number could have been
    # reused by another namespace since the crash)
    if net_id:
        done += [f"netns {ns}" for ns in remove_netns(f"{PREFIX}-{net_id}-")]
    prefix = data.get("prefix")
    if prefix and len(prefix) > len(PREFIX):          # never the bare project prefix
        done += remove_links(prefix)
    sock_dir = remove_sock_dir(path, data)
    if sock_dir:
        done.append(sock_dir)
    _unlink(path)
    return done


def leftovers(net_id: str, pids: list[dict] = (), state_dir: Path | None = None) -> list[str]:
    """What of one network still exists: its namespaces (sym-<id>-...), its
    interfaces (sym<id>...), its state file and socket directory, and the
    recorded processes (``pids``: a state file's entries) still running."""
    d = Path(state_dir or STATE_DIR)
    left = [f"netns {ns}" for ns in list_netns() if ns.startswith(f"{PREFIX}-{net_id}-")]
    left += [f"interface {name}" for name in list_links() if name.startswith(f"{PREFIX}{net_id}")]
    left += [str(p) for p in (d / f"{net_id}.json", d / net_id) if p.exists()]
    left += [f"pid {e['pid']} ({e.get('what', '?')})" for e in pids if alive(e["pid"], e.get("start"))]
    return left


def unused_id(state_dir: Path | None = None) -> str:
    """A lab id no live lab, network or state file uses (names are removed
    by prefix at teardown, so two users of one id would collide).  Only
    StateFile's exclusive creation reserves it."""
    d = Path(state_dir or STATE_DIR)
    taken = list_links() + list_netns()
    for _ in range(100):
        cand = new_lab_id()
        if not any(n.startswith((f"{PREFIX}{cand}", f"{PREFIX}-{cand}-")) for n in taken) \
                and not (d / f"{cand}.json").exists() and not (d / cand).exists():
            return cand
    raise RuntimeError("no unused network id")


def _unlink(state_path: Path) -> None:
    for p in (state_path, temporary_for(state_path)):
        try:
            p.unlink()
        except FileNotFoundError:
            pass
