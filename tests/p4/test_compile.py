"""The P4 program compiles without a single warning: the v1model build with
p4c-bm2-ss as `make p4` runs it (wherever the BMv2 toolchain is installed),
the Tofino2 build as `make tofino2` runs it (scripts/tofino2.sh, wherever a
Tofino compiler is installed), and the T2NA variant with p4test against
t2na.p4 where that include is at hand (p4c's include directory, or
SYMPHONY_T2NA_INCLUDE naming the directory that holds t2na.p4, e.g. p4c's
backends/tofino/bf-p4c/p4include)."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from contract import p4names
from contract.absent import pretends_absent, reason
from tests.harness import REPO

PROGRAM = "p4/symphony.p4"


def _compile(args: list[str]) -> str:
    r = subprocess.run(args, capture_output=True, text=True, cwd=REPO, timeout=300)
    out = (r.stdout + r.stderr).strip()
    assert r.returncode == 0, out
    return out


@pytest.mark.bmv2
def test_v1model_compiles_without_warning(tmp_path):
    out = _compile(["p4c-bm2-ss", "--std", "p4-16", "--arch", "v1model", "-o", str(tmp_path / "symphony.json"),
                    "--p4runtime-files", str(tmp_path / "symphony.p4info.txtpb"), PROGRAM])
    assert "warning" not in out.lower(), out
    assert (tmp_path / "symphony.json").stat().st_size > 0


def t2na_include() -> Path | None:
    candidates = [os.environ.get("SYMPHONY_T2NA_INCLUDE", "")]
    p4c = shutil.which("p4test")
    if p4c:
        share = Path(p4c).resolve().parents[1] / "share" / "p4c" / "p4include"
        build = Path(p4c).resolve().parent / "p4include"        # an uninstalled build tree
        candidates += [str(share), str(share / "tofino"), str(build)]
    for c in filter(None, candidates):
        if (Path(c) / "t2na.p4").is_file():
            return Path(c)
    return None


def test_t2na_variant_checks_without_warning():
    if pretends_absent("bmv2"):             # p4test is p4c's, part of the BMv2 toolchain here
        pytest.skip(reason("bmv2"))
    include = t2na_include()
    if not shutil.which("p4test") or include is None:
        pytest.skip("needs p4test and t2na.p4 (p4c's backends/tofino/bf-p4c/p4include): "
                    "set SYMPHONY_T2NA_INCLUDE to the directory that holds t2na.p4")
    out = _compile(["p4test", "--std", "p4-16", "-I", str(include), "-D__TARGET_TOFINO__=2", PROGRAM])
    assert "warning" not in out.lower(), out


NO_TOFINO_COMPILER = 3          # scripts/tofino2.sh's exit code when no compiler is installed


def test_tofino2_compiles_without_warning(tmp_path):
    """`make tofino2`'s own script: the compiler's error or warning fails it,
    and the driver's artefacts are there."""
    out = tmp_path / "tofino2"
    r = subprocess.run(["bash", "scripts/tofino2.sh", str(out)], capture_output=True, text=True, cwd=REPO,
                       timeout=1800)
    if r.returncode == NO_TOFINO_COMPILER:
        pytest.skip(r.stderr.strip())
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    for name in ("bfrt.json", "symphony.p4info.txtpb", "symphony.conf"):
        assert (out / name).stat().st_size > 0, name
    assert list(out.rglob("context.json")) and list(out.rglob("tofino2.bin")), sorted(p.name for p in out.rglob("*"))
    # the resource summary: every stage within the pipe's, each register in one stage
    first = r.stdout.split("stages used: ", 1)[1].split("\n", 1)[0]
    used, of = (int(x) for x in first.split(" of "))
    assert 0 < used <= of == 20, first
    for reg in p4names.REGISTERS:
        assert sum(f" {reg} (ingress)" in line for line in r.stdout.splitlines()) == 1, (reg, r.stdout)


def test_tofino2_resource_summary_counts_a_stage():
    """scripts/tofino2_resources.py on a one-stage resources.json of the
    compiler's schema: what a stage holds and what it has."""
    spec = importlib.util.spec_from_file_location("tofino2_resources", REPO / "scripts/tofino2_resources.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    use = [{"used_by": "SymT2Ingress.symphony.frontier_update.frontier", "used_for": "stateful_ram"}]
    stage = {"stage_number": 0, "rams": {"nRows": 8, "nColumns": 10, "srams": [{"usages": use}] * 2},
             "map_rams": {"nRows": 8, "nUnits": 6, "maprams": [{"usages": use}]},
             "tcams": {"nRows": 12, "nColumns": 2, "tcams": []},
             "meter_alus": {"nAlus": 4, "meters": [{"usages": use}]},
             "statistic_alus": {"nAlus": 4, "stats": []},
             "gateways": {"nRows": 8, "nUnits": 2, "gateways": [{}]},
             "logical_tables": {"size": 16, "ids": [{}, {}]}}
    lines = mod.summary({"resources": {"mau": {"nStages": 20, "mau_stages": [stage]}}})
    assert lines[0] == "stages used: 1 of 20"
    assert lines[3] == "| 0 | 2/80 | 1/48 | 0/24 | 1/4 | 0/4 | 1/16 | 2/16 | frontier (ingress) |"
    assert lines[4].startswith("| all | 2/1600 | 1/960 |")
