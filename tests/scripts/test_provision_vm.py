"""The VM's provisioning (issue 8), tested without Vagrant or network access.

scripts/provision-vm.sh is run here against a fake world: stand-in commands
(tests/harness/data/provision_shim.py) on a PATH that holds nothing else but a few
basic tools, a throwaway virtual environment playing the system python3, and
temporary directories for /etc/apt, the repository and p4-utils.  That shows
the script's real logic: which steps run, that each makes its own check pass,
that a second run skips all of them, and that BMv2's Python modules, installed
where Ubuntu's python3 does not look, import with an empty environment (as
under sudo) only thanks to the script's .pth file.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.harness import REPO

SCRIPT = REPO / "scripts" / "provision-vm.sh"
VAGRANTFILE = REPO / "Vagrantfile"
SHIM = REPO / "tests" / "harness" / "data" / "provision_shim.py"
VAGRANT_STUB = REPO / "tests" / "harness" / "data" / "vagrant_stub.rb"

STEPS = ["base-packages", "p4lang-repo", "p4lang-packages", "mininet", "bmv2-python-path",
         "p4utils-clone", "p4utils", "git-safe-directory", "project-setup", "venv-bmv2-python-path", "p4-build"]
# PROVISION_TOOLCHAIN=source: scripts/build-p4-toolchain.sh in place of the p4lang repository and packages
SOURCE_STEPS = ["base-packages", "toolchain-source", *STEPS[3:]]
SHIM_COMMANDS = ["apt-get", "dpkg-query", "dpkg", "git", "pip", "make", "curl", "gpg"]
# the only real programs the script may run in the fake world
TOOLS = ["bash", "env", "sed", "head", "tr", "grep", "cat", "mkdir", "mv", "dirname", "find",
         "sort", "id"]
# calls that change something (as opposed to checks: dpkg-query, dpkg -L, git rev-parse, make -q)
def is_change(call: list[str]) -> bool:
    name, args = call[0], call[1:]
    if name in ("apt-get", "curl", "gpg", "pip"):
        return True
    if name == "git":
        return "rev-parse" not in args and "--get-all" not in args
    if name == "make":
        return "-q" not in args and args[-1] != "test"
    if name == "build-p4-toolchain":
        return "--dry-run" not in args
    return False

# stands in for scripts/build-p4-toolchain.sh: logs its call; "builds" BMv2 and p4c
# (programs in FAKE_BIN, BMv2's modules where autotools puts them under /usr/local)
# and plans nothing more once it has
TOOLCHAIN_STUB = r"""#!/bin/bash
exec {python} - "$@" <<'END'
import json, os, sys
from pathlib import Path
env = os.environ
args = sys.argv[1:]
with open(env["SHIM_LOG"], "a") as log:
    log.write(json.dumps(["build-p4-toolchain", *args]) + "\n")
done = Path(env["FAKE_STATE"]) / "toolchain-built"
if "--dry-run" in args:
    print("build-p4-toolchain: " + ("skip bmv2 (already done)" if done.exists() else "would-run bmv2"))
    sys.exit(0)
for name in ("simple_switch", "simple_switch_CLI", "p4c", "p4c-bm2-ss"):
    path = Path(env["FAKE_BIN"]) / name
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(0o755)
site = Path(env["FAKE_ROOT"]) / "usr/local/lib/python3.10/site-packages"
for rel, text in (("sswitch_runtime/__init__.py", "import thrift\nclass SimpleSwitch:\n    pass\n"),
                  ("bm_runtime/__init__.py", ""),
                  ("bmpy_utils.py", "")):
    (site / rel).parent.mkdir(parents=True, exist_ok=True)
    (site / rel).write_text(text)
