"""scripts/build-p4-toolchain.sh (issue 50), tested without building anything.

As tests/scripts/test_provision_vm.py does for the VM: the script runs against
stand-in commands (tests/harness/data/toolchain_shim.py) on a PATH holding
nothing else but a few basic tools, a throwaway virtual environment playing the
system python3 (with a fake pip), and temporary directories for the prefix, the
sources and the build.  That shows the argument parsing, the configure flags of
each BMv2 flavour, which steps run, that each makes its own check pass, and that
a second run skips all of them.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.harness import REPO

SCRIPT = REPO / "scripts" / "build-p4-toolchain.sh"
SHIM = REPO / "tests" / "harness" / "data" / "toolchain_shim.py"
SHIM_COMMANDS = ["apt-get", "dpkg-query", "dpkg-buildflags", "git", "make", "cmake", "ldconfig"]
TOOLS = ["bash", "env", "sed", "head", "tr", "grep", "cat", "mkdir", "mv", "dirname", "find", "sort", "id",
         "rm", "ls", "realpath", "chmod"]
STEPS = ["apt-bmv2", "src-behavioral-model", "bmv2", "bmv2-python-path", "apt-p4c", "src-p4c",
         "src-p4runtime", "p4c", "apt-p4utils", "src-p4-utils", "p4utils"]
TREES = ["behavioral-model", "p4c", "p4runtime", "p4-utils"]
PIN = {"behavioral-model": "9674187f610c81878e3586f9a1746dcc7f903114",
       "p4c": "32893b7e879db9e1c368d3568d41cb3d20c034d0",
       "p4runtime": "1e771c4e05c4e7e250df00212b3ca02ee3202d71",
       "p4-utils": "83b118bbae530b31cc74e7fa32f9174f7c0a1184"}
FAKE_PIP = '''import json, os, sys
from pathlib import Path
args = sys.argv[1:]
with open(os.environ["SHIM_LOG"], "a") as log:
    log.write(json.dumps(["pip", *args]) + "\\n")
tree = args[args.index("-e") + 1]
(Path(__file__).parent.parent / "p4utils-editable.pth").write_text(tree + "\\n")
'''


def is_change(call: list[str]) -> bool:
    """A call that changes something, as opposed to the checks (dpkg-query, git rev-parse)."""
    name, args = call[0], call[1:]
    if name in ("apt-get", "make", "cmake", "ldconfig", "pip", "configure"):
        return True
    return name == "git" and "rev-parse" not in args


class FakeWorld:
    def __init__(self, tmp: Path):
        self.tmp = tmp
        self.shims, self.tools, self.state = tmp / "shims", tmp / "tools", tmp / "state"
        self.prefix, self.src, self.work = tmp / "prefix", tmp / "src", tmp / "work"
        self.log = tmp / "shim.log"
        for d in (self.shims, self.tools, self.state):
            d.mkdir(parents=True)
        self.os_release = tmp / "os-release"
        self.set_os("debian", "12")
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp / "sysvenv")], check=True)
        self.python = tmp / "sysvenv" / "bin" / "python"   # plays /usr/bin/python3
        self.site = Path(subprocess.check_output(
            [str(self.python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], text=True).strip())
        (self.site / "pip").mkdir()
        (self.site / "pip" / "__init__.py").write_text("")
        (self.site / "pip" / "__main__.py").write_text(FAKE_PIP)
        for name in SHIM_COMMANDS:
            (self.shims / name).symlink_to(SHIM)
        for name in TOOLS:
            (self.tools / name).symlink_to(shutil.which(name))
        self.log.write_text("")

    def set_os(self, os_id: str, version: str) -> None:
        self.os_release.write_text(f'NAME="Fake"\nID={os_id}\nVERSION_ID="{version}"\n')

    def make_trees(self, git_head: dict[str, str] | None = None) -> None:
        """Source trees for --src: plain trees, or git clones at the given commits."""
        for name in TREES:
            subprocess.run([str(SHIM), "--make-tree", name, str(self.src / name)], env=self.env(), check=True)
            if git_head and name in git_head:
                (self.src / name / ".git").mkdir()
                (self.src / name / ".git" / "HEAD").write_text(git_head[name])

    def env(self, **extra: str) -> dict[str, str]:
        return {"PATH": f"{self.shims}:{self.tools}", "TOOLCHAIN_PYTHON": str(self.python),
                "TOOLCHAIN_OS_RELEASE": str(self.os_release), "TOOLCHAIN_ALLOW_NONROOT": "1",
                "FAKE_STATE": str(self.state), "SHIM_LOG": str(self.log), **extra}

    def run(self, *args: str, src: bool = True, **extra: str) -> subprocess.CompletedProcess:
        self.log.write_text("")
        base = ["--prefix", str(self.prefix), "--work", str(self.work), "--jobs", "2"]
        if src:
            base += ["--src", str(self.src)]
        return subprocess.run(["bash", str(SCRIPT), *base, *args], env=self.env(**extra), capture_output=True,
                              text=True, timeout=120)

    def calls(self) -> list[list[str]]:
        return [json.loads(line) for line in self.log.read_text().splitlines()]

    def configure_args(self) -> list[str]:
        [call] = [c for c in self.calls() if c[0] == "configure"]
        return call[1:]


def outcomes(stdout: str) -> dict[str, str]:
    """step name -> what the script said about it (skip / would-run / run+done)."""
    seen: dict[str, str] = {}
    for line in stdout.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[0] == "build-p4-toolchain:" and parts[2] in STEPS \
                and parts[1] in ("skip", "would-run", "run", "done"):
            seen[parts[2]] = seen.get(parts[2], "") + ("+" if parts[2] in seen else "") + parts[1]
    return seen


@pytest.fixture
def world(tmp_path):
    return FakeWorld(tmp_path)


def bare(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True, timeout=30)


# --- static checks and arguments ---------------------------------------------------------

@pytest.mark.skipif(shutil.which("shellcheck") is None, reason="shellcheck not installed (make setup installs it)")
def test_script_passes_shellcheck():
    result = subprocess.run(["shellcheck", "-x", str(SCRIPT)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_help_names_every_option():
    result = bare("--help")
    assert result.returncode == 0
    for option in ("--prefix", "--src", "--work", "--only", "--jobs", "--bmv2-flavour", "--dry-run"):
        assert option in result.stdout


@pytest.mark.parametrize("args", [["--bogus"], ["--only", "ovs"], ["--only"], ["--jobs", "0"], ["--jobs", "two"],
                                  ["--bmv2-flavour", "fast"], ["--prefix", "relative/dir"], ["--prefix"],
                                  ["--src", "/no/such/dir"], ["extra"]])
def test_bad_options_are_refused_in_one_line(args):
    result = bare(*args)
    assert result.returncode == 2
    assert result.stdout == "" and result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith("build-p4-toolchain: ") and "--help" in result.stderr


def test_only_selects_parts_in_a_fixed_order(world):
    result = world.run("--dry-run", "--only", "p4utils", "--only", "bmv2", src=False)
    assert result.returncode == 0, result.stderr
    assert list(outcomes(result.stdout)) == ["apt-bmv2", "src-behavioral-model", "bmv2", "bmv2-python-path",
                                             "apt-p4utils", "src-p4-utils", "p4utils"]
    assert "parts: p4utils bmv2;" in result.stdout   # as given; the steps run bmv2 first


# --- dry runs ------------------------------------------------------------------------------

def test_dry_run_plans_every_step_names_the_performance_flags_and_changes_nothing(world):
    result = world.run("--dry-run", src=False)
    assert result.returncode == 0, result.stderr
    assert outcomes(result.stdout) == {step: "would-run" for step in STEPS}
    assert not [c for c in world.calls() if is_change(c)]
    assert not world.prefix.exists() and not world.work.exists()
    out = result.stdout
    for flag in ("--disable-logging-macros", "--disable-elogger", "--without-packet-trace", "--with-thrift",
                 "'CXXFLAGS=-g0 -O3'", f"--prefix={world.prefix}"):
        assert flag in out
    assert "--enable-debugger" not in out
    assert f"git clone -q https://github.com/p4lang/behavioral-model.git {world.work}/behavioral-model" in out
    for name, pin in PIN.items():
        assert f"git -C {world.work}/{name} checkout -q {pin}" in out
    for flag in ("-DENABLE_BMV2=ON", "-DENABLE_P4TEST=ON", "-DENABLE_EBPF=OFF", "-DENABLE_DPDK=OFF",
                 "-DENABLE_P4TC=OFF", "-DENABLE_UBPF=OFF", "-DP4C_USE_PREINSTALLED_PROTOBUF=ON",
                 f"-DFETCHCONTENT_SOURCE_DIR_P4RUNTIME={world.work}/p4runtime"):
        assert flag in out
    assert "pip install --no-deps -e" in out
    assert "apt-get install" in out and "thrift-compiler" in out and "libgc-dev" in out


def test_dry_run_of_the_package_flavour_names_debian_rules_flags(world):
    result = world.run("--dry-run", "--only", "bmv2", "--bmv2-flavour", "package", src=False)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    for flag in ("--enable-debugger", "--with-pdfixed", "--with-thrift", "--with-nanomsg",
                 "'CXXFLAGS=-g -O2 -fstack-protector-strong'", "'LDFLAGS=-Wl,-z,relro -Wl,-z,now'"):
        assert flag in out
    for flag in ("--disable-logging-macros", "--disable-elogger", "--without-packet-trace", "-O3"):
        assert flag not in out
    assert "make -j 2 -C proto" in out                 # packet tracing on: src/ links proto/
    assert f"{world.work}/build/bmv2-package" in out   # a build directory per flavour


# --- behaviour in the fake world -------------------------------------------------------------

def test_first_run_builds_everything_and_second_run_skips_every_step(world):
    world.make_trees()
    first = world.run()
    assert first.returncode == 0, first.stdout + first.stderr
    assert outcomes(first.stdout) == {step: "run+done" for step in STEPS if not step.startswith("src-")} | {
        step: "skip" for step in STEPS if step.startswith("src-")}   # --src: the trees are there
    args = world.configure_args()
    assert args[0] == f"--prefix={world.prefix}"
    assert {"--disable-logging-macros", "--disable-elogger", "--without-packet-trace",
            "CXXFLAGS=-g0 -O3", "CFLAGS=-g0 -O3"} <= set(args)
    record = (world.prefix / "share/symphony-toolchain/bmv2.build").read_text().splitlines()
    assert "flavour=performance" in record and f"commit=tree:{world.src}/behavioral-model" in record
    assert (world.site / "symphony-bmv2.pth").read_text().split() == [
        str(world.prefix / "lib/python3.11/site-packages")]
    for part in ("bmv2", "p4c", "p4utils"):
        assert f"took {part}:" in first.stdout
    assert "took in all:" in first.stdout

    second = world.run()
    assert second.returncode == 0, second.stdout + second.stderr
    assert outcomes(second.stdout) == {step: "skip" for step in STEPS}
    assert [c for c in world.calls() if is_change(c)] == []
    dry = world.run("--dry-run")
    assert outcomes(dry.stdout) == {step: "skip" for step in STEPS}


def test_only_what_is_undone_runs_again(world):
    world.make_trees()
    assert world.run().returncode == 0
    (world.prefix / "bin/p4test").unlink()
    (world.site / "symphony-bmv2.pth").unlink()
    again = world.run()
    assert again.returncode == 0, again.stdout + again.stderr
    expected = {step: "skip" for step in STEPS}
    expected.update({"bmv2-python-path": "run+done", "p4c": "run+done"})
    assert outcomes(again.stdout) == expected


def test_another_flavour_in_the_same_prefix_builds_bmv2_again(world):
    world.make_trees()
    assert world.run("--only", "bmv2").returncode == 0
    again = world.run("--only", "bmv2", "--bmv2-flavour", "package")
    assert again.returncode == 0, again.stdout + again.stderr
    assert outcomes(again.stdout)["bmv2"] == "run+done"
    assert "--enable-debugger" in world.configure_args()
    assert "flavour=package" in (world.prefix / "share/symphony-toolchain/bmv2.build").read_text()


def test_a_second_prefix_leaves_the_python_path_of_the_first(world):
    world.make_trees()
    assert world.run("--only", "bmv2").returncode == 0
    pth = (world.site / "symphony-bmv2.pth").read_text()
    other = world.tmp / "package-prefix"
    result = world.run("--only", "bmv2", "--bmv2-flavour", "package", "--prefix", str(other))
    assert result.returncode == 0, result.stdout + result.stderr
    assert outcomes(result.stdout)["bmv2-python-path"] == "skip"
    assert (world.site / "symphony-bmv2.pth").read_text() == pth
    assert (other / "bin/simple_switch").exists()


def test_git_clones_at_the_pinned_commits_without_src(world):
    result = world.run(src=False)
    assert result.returncode == 0, result.stdout + result.stderr
    calls = world.calls()
    for name, pin in PIN.items():
        assert any(c[:2] == ["git", "clone"] and c[-1] == str(world.work / name) for c in calls)
        assert (world.work / name / ".git" / "HEAD").read_text() == pin
    assert outcomes(world.run(src=False).stdout) == {step: "skip" for step in STEPS}


def test_a_src_clone_at_another_commit_is_refused_naming_the_pin(world):
    world.make_trees(git_head={"behavioral-model": "a" * 40})
    result = world.run("--only", "bmv2")
    assert result.returncode != 0
    assert f"checkout {PIN['behavioral-model']}" in result.stderr and "a" * 40 in result.stderr


def test_p4utils_is_never_installed_without_bmv2(world):
    world.make_trees()
    result = world.run("--only", "p4utils")
    assert result.returncode != 0
    assert "build bmv2 before p4utils" in result.stderr
    assert not any(c[0] == "pip" for c in world.calls())


def test_a_step_whose_check_still_fails_stops_the_script_naming_it(world):
    world.make_trees()
    result = world.run(FAKE_NO_SIMPLE_SWITCH="1")
    assert result.returncode != 0
    assert "FAILED: bmv2: ran, but its check still fails" in result.stderr
    assert "run p4c" not in result.stdout


def test_other_releases_are_refused_unless_allowed(world):
    world.set_os("ubuntu", "20.04")
    refused = world.run("--dry-run", src=False)
    assert refused.returncode != 0 and refused.stderr.count("\n") == 1
    assert "Debian 12" in refused.stderr and "20.04" in refused.stderr
    allowed = world.run("--dry-run", src=False, TOOLCHAIN_ALLOW_ANY_OS="1")
    assert allowed.returncode == 0 and "WARNING" in allowed.stdout
    for os_id, version in (("ubuntu", "22.04"), ("ubuntu", "24.04"), ("debian", "12")):
        world.set_os(os_id, version)
        assert world.run("--dry-run", src=False).returncode == 0
