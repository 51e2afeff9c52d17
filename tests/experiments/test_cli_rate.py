"""`run --rate R|auto` and `check --rate R`: the scenario on slower (or
faster) links, the same in units of its step (experiments/config/scale.py
``at``); 'auto' the fastest rate whose packets the target carries here."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

import pytest
import tomli_w

from experiments import cli_run
from experiments import config as C
from experiments.cli_common import Refused, rate_arg
from experiments.cli_model import expected_load
from experiments.config.budget import ENV_VAR as BUILD_ENV
from experiments.config.budget import packet_budget
from experiments.config.regime import RATE_LADDER, auto_rate, auto_scale
from experiments.config.scale import at, scale
from experiments.sim import confirm as CF
from experiments.sim import predict as P
from tests.experiments.sim.test_predict import RAW
from tests.harness import REPO
from topologies.network.links import VIA_TWIN


@pytest.fixture(autouse=True)
def package_build(monkeypatch):
    """BMv2's budget that of a known build (the package's), whatever this machine has."""
    monkeypatch.setenv(BUILD_ENV, "package")

DEMO = REPO / "experiments" / "configs" / "victim_straggle8_small.toml"


def experiments(*args):
    return subprocess.run([sys.executable, "-m", "experiments", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=300)


def test_a_rate_is_a_positive_number_or_fraction():
    assert (rate_arg(None), rate_arg("1/3"), rate_arg("0.5"), rate_arg("2")) == (1.0, 1 / 3, 0.5, 2.0)
    for bad in ("0", "-1/2", "x", "1/0", "nan", "inf"):
        with pytest.raises(Refused, match=r"--rate: expected a positive number \(0.5, 1/3\) or 'auto'"):
            rate_arg(bad)


def test_auto_scale_at_a_rate_is_the_k_of_the_slower_network():
    demo = C.load(DEMO)
    slower = scale(demo, at(1.0, 1 / 3))         # the demo's network at a third of its rates
    there = auto_scale(demo, 1 / 3)
    assert there.k == auto_scale(slower).k == 50.0 and there.rate == 1 / 3
    assert there.describe().startswith("--scale auto: K = 50 at --rate 1/3, the smallest")


def test_rate_auto_is_the_fastest_rate_whose_packets_the_target_carries():
    assert auto_rate(1_705, 10_000) == 1.0 and auto_rate(1_705, 1_000) == 0.5 and auto_rate(2_754, 1_000) == 1 / 3
    assert auto_rate(568, 1_000, rate=1 / 3) == 1 / 3              # packets/s at a rate already given
    assert auto_rate(1_705, 1_000, rate=1 / 3) == 1 / 6
    assert auto_rate(1e9, 1_000) == RATE_LADDER[-1]              # the slowest where none is within


def test_the_agents_packets_go_as_the_rate():
    """What auto_rate assumes, on the demo at K = 50 (about 1,700 data
    packets/s, over BMv2's budget): at half its rates, half as many."""
    demo = C.load(DEMO)
    full = expected_load(scale(demo, at(50.0, 1.0)))[1]
    half = expected_load(scale(demo, at(50.0, 0.5)))[1]
    assert full > packet_budget("bmv2") >= half
    assert half == pytest.approx(full / 2, rel=0.05) and half <= full / 2


def test_run_rate_auto_scales_the_batch_within_the_budget(monkeypatch, capsys):
    monkeypatch.setattr(cli_run, "resolve_target", lambda target: "bmv2")
    args = argparse.Namespace(target="bmv2", scale="auto", rate="auto", deployment=False, coarse=1, confirm=False,
                              confirm_up_to=None, out=REPO / "results")
    [(label, spec, sc)] = cli_run.scaled_points(args, [(None, C.load(DEMO))])[0]
    assert (sc.time, sc.rate, sc.bytes) == pytest.approx((100.0, 0.5, 50.0))
    assert not cli_run.over_budget([(label, spec, sc)], "bmv2")
    err = capsys.readouterr().err
    assert "--rate auto: 1/2 of the config's link rates, the fastest at which its agents stay within " \
           "BMv2's 1,000 data packets/s" in err
    assert "--scale auto: K = 50 at --rate 1/2" in err


@pytest.mark.parametrize("extra, line", [
    (["--rate", "0"], "--rate: expected a positive number (0.5, 1/3) or 'auto', got '0'"),
    (["--deployment", "--rate", "1/2"], "--rate and --deployment: give one (--deployment sets the rates itself)"),
])
def test_run_refuses_a_rate_it_cannot_take_in_one_line(tmp_path, extra, line):
    path = tmp_path / "t.toml"
    path.write_text(tomli_w.dumps(RAW))
    r = experiments("run", str(path), "--target", "sim", "--out", str(tmp_path / "out"), *extra)
    assert r.returncode == 2 and r.stderr.strip() == line, r.stderr


def test_check_says_what_rate_auto_picks_where_a_budget_is_passed():
    r = experiments("check", str(DEMO))
    assert r.returncode == 0, r.stderr
    assert "note: on BMv2, `run --scale auto --rate auto` runs it at 1/2 of the config's link rates, K = 50" \
        in r.stderr
    assert "(the budget of the " in r.stderr and " build of BMv2 (" in r.stderr   # which build it is
    auto = experiments("check", str(DEMO), "--rate", "auto")       # the config's rates, and the same advice
    assert auto.returncode == 0 and auto.stderr == r.stderr, auto.stderr
    r = experiments("check", str(DEMO), "--rate", "1/3")
    assert "K = 50 at --rate 1/3" in r.stderr and "within BMv2's 1,000" in r.stderr and "--rate auto" not in r.stderr


def test_a_simulated_batch_at_a_rate_reports_in_the_configs_units(tmp_path):
    """--scale 2 --rate 1/2 on the simulation: the runs' clock is 4 times
    the config's, the summary's CCT in the config's units, near the same
    batch's at --rate 1 (the same scenario in units of its step; the link
    delays, the network's own, do not scale), and the batch's simulation is
    of the network it ran on."""
    path = tmp_path / "t.toml"
    path.write_text(tomli_w.dumps(RAW))
    cct = {}
    for rate in ("1", "1/2"):
        out = tmp_path / f"out{rate.replace('/', '_')}"
        r = experiments("run", str(path), "--target", "sim", "--scale", "2", "--rate", rate, "--no-report",
                        "--out", str(out))
        assert r.returncode == 0, r.stderr[-2000:]
        summ = json.loads((out / "tiny" / "summary.json").read_text())
        cct[rate] = summ["variants"]["baseline"]["cct_mean_s"]
    sc = summ["scaling"]
    assert (sc["time"], sc["rate"], sc["bytes"]) == pytest.approx((4.0, 0.5, 2.0))
    assert "durations x4, link rates x0.5, bytes x2" in r.stdout
    assert cct["1/2"] == pytest.approx(cct["1"], rel=0.15) and cct["1/2"] != cct["1"]
    sim = json.loads((out / "tiny" / f"{summ['stamp']}-sim.json").read_text())
    assert sim["scales"]["config"]["rate"] == 0.5 and summ["sim_rate"] == 0.5
    assert "the config's K = 1 on links at --rate 1/2" in r.stdout


def test_confirm_and_the_batchs_simulation_run_on_the_network_at_the_rate():
    spec = C.resolve(json.loads(json.dumps(RAW)))
    rung = CF.at_k(spec, 20.0, 1, VIA_TWIN, 0.5)
    assert {t.scaling for t in rung} == {at(20.0, 0.5)}
    assert rung[0].spec.topology.host_rate_mbit == spec.topology.host_rate_mbit / 2
    tasks = P.tasks(spec, [1], VIA_TWIN, k=1.0, rate=0.5)
    config = {t.scaling for t in tasks if t.scale == P.CONFIG_SCALE}
    deployment = {t.scaling for t in tasks if t.scale == P.DEPLOYMENT_SCALE}
    assert config == {at(1.0, 0.5)} and deployment == {P.deployment_scaling(spec, P.PREDICTION_COARSE)}
