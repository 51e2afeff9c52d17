"""The P4 program compiles without a single warning: the v1model build with
p4c-bm2-ss as `make p4` runs it (wherever the BMv2 toolchain is installed),
the Tofino2 build as `make tofino2` runs it (scripts/tofino2.sh, wherever a
Tofino compiler is installed), and the T2NA variant with p4test against
t2na.p4 where that include is at hand (p4c's include directory, or
SYMPHONY_T2NA_INCLUDE naming the directory that holds t2na.p4, e.g. p4c's
backends/tofino/bf-p4c/p4include)."""

from __future__ import annotations

import importlib.util
import json
import os
import random
import shutil
import subprocess
from pathlib import Path

import pytest

from contract import ecmp, p4names
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


@pytest.fixture(scope="module")
def tofino2(tmp_path_factory):
    """`make tofino2`'s own script, run once: its output directory and result."""
    out = tmp_path_factory.mktemp("tofino2")
    r = subprocess.run(["bash", "scripts/tofino2.sh", str(out)], capture_output=True, text=True, cwd=REPO,
                       timeout=1800)
    if r.returncode == NO_TOFINO_COMPILER:
        pytest.skip(r.stderr.strip())
    return out, r


def test_tofino2_compiles_without_warning(tofino2):
    """The compiler's error or warning fails the script, and the driver's
    artefacts are there."""
    out, r = tofino2
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    for name in ("bfrt.json", "symphony.p4info.txtpb", "symphony.conf"):
        assert (out / name).stat().st_size > 0, name
    assert list(out.rglob("context.json")) and list(out.rglob("tofino2.bin")), sorted(p.name for p in out.rglob("*"))
    # the resource summary: every stage within the pipe's, each register and
    # counter in one stage of one gress
    first = r.stdout.split("stages used: ", 1)[1].split("\n", 1)[0]
    used, of = (int(x) for x in first.split(" of "))
    assert 0 < used <= of == 20, first
    for name in [*p4names.REGISTERS, *p4names.COUNTERS]:
        held = [line for line in r.stdout.splitlines() if f" {name} (ingress)" in line or f" {name} (egress)" in line]
        assert len(held) == 1, (name, r.stdout)


def _crc(data: bytes, poly: int, width: int, reverse: bool, init: int, final_xor: int) -> int:
    """A CRC from its parameters as the Tofino compiler states them (the
    polynomial with its top bit, bits reflected when reverse), bit by bit."""
    mask = (1 << width) - 1
    if reverse:
        poly = int(f"{poly & mask:0{width}b}"[::-1], 2)
    crc = init
    for byte in data:
        for i in range(8):
            if reverse:
                bit = (byte >> i) & 1
                crc = (crc >> 1) ^ (poly if (crc ^ bit) & 1 else 0)
            else:
                bit = (byte >> (7 - i)) & 1
                crc = ((crc << 1) & mask) ^ (poly if ((crc >> (width - 1)) ^ bit) & 1 else 0)
    return crc ^ final_xor


def test_tofino2_ecmp_hash_is_the_contracts(tofino2):
    """The compiled ECMP hash (context.json's record of EcmpHash) is CRC-32
    with the parameters that reproduce contract.ecmp's hash, over its fields
    in its order and widths: the bucket Tofino2 takes is the one every other
    target takes."""
    out, r = tofino2
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    context = json.loads(next(out.rglob("context.json")).read_text())
    calc, = [c for c in context["dynamic_hash_calculations"] if ".ecmp_hash." in c["name"]]
    algorithm, = calc["algorithms"]
    fields, = calc["field_lists"]
    assert [f["bit_width"] for f in fields["fields"]] == [8 * n for _, n in ecmp.FIELDS], fields
    assert [f["name"] for f in fields["fields"]][:2] == [f"hdr.{name}" for name, _ in ecmp.FIELDS[:2]]
    assert algorithm["type"] == "crc" and not algorithm["msb"] and not algorithm["extend"], algorithm
    rng = random.Random(51)
    for _ in range(200):
        t = (rng.getrandbits(32), rng.getrandbits(32), rng.choice((6, 17)), rng.getrandbits(16),
             rng.getrandbits(16))
        got = _crc(ecmp.hash_bytes(*t), int(algorithm["poly"], 16), 32, algorithm["reverse"],
                   int(algorithm["init"], 16), int(algorithm["final_xor"], 16))
        assert got == ecmp.flow_hash(*t), (t, algorithm)


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
