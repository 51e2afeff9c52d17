"""Which switch target a run can use: BMv2 (simple_switch) or the software twin,
and whether the compiled BMv2 program is current.

`auto` means bmv2 where the BMv2 toolchain is installed (as in the VM that
`vagrant up` builds, see docs/vm.md), else soft. The check only looks things up
(PATH, importlib's finder); it starts nothing and imports nothing heavy, so
pytest can call it at collection time.

``bmv2_program_stale`` is the one definition of a stale BMv2 program
(missing, or older than a P4 source it is compiled from): the network refuses
such a program and the conformance rig, the test suite (tests/conftest.py)
and `experiments run`/`net` (experiments/cli_common.py) rebuild it with
``build_bmv2_program``, so none runs yesterday's program against today's
control plane.  Only that function starts anything.
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from contract.absent import pretends_absent, reason

TARGETS = ("auto", "bmv2", "soft")

REPO_ROOT = Path(__file__).resolve().parents[2]
BMV2_JSON = REPO_ROOT / "build" / "bmv2" / "symphony.json"     # `make p4` compiles p4/symphony.p4 here
P4_DIR = REPO_ROOT / "p4"
# what p4/symphony.p4 includes for v1model (t2na/ is Tofino2's and tests/ holds vectors)
BMV2_SOURCES = ("symphony.p4", "include", "v1model")

# What the bmv2 target needs, by the name a user would look for.
BMV2_PROGRAMS = ("simple_switch",)
# Either compiler driver produces build/bmv2/symphony.json (`make p4`).
BMV2_COMPILERS = ("p4c-bm2-ss", "p4c")
# p4utils starts the switches (P4Switch); sswitch_runtime/bm_runtime (Thrift stubs)
# and bmpy_utils are BMv2's modules that p4utils' SimpleSwitchThriftAPI imports;
# thrift is their runtime.
BMV2_PYTHON_MODULES = ("p4utils", "sswitch_runtime", "bm_runtime", "bmpy_utils", "thrift")

VM_HINT = "they come with the VM: `vagrant up`, see docs/vm.md"


class TargetError(ValueError):
    """A target was asked for that cannot run here (one-line message)."""


def _which(prog: str) -> str | None:
    """shutil.which, but nothing where SYMPHONY_ABSENT hides the BMv2 toolchain (contract/absent.py)."""
    return None if pretends_absent("bmv2") else shutil.which(prog)


def _module_present(name: str) -> bool:
    if pretends_absent("bmv2"):
        return False
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def missing_bmv2_parts(which: Callable[[str], str | None] = _which,
                       has_module: Callable[[str], bool] = _module_present) -> list[str]:
    """Names of the BMv2 toolchain parts that are not installed (empty: all there)."""
    missing = [prog for prog in BMV2_PROGRAMS if not which(prog)]
    if not any(which(c) for c in BMV2_COMPILERS):
        missing.append("/".join(BMV2_COMPILERS))
    missing += [f"python module {m}" for m in BMV2_PYTHON_MODULES if not has_module(m)]
    return missing


def bmv2_available(**lookups) -> bool:
    """True when simple_switch, a p4c BMv2 compiler and p4utils (with BMv2's Thrift
    modules) are all installed."""
    return not missing_bmv2_parts(**lookups)


def bmv2_skip_reason(**lookups) -> str:
    """Why BMv2-only tests skip here; empty when nothing is missing."""
    missing = missing_bmv2_parts(**lookups)
    if not missing:
        return ""
    if not lookups and pretends_absent("bmv2"):
        return reason("bmv2")
    return f"simple_switch/p4c not installed (missing: {', '.join(missing)}; {VM_HINT})"


def resolve_target(name: str, **lookups) -> str:
    """"auto" | "bmv2" | "soft" -> "bmv2" | "soft"; TargetError for an unknown
    name or for bmv2 where its toolchain is missing."""
    if name not in TARGETS:
        raise TargetError(f"unknown target {name!r}: choose one of {', '.join(TARGETS)}")
    if name == "soft":
        return "soft"
    missing = missing_bmv2_parts(**lookups)
    if name == "auto":
        return "soft" if missing else "bmv2"
    if missing:
        raise TargetError(f"target bmv2 needs {', '.join(missing)}, not installed here "
                          f"({VM_HINT}); or use --target soft")
    return "bmv2"


def _shown(path: Path) -> str:
    return str(path.relative_to(REPO_ROOT)) if path.is_relative_to(REPO_ROOT) else str(path)


def bmv2_program_stale(json_path: Path = BMV2_JSON, p4_dir: Path = P4_DIR) -> str:
    """Why the compiled BMv2 program is stale, in one line that says `make
    p4`: missing, or older than a P4 source it is compiled from
    (BMV2_SOURCES under p4_dir; a Tofino2-only change leaves it current).
    Empty when it is current."""
    json_path = Path(json_path)
    try:
        built = json_path.stat().st_mtime
    except FileNotFoundError:
        return f"{_shown(json_path)} is missing: build it with `make p4`"
    for name in BMV2_SOURCES:
        source = Path(p4_dir) / name
        for p in sorted(source.rglob("*.p4")) if source.is_dir() else [source]:
            if p.is_file() and p.stat().st_mtime > built:
                return f"{_shown(json_path)} is older than {_shown(p)}: rebuild it with `make p4`"
    return ""


def build_bmv2_program(json_path: Path = BMV2_JSON) -> None:
    """`make p4` (the Makefile holds the compiler's command line) when the
    program is stale.  Make's output goes to stderr, so a caller whose
    stdout is a protocol (a test's child process) keeps it clean.
    TargetError with the output's last line when the build fails."""
    if not bmv2_program_stale(json_path):
        return
    r = subprocess.run(["make", "--no-print-directory", "p4"], cwd=REPO_ROOT, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    sys.stderr.write(r.stdout)
    if r.returncode != 0:
        last = [x for x in r.stdout.splitlines() if x.strip()][-1:] or ["no output"]
        raise TargetError(f"`make p4` failed (exit {r.returncode}): {last[0]}")
