"""Run directories, made once and never overwritten (a numeric suffix keeps
two runs of one second apart), and what goes into them: the resolved config,
meta.json written atomically, the versions of what ran.  Their layout:
experiments/README.md, "Run directory"."""

from __future__ import annotations

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


def write_json(path: Path, value: Any) -> None:
    """Atomic: a reader (or a crash) never sees half a file."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(value, indent=1, sort_keys=True, default=str) + "\n", encoding="utf-8")
    os.replace(tmp, path)


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
