"""The shared gate for BMv2-only tests (tests/conftest.py: pytest.mark.bmv2 and the
`bmv2` marker), target resolution and the stale BMv2 program
(topologies/switch/targets.py).

Where simple_switch/p4c are missing (here) BMv2-only tests must be collected
and reported as skipped with a reason that says where the toolchain comes
from, never silently missing; in the VM they run.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap

import pytest

from contract.absent import pretends_absent
from tests.harness import REPO
from topologies.switch import targets
from topologies.switch.targets import (
    TargetError,
    bmv2_available,
    bmv2_program_stale,
    bmv2_skip_reason,
    build_bmv2_program,
    missing_bmv2_parts,
    resolve_target,
)


def lookups(programs=(), modules=()):
    """Fake PATH and import lookups holding exactly the given names."""
    return {"which": lambda p: f"/usr/bin/{p}" if p in programs else None,
            "has_module": lambda m: m in modules}


FULL = lookups(programs=("simple_switch", "p4c-bm2-ss"),
               modules=("p4utils", "sswitch_runtime", "bm_runtime", "bmpy_utils", "thrift"))
NOTHING = lookups()


# --- targets.py: pure lookups -------------------------------------------------------------

def test_everything_installed_means_bmv2():
    assert missing_bmv2_parts(**FULL) == []
    assert bmv2_available(**FULL) and bmv2_skip_reason(**FULL) == ""
    assert resolve_target("auto", **FULL) == "bmv2"
    assert resolve_target("bmv2", **FULL) == "bmv2"
    assert resolve_target("soft", **FULL) == "soft"


def test_either_compiler_driver_will_do():
    only_p4c = lookups(programs=("simple_switch", "p4c"),
                       modules=("p4utils", "sswitch_runtime", "bm_runtime", "bmpy_utils", "thrift"))
    assert bmv2_available(**only_p4c)


@pytest.mark.parametrize("drop", ["simple_switch", "p4c-bm2-ss", "p4utils", "sswitch_runtime", "bmpy_utils",
                                  "thrift"])
def test_each_missing_part_is_named(drop):
    programs = tuple(p for p in ("simple_switch", "p4c-bm2-ss") if p != drop)
    modules = tuple(m for m in ("p4utils", "sswitch_runtime", "bm_runtime", "bmpy_utils", "thrift")
                    if m != drop)
    partial = lookups(programs, modules)
    missing = missing_bmv2_parts(**partial)
    assert len(missing) == 1 and drop in missing[0]
    assert resolve_target("auto", **partial) == "soft"
    with pytest.raises(TargetError) as err:
        resolve_target("bmv2", **partial)
    message = str(err.value)
    assert drop in message and "vagrant up" in message and "--target soft" in message
    assert "\n" not in message


def test_reason_says_where_the_toolchain_comes_from():
    reason = bmv2_skip_reason(**NOTHING)
    assert reason.startswith("simple_switch/p4c not installed")
    assert "vagrant up" in reason and "docs/vm.md" in reason


def test_unknown_target_is_a_one_line_error():
    with pytest.raises(TargetError, match="unknown target 'tofino'.*auto, bmv2, soft"):
        resolve_target("tofino", **FULL)


# --- targets.py: the stale BMv2 program ---------------------------------------------------

@pytest.fixture
def p4_tree(tmp_path):
    """p4/ as the BMv2 program is compiled from it, a JSON newer than every source."""
    p4 = tmp_path / "p4"
    for name in ("symphony.p4", "include/control.p4", "v1model/main.p4", "t2na/main.p4"):
        (p4 / name).parent.mkdir(parents=True, exist_ok=True)
        (p4 / name).write_text("")
        os.utime(p4 / name, (1000, 1000))
    built = tmp_path / "symphony.json"
    built.write_text("{}")
    os.utime(built, (2000, 2000))
    return p4, built


def test_a_program_newer_than_its_sources_is_current(p4_tree):
    p4, built = p4_tree
    assert bmv2_program_stale(built, p4) == ""
    os.utime(p4 / "t2na" / "main.p4", (3000, 3000))        # Tofino2's: not compiled into it
    assert bmv2_program_stale(built, p4) == ""


@pytest.mark.parametrize("source", ["symphony.p4", "include/control.p4", "v1model/main.p4"])
def test_a_program_older_than_a_source_is_stale_and_says_make_p4(p4_tree, source):
    p4, built = p4_tree
    os.utime(p4 / source, (3000, 3000))
    assert bmv2_program_stale(built, p4) == f"{built} is older than {p4 / source}: rebuild it with `make p4`"


def test_a_missing_program_is_stale(p4_tree):
    p4, built = p4_tree
    built.unlink()
    assert bmv2_program_stale(built, p4) == f"{built} is missing: build it with `make p4`"


def test_build_runs_make_p4_only_for_a_stale_program_and_says_why_it_failed(tmp_path, monkeypatch, capsys):
    calls = []

    def fake_run(cmd, **kw):
        calls.append(cmd)
        return subprocess.CompletedProcess(cmd, 2, stdout="p4c-bm2-ss ...\nsymphony.p4(3): error: boom\n")
    monkeypatch.setattr(targets.subprocess, "run", fake_run)
    fresh = tmp_path / "fresh.json"
    fresh.write_text("{}")
    os.utime(fresh, (4e9, 4e9))                              # newer than every source
    build_bmv2_program(fresh)
    assert calls == []
    with pytest.raises(TargetError, match=r"`make p4` failed \(exit 2\): symphony.p4\(3\): error: boom$"):
        build_bmv2_program(tmp_path / "missing.json")
    assert calls == [["make", "--no-print-directory", "p4"]]
    assert "error: boom" in capsys.readouterr().err            # make's output on stderr, never stdout


def test_the_repositorys_paths_are_shown_from_its_root():
    missing = REPO / "build" / "bmv2" / "nothing.json"
    assert bmv2_program_stale(missing) == "build/bmv2/nothing.json is missing: build it with `make p4`"


# --- the gates, through pytest itself (tests/conftest.py) --------------------------------

SAMPLE = '''
import pytest

@pytest.mark.bmv2
def test_marked():
    pass

@pytest.mark.parametrize("target", ["soft", pytest.param("bmv2", marks=pytest.mark.bmv2)])
def test_param(target):
    pass

@pytest.mark.root
def test_root():
    pass

def test_plain():
    pass
'''


def run_pytest(args, cwd=REPO):
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
                          cwd=cwd, capture_output=True, text=True, timeout=300)


@pytest.fixture
def sample(tmp_path):
    """A tiny test module beside a conftest that is the project's own."""
    (tmp_path / "conftest.py").write_text(
        f"import sys\nsys.path.insert(0, {str(REPO)!r})\n"
        "from tests.conftest import pytest_collection_modifyitems  # noqa: F401  the gates under test\n")
    (tmp_path / "test_sample.py").write_text(textwrap.dedent(SAMPLE))
    return tmp_path


