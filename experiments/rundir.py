"""Run directories, made once and never overwritten (a numeric suffix keeps
two runs of one second apart), a batch's stamp claimed the same way, and what
goes into them: the resolved config, meta.json written atomically (and, on
a full disk, its status still), the versions of what ran.  Their layout:
experiments/README.md, "Run directory"."""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import platform
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

import mininet.net
import tomli_w

from contract.exits import is_disk_full
from contract.files import write_atomic
from experiments.config import ExperimentSpec


def stamp(now: dt.datetime | None = None) -> str:
    now = now or dt.datetime.now(dt.UTC)
    return now.strftime("%Y%m%dT%H%M%SZ")


def make_run_dir(exp_dir: Path, stamp_: str, variant: str, repeat: int) -> Path:
    """A new, empty run directory; an existing one is never reused (a
    numeric suffix keeps two runs of the same second apart)."""
    exp_dir.mkdir(parents=True, exist_ok=True)
    base = f"{stamp_}-{variant}-rep{repeat}"
    for n in range(1, 1000):
        path = exp_dir / (base if n == 1 else f"{base}.{n}")
        try:
            path.mkdir()
        except FileExistsError:
            continue
        return path
    raise RuntimeError(f"cannot make a fresh run directory for {base} in {exp_dir}")


def claim_stamp(root: Path, suffix: str, record: dict, now: dt.datetime | None = None) -> str:
    """A stamp that no other batch in root holds, claimed by creating the
    batch's record ``<stamp><suffix>`` exclusively (it says ``record`` until
    the batch replaces it); two batches of the same second get ``<stamp>``
    and ``<stamp>.2``.  OSError when root cannot be written."""
    root.mkdir(parents=True, exist_ok=True)
    base = stamp(now)
    taken = [p.name for p in root.iterdir()]
    for n in range(1, 1000):
        stamp_ = base if n == 1 else f"{base}.{n}"
        if any(name.startswith(f"{stamp_}-") for name in taken):
            continue
        path = root / f"{stamp_}{suffix}"
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            continue
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(json.dumps({**record, "stamp": stamp_}, indent=1, sort_keys=True) + "\n")
        except BaseException:
            with contextlib.suppress(OSError):
                path.unlink()
            raise
        return stamp_
    raise FileExistsError(f"{root}: no free stamp for {base}")


def write_text(path: Path, text: str) -> None:
    """Atomic (contract.files): a reader (or a crash) never sees half a file;
    when the write fails (a full disk, an interrupt) the old file stays and
    no .tmp is left."""
    write_atomic(path, text)


def write_json(path: Path, value: Any) -> None:
    write_text(path, json.dumps(value, indent=1, sort_keys=True, default=str) + "\n")


class WriteProblem(str):
    """What write_status could not write (a line), and whether the disk was
    full (else: the directory went away or stopped being writable)."""

    disk_full: bool = False


def _problem(text: str, disk_full: bool) -> WriteProblem:
    out = WriteProblem(text)
    out.disk_full = disk_full
    return out


def write_status(path: Path, value: dict, short: dict) -> WriteProblem | None:
    """write_json; where that fails (a full disk has no room for the new
    file) the file already there is rewritten in place with ``short``, a few
    keys that fit in the room it holds, so a record never says "running" of
    something that ended.  None, or a line saying what was not written."""
    try:
        write_json(path, value)
        return None
    except OSError as exc:
        problem = _problem(f"{path}: not written ({exc.strerror or exc})", is_disk_full(exc))
    data = (json.dumps(short, sort_keys=True, default=str) + "\n").encode()
    try:
        with open(path, "r+b") as f:
            if len(data) > os.fstat(f.fileno()).st_size:
                return problem
            f.write(data)
            f.truncate()
    except OSError:
        return problem
    return _problem(f"{problem}; rewritten in place with {', '.join(sorted(short))} only", problem.disk_full)


def identity(path: Path) -> tuple[int, int] | None:
    """A directory's (device, inode): the same path with another identity
    is another directory (the first removed, a new one made in its place)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def lost(run_dir: Path, made: tuple[int, int] | None) -> str | None:
    """Why a run directory no longer holds its run's records (removed, or
    replaced by another of the same name), or None while it does.  Its
    meta.json, written before anything else of the run, must still be
    there too: a directory made anew may get the inode number the removed
    one freed."""
    if made is None:
        return None
    now = identity(run_dir)
    if now == made and (run_dir / "meta.json").exists():
        return None
    what = "was removed" if now is None else "was removed and made anew (by a later write)"
    return f"its run directory {run_dir} {what} during or after the run: its records are lost"


def mark_lost(results) -> list[str]:
    """Runs that ended ok whose run directory has gone since (``lost``):
    failed, with that reason (a summary never counts a run without its
    records as ok).  One line per run marked."""
    lines = []
    for res in results:
        why = lost(res.run_dir, res.dir_id) if res.status == "ok" else None
        if why:
            res.status, res.reason = "failed", why
            lines.append(f"{res.run_dir.name}: failed ({why})")
    return lines


def settle_claim(root: Path, stamp_: str, suffix: str, status: str) -> None:
    """A batch's claimed record (``claim_stamp``) that still says running
    when the batch ends without its summary (an interrupt in between): it
    says ``status`` instead.  Nothing when it says anything else or cannot
    be read."""
    path = root / f"{stamp_}{suffix}"
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    if isinstance(record, dict) and record.get("status") == "running":
        record.update(status=status, reason=f"the batch ended ({status}) before its summary was written")
        write_status(path, record, {"stamp": stamp_, "status": status})


def write_config(run_dir: Path, spec: ExperimentSpec, run: dict) -> None:
    """config.toml: the resolved config plus [run] (analysis reads it)."""
    (run_dir / "config.toml").write_text(tomli_w.dumps({**spec.as_dict(), "run": run}), encoding="utf-8")


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def _git_commit(repo: Path) -> str | None:
    try:
        r = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True,
                           timeout=5)
        out = r.stdout.strip()
        if r.returncode == 0 and out:
            dirty = subprocess.run(["git", "-C", str(repo), "status", "--porcelain", "--untracked-files=no"],
                                   capture_output=True, text=True, timeout=5).stdout.strip()
            return out + ("-dirty" if dirty else "")
    except (OSError, subprocess.TimeoutExpired):
        pass
    return None


def _tool_version(prog: str, flag: str = "--version") -> str | None:
    path = shutil.which(prog)
    if not path:
        return None
    try:
        r = subprocess.run([path, flag], capture_output=True, text=True, timeout=5)
        return (r.stdout or r.stderr).strip().splitlines()[0] if (r.stdout or r.stderr).strip() else "unknown"
    except (OSError, subprocess.TimeoutExpired, IndexError):
        return "unknown"


def versions(repo: Path) -> dict[str, Any]:
    """What ran: computed once per runner invocation."""
    return {
        "symphony_testbed": _version("symphony-testbed"),
        "git_commit": _git_commit(repo),
        "python": sys.version.split()[0],
        "numpy": _version("numpy"),
        "mininet": getattr(mininet.net, "VERSION", None),
        "simple_switch": _tool_version("simple_switch"),
        "p4c": _tool_version("p4c"),
        "iproute2": _tool_version("ip", "-V"),
    }


def host_info() -> dict[str, Any]:
    u = platform.uname()
    return {"kernel": u.release, "machine": u.machine, "hostname": u.node, "cpus": os.cpu_count()}