(Path(env["FAKE_SITE"]) / "thrift").mkdir(exist_ok=True)
(Path(env["FAKE_SITE"]) / "thrift" / "__init__.py").write_text("")
done.write_text("")
END
"""


class FakeWorld:
    def __init__(self, tmp: Path):
        self.tmp = tmp
        self.bin = tmp / "fakebin"            # programs the fake packages install
        self.shims = tmp / "shims"
        self.tools = tmp / "tools"
        self.state = tmp / "state"
        self.root = tmp / "root"              # BMv2's modules land in root/usr/lib/python3.10/site-packages
        self.apt_etc = tmp / "etc-apt"
        self.repo = tmp / "repo"
        self.p4utils = tmp / "p4-utils"
        self.log = tmp / "shim.log"
        for d in (self.bin, self.shims, self.tools, self.state, self.root, self.repo / "p4"):
            d.mkdir(parents=True)
        (self.repo / "p4" / "symphony.p4").write_text("// fake\n")
        self.os_release = tmp / "os-release"
        self.set_os("ubuntu", "22.04")
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp / "sysvenv")], check=True)
        self.python = tmp / "sysvenv" / "bin" / "python"   # plays /usr/bin/python3
        self.site = Path(subprocess.check_output(
            [str(self.python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
            text=True).strip())
        for name in SHIM_COMMANDS:
            (self.shims / name).symlink_to(SHIM)
        for name in TOOLS:
            (self.tools / name).symlink_to(shutil.which(name))

    def set_os(self, os_id: str, version: str) -> None:
        self.os_release.write_text(f'NAME="Fake"\nID={os_id}\nVERSION_ID="{version}"\n')

    def env(self, **extra: str) -> dict[str, str]:
        env = {
            "PATH": f"{self.bin}:{self.shims}:{self.tools}",
            "PROVISION_REPO": str(self.repo),
            "PROVISION_PYTHON": str(self.python),
            "PROVISION_PIP": str(self.shims / "pip"),
            "PROVISION_SUDO": "env -i",        # sudo's point here: the environment is reset
            "PROVISION_APT_ETC": str(self.apt_etc),
            "PROVISION_OS_RELEASE": str(self.os_release),
            "PROVISION_P4UTILS_DIR": str(self.p4utils),
            "PROVISION_BMV2_SEARCH": str(self.root),
            "PROVISION_ALLOW_NONROOT": "1",
            "FAKE_STATE": str(self.state), "FAKE_SITE": str(self.site), "FAKE_BIN": str(self.bin),
            "FAKE_ROOT": str(self.root), "FAKE_PY": str(self.python), "SHIM_LOG": str(self.log),
        }
        env.update(extra)
        return env

    def run(self, **extra: str) -> subprocess.CompletedProcess:
        self.log.write_text("")
        return subprocess.run(["bash", str(SCRIPT)], env=self.env(**extra), capture_output=True,
                              text=True, timeout=120)

    def calls(self) -> list[list[str]]:
        return [json.loads(line) for line in self.log.read_text().splitlines()]


def outcomes(stdout: str, steps: list[str] = STEPS) -> dict[str, str]:
    """step name -> what the script said about it (skip / would-run / run+done)."""
    seen: dict[str, str] = {}
    for line in stdout.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[0] == "provision:" and parts[2] in steps:
            seen[parts[2]] = seen.get(parts[2], "") + ("+" if parts[2] in seen else "") + parts[1]
    return seen


@pytest.fixture
def world(tmp_path):
    return FakeWorld(tmp_path)


# --- static checks ---------------------------------------------------------------------

@pytest.mark.skipif(shutil.which("shellcheck") is None,
                    reason="shellcheck not installed (make setup installs it)")
def test_provision_script_passes_shellcheck():
    result = subprocess.run(["shellcheck", "-x", str(SCRIPT)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.skipif(shutil.which("ruby") is None, reason="ruby not installed (make setup installs it)")
def test_vagrantfile_parses():
    result = subprocess.run(["ruby", "-c", str(VAGRANTFILE)], capture_output=True, text=True)
    assert result.returncode == 0 and "Syntax OK" in result.stdout, result.stderr


def vagrant_settings(**env: str) -> dict:
    result = subprocess.run(["ruby", str(VAGRANT_STUB), str(VAGRANTFILE)], capture_output=True,
                            text=True, env={**os.environ, **env}, cwd=REPO, timeout=60)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.mark.skipif(shutil.which("ruby") is None, reason="ruby not installed (make setup installs it)")
def test_vagrantfile_settings():
    s = vagrant_settings()
    assert s["vm.box"].endswith("ubuntu-22.04") and s["override:libvirt.vm.box"].endswith("ubuntu2204")
    for provider in ("virtualbox", "libvirt"):
        assert s[f"vm.provider({provider}).cpus"] >= 2 and s[f"vm.provider({provider}).memory"] >= 2048
    assert s["vm.synced_folder(.,/vagrant)"]["type"] == "rsync"
    assert ".venv/" in s["vm.synced_folder(.,/vagrant)"]["rsync__exclude"]
    assert s["vm.provision(shell)"]["inline"] == "bash /vagrant/scripts/provision-vm.sh"

    assert s["vm.provision(shell)"]["env"] == {"PROVISION_RUN_TESTS": "1", "PROVISION_TOOLCHAIN": "packages"}

    s = vagrant_settings(SYMPHONY_VM_CPUS="6", SYMPHONY_VM_MEMORY="12288", SYMPHONY_VM_RUN_TESTS="0",
                         SYMPHONY_VM_TOOLCHAIN="source")
    for provider in ("virtualbox", "libvirt"):
        assert s[f"vm.provider({provider}).cpus"] == 6
        assert s[f"vm.provider({provider}).memory"] == 12288
    assert s["vm.provision(shell)"]["env"] == {"PROVISION_RUN_TESTS": "0", "PROVISION_TOOLCHAIN": "source"}


@pytest.mark.skipif(shutil.which("ruby") is None, reason="ruby not installed (make setup installs it)")
@pytest.mark.parametrize("name,value", [("SYMPHONY_VM_CPUS", "four"), ("SYMPHONY_VM_MEMORY", "512"),
                                        ("SYMPHONY_VM_TOOLCHAIN", "obs")])
def test_vagrantfile_rejects_bad_sizes_in_one_line(name, value):
    result = subprocess.run(["ruby", str(VAGRANT_STUB), str(VAGRANTFILE)], capture_output=True,
                            text=True, env={**os.environ, name: value}, cwd=REPO, timeout=60)
    assert result.returncode != 0
    assert result.stderr.strip().count("\n") == 0 and name in result.stderr


# --- behaviour in the fake world -------------------------------------------------------

def test_dry_run_on_a_fresh_machine_plans_every_step_and_changes_nothing(world):
    result = world.run(PROVISION_DRY_RUN="1")
    assert result.returncode == 0, result.stderr
    assert outcomes(result.stdout) == {step: "would-run" for step in STEPS}
    assert not [c for c in world.calls() if is_change(c)]
    assert not world.apt_etc.exists() and not world.p4utils.exists()
    assert not (world.site / "symphony-bmv2.pth").exists()


def test_first_run_installs_and_second_run_skips_every_step(world):
    first = world.run()
    assert first.returncode == 0, first.stdout + first.stderr
    assert outcomes(first.stdout) == {step: "run+done" for step in STEPS}
    assert "verified:" in first.stdout
    calls = world.calls()
    installed = [c for c in calls if c[:2] == ["apt-get", "install"]]
    assert any("p4lang-bmv2" in c and "p4lang-p4c" in c and "p4lang-pi" in c for c in installed)
    assert ["make", "-C", str(world.repo), "test"] in calls
    assert (world.apt_etc / "sources.list.d" / "home:p4lang.list").read_text().strip() == (
        "deb http://download.opensuse.org/repositories/home:/p4lang/xUbuntu_22.04/ /")

    second = world.run()
    assert second.returncode == 0, second.stdout + second.stderr
    assert outcomes(second.stdout) == {step: "skip" for step in STEPS}
    assert [c for c in world.calls() if is_change(c)] == []
    # the checks still ran the verification and the tests
    assert "verified:" in second.stdout and ["make", "-C", str(world.repo), "test"] in world.calls()

    dry = world.run(PROVISION_DRY_RUN="1")
    assert outcomes(dry.stdout) == {step: "skip" for step in STEPS}


def test_bmv2_modules_import_under_an_empty_environment_only_through_the_pth(world):
    assert world.run().returncode == 0
    pth = world.site / "symphony-bmv2.pth"
    assert pth.read_text().split() == [str(world.root / "usr/lib/python3.10/site-packages")]
    imports = "import sswitch_runtime, bm_runtime; from p4utils.utils.sswitch_thrift_API import SimpleSwitchThriftAPI"
    for py in (world.python, world.repo / ".venv" / "bin" / "python"):
        ok = subprocess.run(["env", "-i", str(py), "-c", imports], capture_output=True, text=True)
        assert ok.returncode == 0, ok.stderr
    pth.unlink()
    broken = subprocess.run(["env", "-i", str(world.python), "-c", imports], capture_output=True, text=True)
    assert "No module named 'sswitch_runtime'" in broken.stderr


def test_bmv2_modules_are_found_by_searching_when_dpkg_does_not_list_them(world):
    result = world.run(FAKE_DPKG_L_EMPTY="1")
    assert result.returncode == 0, result.stdout + result.stderr
    assert (world.site / "symphony-bmv2.pth").read_text().split() == [
        str(world.root / "usr/lib/python3.10/site-packages")]


def test_only_the_step_that_is_undone_runs_again(world):
    assert world.run().returncode == 0
    (world.site / "symphony-bmv2.pth").unlink()
    json_file = world.repo / "build" / "bmv2" / "symphony.json"
    os.utime(json_file, (json_file.stat().st_atime - 60, json_file.stat().st_mtime - 60))  # P4 edited since
    again = world.run()
    assert again.returncode == 0, again.stderr
    expected = {step: "skip" for step in STEPS}
    expected.update({"bmv2-python-path": "run+done", "p4-build": "run+done"})
    assert outcomes(again.stdout) == expected


def test_bmv2_without_its_python_modules_fails_loudly(world):
    result = world.run(FAKE_BMV2_NO_PY="1")
    assert result.returncode != 0
    assert "FAILED" in result.stderr and "sswitch_runtime" in result.stderr
    assert "done p4lang-packages" in result.stdout and "done bmv2-python-path" not in result.stdout


def test_failing_tests_fail_the_provisioning(world):
    result = world.run(FAKE_MAKE_TEST_RC="1")
    assert result.returncode != 0 and "make test failed" in result.stderr


def test_other_releases_are_refused_unless_allowed(world):
    world.set_os("ubuntu", "24.04")
    refused = world.run(PROVISION_DRY_RUN="1")
    assert refused.returncode != 0
    assert "22.04" in refused.stderr and "24.04" in refused.stderr and refused.stderr.count("\n") == 1
    allowed = world.run(PROVISION_DRY_RUN="1", PROVISION_ALLOW_ANY_OS="1")
    assert allowed.returncode == 0 and "WARNING" in allowed.stdout


# --- PROVISION_TOOLCHAIN=source (SYMPHONY_VM_TOOLCHAIN) ---------------------------------

@pytest.fixture
def toolchain_stub(tmp_path):
    stub = tmp_path / "build-p4-toolchain.sh"
    stub.write_text(TOOLCHAIN_STUB.replace("{python}", sys.executable))
    return stub


def test_source_toolchain_dry_run_plans_the_build_instead_of_the_packages(world, toolchain_stub):
    result = world.run(PROVISION_DRY_RUN="1", PROVISION_TOOLCHAIN="source",
                       PROVISION_TOOLCHAIN_SCRIPT=str(toolchain_stub))
    assert result.returncode == 0, result.stderr
    assert outcomes(result.stdout, SOURCE_STEPS) == {step: "would-run" for step in SOURCE_STEPS}
    assert "toolchain source" in result.stdout.splitlines()[0]
    assert not [c for c in world.calls() if is_change(c)]


def test_source_toolchain_builds_bmv2_and_p4c_and_a_second_run_skips_it(world, toolchain_stub):
    env = {"PROVISION_TOOLCHAIN": "source", "PROVISION_TOOLCHAIN_SCRIPT": str(toolchain_stub)}
    first = world.run(**env)
    assert first.returncode == 0, first.stdout + first.stderr
    assert outcomes(first.stdout, SOURCE_STEPS) == {step: "run+done" for step in SOURCE_STEPS}
    calls = world.calls()
    assert ["build-p4-toolchain", "--only", "bmv2", "--only", "p4c"] in calls
    assert not any(c[:2] == ["apt-get", "install"] and "p4lang-bmv2" in c for c in calls)
    assert not (world.apt_etc / "sources.list.d" / "home:p4lang.list").exists()
    second = world.run(**env)
    assert second.returncode == 0, second.stdout + second.stderr
    assert outcomes(second.stdout, SOURCE_STEPS) == {step: "skip" for step in SOURCE_STEPS}
    assert [c for c in world.calls() if is_change(c)] == []


def test_an_unknown_toolchain_is_refused_in_one_line(world):
    result = world.run(PROVISION_DRY_RUN="1", PROVISION_TOOLCHAIN="obs")
    assert result.returncode != 0 and result.stderr.count("\n") == 1
    assert "packages or source, not 'obs'" in result.stderr
