"""SYMPHONY_ABSENT: a machine with the tools runs the suite as one without
them would, and every check that looks for a tool honours it."""

from __future__ import annotations

import subprocess

import pytest

from contract.absent import ENV, absent_parts, pretends_absent
from tests.harness import REPO
from topologies.network import links
from topologies.switch import targets


def test_names_parse_and_all_means_every_part():
    assert absent_parts({}) == set()
    assert absent_parts({ENV: "bmv2, netem"}) == {"bmv2", "netem"}
    assert absent_parts({ENV: "all"}) == {"bmv2", "tofino", "netem"}
    assert pretends_absent("tofino", {ENV: "tofino"}) and not pretends_absent("bmv2", {ENV: "tofino"})


def test_a_misspelt_part_is_one_line_not_silence():
    with pytest.raises(ValueError, match=f"^{ENV}: unknown part\\(s\\) bmv3: name any of bmv2, tofino, netem or all$"):
        absent_parts({ENV: "bmv3"})


def test_bmv2_looks_missing_to_every_lookup(monkeypatch):
    monkeypatch.setenv(ENV, "bmv2")
    monkeypatch.setattr(targets.shutil, "which", lambda prog: f"/usr/bin/{prog}")   # as if all were there
    assert "simple_switch" in targets.missing_bmv2_parts()
    assert "python module p4utils" in targets.missing_bmv2_parts()
    assert targets.bmv2_skip_reason() == f"{ENV} names bmv2: treated as not installed"
    assert targets.resolve_target("auto") == "soft"
    with pytest.raises(targets.TargetError, match="target bmv2 needs simple_switch"):
        targets.resolve_target("bmv2")
    monkeypatch.delenv(ENV)
    assert "simple_switch" not in targets.missing_bmv2_parts()


def test_netem_looks_missing_without_a_probe(monkeypatch):
    monkeypatch.setenv(ENV, "netem")
    links.netem_available.cache_clear()
    monkeypatch.setattr(links.StateFile, "claim", lambda *a: pytest.fail("probed the kernel"))
    try:
        assert links.netem_available() is False
    finally:
        links.netem_available.cache_clear()


def test_tofino2_script_exits_3_as_without_a_compiler(tmp_path):
    r = subprocess.run(["bash", "scripts/tofino2.sh", str(tmp_path / "out")], capture_output=True, text=True,
                       cwd=REPO, env={"PATH": "/usr/bin:/bin", ENV: "netem,tofino"}, timeout=60)
    assert r.returncode == 3
    assert r.stderr.strip() == f"make tofino2: {ENV} names tofino: treated as not installed"
