"""Files the testbed writes for others to read (run records, summaries and
reports, switches/<name>.json, the twin's --dump, the labs' state files),
written whole or not at all: the one definition every layer uses.

A reader (the runner, the analysis, `make clean-net`) or a crash never sees
half a file, and a write that fails (a full disk, an interrupt) leaves the
old file as it was and no temporary file beside it.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


def temporary_for(path: Path) -> Path:
    """The temporary file write_atomic writes before it renames it to `path`."""
    return path.with_name(path.name + ".tmp")


def write_atomic(path: Path | str, text: str, what: str | None = None) -> None:
    """Write `text` to a temporary file beside `path`, then rename it over
    `path`.  An OSError keeps its errno (contract.exits.is_disk_full still
    tells a full disk); with `what` it names `path` as its filename and says
    what was being written: "cannot write <what>: No space left on device"."""
    path = Path(path)
    tmp = temporary_for(path)
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        if isinstance(exc, OSError) and what is not None:
            raise OSError(exc.errno, f"cannot write {what}: {exc.strerror or exc}", str(path)) from exc
        raise


# The system's own directories: no command of the testbed makes a directory
# in one (a run, a report, a cache), whether its path names one or reaches
# one through a symlink.  "/" itself too (a results root there would put
# <experiment>/ beside /etc), not what lies below it.
SYSTEM_DIRS = ("/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/libx32", "/proc", "/run", "/sbin",
               "/sys", "/usr", "/var/cache", "/var/lib", "/var/log", "/var/spool")


def system_dir(path: Path | str) -> str | None:
    """The system directory (SYSTEM_DIRS, or "/") that `path` is or lies
    in once every symlink in it is followed (a path that does not exist yet
    is resolved as far as it does); None for any other place."""
    resolved = Path(path).resolve()
    if resolved == Path("/"):
        return "/"
    return next((d for d in SYSTEM_DIRS if resolved.is_relative_to(d)), None)


def refusal_of_dir(path: Path | str) -> str | None:
    """Why no directory is made at `path`, as the end of a one-line refusal
    (system_dir: it is or lies in a system directory); None where one may be."""
    where = system_dir(path)
    if where is None:
        return None
    what = "the root directory" if where == "/" else f"inside the system directory {where}"
    return f"{what}, where the testbed makes no directory: give one of your own"