def said_missing(line: str, where: bool = True) -> bool:
    """A skip line gives the reason BMv2 is missing here: not installed, with
    where it comes from, or SYMPHONY_ABSENT's pretence where it names bmv2."""
    if pretends_absent("bmv2"):
        return "SYMPHONY_ABSENT names bmv2" in line
    return "simple_switch/p4c not installed" in line and (not where or "vagrant up" in line)


def test_gated_tests_are_collected_and_skipped_with_the_reason(sample):
    result = run_pytest(["-c", str(REPO / "pyproject.toml"), "--rootdir", str(sample),
                         "-rs", "-v", str(sample)])
    out = result.stdout
    assert result.returncode == 0, out + result.stderr
    assert "collected 5 items" in out
    assert re.search(r"test_plain PASSED", out) and re.search(r"test_param\[soft\] PASSED", out)
    bmv2 = ["test_marked", r"test_param\[bmv2\]"]
    if bmv2_available():
        assert all(re.search(name + " PASSED", out) for name in bmv2), out
    else:
        assert all(re.search(name + " SKIPPED", out) for name in bmv2), out
        skipped = [line for line in out.splitlines() if line.startswith("SKIPPED") and "needs root" not in line]
        assert skipped and all(said_missing(line) for line in skipped), out
    expect_root = "PASSED" if os.geteuid() == 0 else "SKIPPED"
    assert re.search(r"test_root " + expect_root, out), out


def test_bmv2_marker_selects_the_gated_tests(sample):
    result = run_pytest(["-c", str(REPO / "pyproject.toml"), "--rootdir", str(sample),
                         "-m", "bmv2", "--collect-only", "-q", str(sample)])
    assert result.returncode == 0, result.stdout + result.stderr
    selected = [line.split("::")[1] for line in result.stdout.splitlines() if "::" in line]
    assert sorted(selected) == ["test_marked", "test_param[bmv2]"]


@pytest.mark.skipif(bmv2_available(), reason="BMv2 is installed: the bmv2 tests run for real in this suite")
def test_every_bmv2_test_of_the_suite_is_skipped_with_the_reason_here():
    result = run_pytest(["-m", "bmv2", "-rs", "-q", "--continue-on-collection-errors", "tests"])
    out = result.stdout
    lines = out.strip().splitlines()
    assert lines, result.stderr[-3000:]
    summary = lines[-1]
    assert "error" not in summary.lower(), out[-3000:]   # a bmv2 test module that fails to import
    assert "passed" not in summary and "failed" not in summary, summary
    skipped = [line for line in out.splitlines() if line.startswith("SKIPPED")]
    assert skipped, out[-3000:]
    for line in skipped:
        assert said_missing(line, where=False), line
