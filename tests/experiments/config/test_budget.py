"""experiments.config.budget: the packet budget per target, BMv2's per build,
with the build told apart by stub simple_switch programs on the PATH that
answer the probe as behavioral-model's option parser does
(src/bm_sim/options_parse.cpp at 9674187f: the same warnings, in the same
order, and the same exit at a negative --max-port-count)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from experiments.config import budget as B
from experiments.config.regime import budget_words

ELOG_WARNING = ("Warning: you requested the nanomsg event logger, but bmv2 was compiled without -DBMELOG, "
                "and the event logger cannot be activated")
MACROS_WARNING = ("You disabled logging macros when building this binary; however, the log level is currenty set "
                  "to include 'debug' and possibly 'trace' messages; therefore the logs will be missing most messages")


def stub(bin_dir: Path, elog: bool, macros: bool) -> Path:
    """A simple_switch built with (True) or without (False) the event logger and
    the logging macros; it records its arguments in bin_dir/args.json."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    path = bin_dir / "simple_switch"
    lines = ["#!/bin/sh", f"printf '%s\\n' \"$@\" > {bin_dir}/args.txt"]
    if not elog:
        lines.append(f'case " $* " in *" --nanolog "*) echo "{ELOG_WARNING}" ;; esac')
    if not macros:
        lines.append(f'case " $* " in *" --log-console "*) echo "{MACROS_WARNING}" ;; esac')
    lines += ['case " $* " in *" --max-port-count=-1 "*) echo "Invalid --max-port-count argument, cannot be '
              'negative"; exit 1 ;; esac', "sleep 60"]   # a switch that started would not return
    path.write_text("\n".join(lines) + "\n")
    path.chmod(0o755)
    return path


@pytest.fixture
def on_path(monkeypatch, tmp_path):
    """Puts a directory first on the PATH and clears the detection cache."""
    def put(bin_dir: Path) -> None:
        monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
        B._detect.cache_clear()
    monkeypatch.delenv(B.ENV_VAR, raising=False)
    yield put
    B._detect.cache_clear()


@pytest.mark.parametrize("elog,macros,flavour", [(False, False, "performance"), (True, True, "package"),
                                                 (True, False, "unknown"), (False, True, "unknown")])
def test_the_probe_tells_the_builds_apart(on_path, tmp_path, elog, macros, flavour):
    on_path(tmp_path / "bin")
    ss = stub(tmp_path / "bin", elog=elog, macros=macros)
    build = B.bmv2_build()
    assert (build.flavour, build.path) == (flavour, str(ss))
    assert build.how == f"probed {ss}"
    args = (tmp_path / "bin" / "args.txt").read_text().split()
    # no JSON, no Thrift port, no interface: it never starts a switch
    assert args[:4] == ["--no-p4", "--log-console", "--nanolog", args[3]] and args[3].startswith("ipc:///")
    assert args[-1] == "--max-port-count=-1" and "--thrift-port" not in args and "-i" not in args


def test_the_build_scripts_record_wins_over_the_probe(on_path, tmp_path):
    prefix = tmp_path / "prefix"
    on_path(prefix / "bin")
    stub(prefix / "bin", elog=True, macros=True)          # would probe as package
    record = prefix / "share" / "symphony-toolchain" / "bmv2.build"
    record.parent.mkdir(parents=True)
    record.write_text("part=bmv2\nflavour=performance\ncommit=9674187f\n")
    build = B.bmv2_build()
    assert build.flavour == "performance" and build.how == f"recorded in {record}"
    assert not (prefix / "bin" / "args.txt").exists()      # not probed
    assert "performance build of BMv2 (recorded in" in build.describe()


def test_a_record_with_an_unknown_flavour_falls_back_to_the_probe(on_path, tmp_path):
    prefix = tmp_path / "prefix"
    on_path(prefix / "bin")
    stub(prefix / "bin", elog=True, macros=True)
    record = prefix / "share" / "symphony-toolchain" / "bmv2.build"
    record.parent.mkdir(parents=True)
    record.write_text("flavour=fast\n")
    assert B.bmv2_build().flavour == "package"


def test_the_user_declares_the_build(on_path, monkeypatch, tmp_path):
    on_path(tmp_path / "bin")
    stub(tmp_path / "bin", elog=True, macros=True)
    monkeypatch.setenv(B.ENV_VAR, "performance")
    assert B.bmv2_build().flavour == "performance" and "declared by SYMPHONY_BMV2_BUILD" in B.bmv2_build().how
    monkeypatch.setenv(B.ENV_VAR, "fast")
    with pytest.raises(ValueError, match="SYMPHONY_BMV2_BUILD='fast': give one of performance, package, unknown"):
        B.bmv2_build()


def test_without_simple_switch_the_build_is_unknown(on_path, tmp_path):
    on_path(tmp_path / "empty")
    assert B.bmv2_build() == B.Bmv2Build("unknown", "no simple_switch on the PATH", None)
    assert B.packet_budget("bmv2") == B.BMV2_PACKAGE_BUDGET_PPS == 1_000


def test_a_probe_that_hangs_or_fails_is_unknown(on_path, monkeypatch, tmp_path):
    on_path(tmp_path / "bin")
    ss = tmp_path / "bin" / "simple_switch"
    ss.parent.mkdir()
    ss.write_text("#!/bin/sh\nsleep 60\n")
    ss.chmod(0o755)
    monkeypatch.setattr(B, "PROBE_TIMEOUT_S", 0.5)
    assert B.bmv2_build().flavour == "unknown"


def test_the_budget_follows_the_build(on_path, monkeypatch, tmp_path):
    on_path(tmp_path / "bin")
    stub(tmp_path / "bin", elog=False, macros=False)
    assert B.packet_budget("soft") == 10_000
    monkeypatch.setitem(B.BMV2_BUDGET_PPS, "performance", 4_000)   # as the lead would set it from the bench
    assert B.packet_budget("bmv2") == 4_000
    assert budget_words(3_000) == "within the soft target's 10,000, within BMv2's 4,000"
    monkeypatch.setenv(B.ENV_VAR, "package")
    assert B.packet_budget("bmv2") == 1_000
    with pytest.raises(ValueError):
        B.packet_budget("sim")


def test_a_build_that_cannot_be_placed_gets_the_package_builds_budget():
    assert B.BMV2_BUDGET_PPS["unknown"] == B.BMV2_BUDGET_PPS["package"] == B.BMV2_PACKAGE_BUDGET_PPS
    assert B.BMV2_BUDGET_PPS["performance"] >= B.BMV2_PACKAGE_BUDGET_PPS


def test_the_probe_command_is_what_the_docstring_says():
    assert B.probe_command("/x/simple_switch", "/tmp/d") == [
        "/x/simple_switch", "--no-p4", "--log-console", "--nanolog", "ipc:///tmp/d/probe.ipc", "--max-port-count=-1"]
    assert json.dumps(B.FLAVOURS) == '["performance", "package", "unknown"]'
