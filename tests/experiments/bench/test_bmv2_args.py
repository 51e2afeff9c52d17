"""experiments.bench.bmv2's arguments (issue 50): --simple-switch names the
builds to measure side by side.  Only the parsing; the bench itself needs
root and BMv2."""

from __future__ import annotations

from pathlib import Path

import pytest

from experiments.bench import bmv2 as bench
from topologies.switch.bmv2 import simple_switch_command


def program(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(0o755)
    return path


def test_default_is_the_simple_switch_on_the_path():
    args = bench.parse([])
    assert args.simple_switch == [] and args.log_level == "warn" and args.offered == 0


def test_simple_switch_repeats_in_order_and_a_prefix_means_its_bin(tmp_path):
    perf = program(tmp_path / "usr-local" / "bin" / "simple_switch")
    package = program(tmp_path / "opt" / "bin" / "simple_switch")
    args = bench.parse(["--simple-switch", str(tmp_path / "usr-local"), "--simple-switch", str(package),
                        "--duration", "3"])
    assert args.simple_switch == [str(perf), str(package)] and args.duration == 3


@pytest.mark.parametrize("bad,words", [(["--simple-switch", "/no/such/simple_switch"], "no simple_switch program at"),
                                       (["--simple-switch"], "expected one argument"),
                                       (["--duration", "0.1"], "--duration must be in"),
                                       (["--offered", "-5"], "--offered must be in")])
def test_bad_arguments_are_refused_in_one_line(capsys, bad, words):
    with pytest.raises(SystemExit) as exit_:
        bench.parse(bad)
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert words in err[-1] and err[-1].startswith("python3 -m experiments.bench.bmv2: error:")


def test_the_same_build_twice_is_refused(tmp_path, capsys):
    ss = program(tmp_path / "bin" / "simple_switch")
    with pytest.raises(SystemExit):
        bench.parse(["--simple-switch", str(ss), "--simple-switch", str(tmp_path)])
    assert "the same simple_switch twice" in capsys.readouterr().err


def test_a_file_that_is_not_a_program_is_refused(tmp_path, capsys):
    text = tmp_path / "simple_switch"
    text.write_text("not a program\n")
    with pytest.raises(SystemExit):
        bench.parse(["--simple-switch", str(text)])
    assert f"no simple_switch program at {text}" in capsys.readouterr().err


def test_the_binary_measured_is_the_one_started():
    cmd = simple_switch_command(9091, {1: "a"}, "/b/s.json", "/run/x.ipc", binary="/opt/p/bin/simple_switch")
    assert cmd[0] == "/opt/p/bin/simple_switch" and cmd[-3:] == ["--", "--priority-queues", "2"]
