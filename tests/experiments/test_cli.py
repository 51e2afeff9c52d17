"""python3 -m experiments run | check | model | net: bad input exits 2 with one
line; a sweep runs every point, ranked by the oracle when asked; `model`
prints the oracle's prediction per job; `net` builds the network a run would
build (a TCP job in TCP mode), comes up, and Ctrl-C (or `exit` in the CLI)
leaves nothing."""

import argparse
import json
import re
import signal
import subprocess
import sys
import time
import tomllib

import pytest
import tomli_w

from contract import exits
from experiments import cli, cli_common, cli_model, cli_run
from experiments import config as C
from experiments import network as N
from experiments import runner as RN
from experiments.config import machine
from experiments.config.budget import ENV_VAR as BUILD_ENV
from experiments.config.scale import Scaling, scale
from tests.harness import REPO
from topologies.network.names import PREFIX
from topologies.network.shell import list_links
from topologies.switch.targets import TargetError, bmv2_available

JOB = "[[jobs]]\nranks = 2\nmessage_bytes = 4000\niterations = 1\n"


def experiments(*args, **kw):
    return subprocess.run([sys.executable, "-m", "experiments", *args], cwd=REPO, capture_output=True,
                          text=True, timeout=60, **kw)


def test_cli_bad_config_exits_2_with_one_line(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('[topology]\nkind = "ring"\nhosts = 4\nhost_rate_mbit = 10\n'
                   '[[jobs]]\nranks = 4\nmessage_bytes = 400\niterations = 1\n')
    r = experiments("run", str(bad))
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        "config error: topology.kind: unknown topology 'ring' (known: star, leafspine, dumbbell)"]
    bad.write_text('[topology]\nkind = "star"\nhosts = 4\nhost_rate_mbit = 10\n[[jobs]]\nranks = 4\n')
    r = experiments("run", str(bad))
    assert r.returncode == 2 and r.stderr.strip() == "config error: jobs[0].message_bytes: missing required key"
    bad.write_text('[topology]\nkind = "star"\nhosts = "four"\n')
    r = experiments("run", str(bad))
    assert r.returncode == 2 and r.stderr.strip().startswith("config error: topology.hosts: expected an integer")


def test_check_prints_the_resolved_config_and_refuses_a_job_no_run_could_start(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text('[topology]\nkind = "star"\nhosts = 2\nhost_rate_mbit = 10\n' + JOB)
    r = experiments("check", str(path))
    assert r.returncode == 0, r.stderr
    assert tomllib.loads(r.stdout) == C.load(path).as_dict()
    # a field only the job file's loader (hosts.job) knows to refuse
    path.write_text('[topology]\nkind = "star"\nhosts = 2\nhost_rate_mbit = 10\n' + JOB + "[jobs.udp]\nmtu = 1\n")
    r = experiments("check", str(path))
    assert r.returncode == 2 and r.stderr.startswith("config error: jobs[0].udp.mtu:"), r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_check_says_how_many_packets_the_gate_is_at_autos_k(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text('[topology]\nkind = "star"\nhosts = 2\nhost_rate_mbit = 10\n' + JOB
                    + "[symphony]\ngate_step = 0.05\n")
    r = experiments("check", str(path))
    assert r.returncode == 0, r.stderr
    m = re.search(r"Symphony's gate at K = (\S+): (\d+) packets \(0\.05 of the step; (\d+) unscaled\)", r.stderr)
    assert m, r.stderr
    spec = C.load(path)
    # a share of the step: K times the unscaled gate's packets
    assert int(m[2]) == scale(spec, Scaling(float(m[1]))).symphony.gate_pkts > spec.symphony.gate_pkts == int(m[3])


def test_sweep_through_the_cli_loop(tmp_path, monkeypatch, capsys, fake_net):
    """--sweep: every point in its own directory, a sweep table at the end."""
    raw = {
        "name": "sw", "seed": 2, "repeats": 1,
        "topology": {"kind": "star", "hosts": 4, "host_rate_mbit": 10},
        "jobs": [{"ranks": 4, "message_bytes": 4000, "iterations": 1}],
        "jitter": [{"kind": "rate", "rank": 1, "start_s": 0.0, "duration_s": 0.1, "fraction": 0.5}],
        "sweep": {"jitter.0.fraction": [0.25, 0.5], "symphony.threshold": [0, 2]},
    }
    points = C.sweep_points(raw)
    monkeypatch.setattr(RN.Runner, "_network",
                        lambda self, plan, run_dir: fake_net(plan=plan, run_dir=run_dir, target=self.target))
    monkeypatch.setattr(RN.Runner, "_netem", lambda self: False)
    args = argparse.Namespace(out=tmp_path, fail_fast=False, no_report=True, target="soft")
    code = cli_run.run_points(args, points)
    assert code == 0
    assert sorted(p.name for p in (tmp_path / "sw").iterdir() if p.is_dir()) == [
        "fraction0.25_threshold0", "fraction0.25_threshold2", "fraction0.5_threshold0", "fraction0.5_threshold2"]
    for point in ("fraction0.25_threshold0", "fraction0.5_threshold2"):
        runs = [p for p in (tmp_path / "sw" / point).iterdir() if p.is_dir()]
        assert len(runs) == 2
        s = json.loads((tmp_path / "sw" / point / "summary.json").read_text())
        assert s["sweep_point"]["symphony.threshold"] in (0, 2)
        # the oracle on the point's schedule, beside its runs
        assert s["jobs"]["1"]["oracle"]["baseline_cct_s"] > 0 and s["oracle_file"].endswith("-oracle.json")
    (table,) = list((tmp_path / "sw").glob("*-sweep.json"))
    rows = json.loads(table.read_text())["points"]
    assert len(rows) == 4 and all(isinstance(r["cct_change_pct"], float) for r in rows)
    # the swept value reached the run: the jitter schedule of that point
    sched = [json.loads(x) for x in next((tmp_path / "sw" / "fraction0.25_threshold0").glob("*baseline*"))
             .joinpath("jitter.jsonl").read_text().splitlines()]
    assert sched[0]["params"]["fraction"] == 0.25
    assert "change" in capsys.readouterr().out
    assert sorted({n.plan.symphony.threshold for n in fake_net.instances}) == [0, 2]


@pytest.mark.root
def test_cli_unavailable_target_exits_2_with_one_line():
    if bmv2_available():
        pytest.skip("BMv2 is installed here")
    r = experiments("run", "experiments/configs/ci4.toml", "--target", "bmv2")
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("--target bmv2:") and "--target soft" in lines[0]


# --- python3 -m experiments net ---------------------------------------------------

@pytest.mark.parametrize("text, message", [
    (None, "cannot read"),
    ("[topology\n", "not valid TOML"),
    ("[[jobs]]\nranks = 2\n", "topology: missing required key"),
    ('[topology]\nkind = "ring"\nhosts = 2\n', "topology.kind"),
    ('[topology]\nkind = "star"\nhosts = 2\nhost_rate_mbit = 10\n[[jobs]]\nranks = 3\n'
     'message_bytes = 4000\niterations = 1\n', "jobs[0].ranks"),
])
def test_bad_config_exits_2_with_one_line(tmp_path, text, message):
    path = tmp_path / "c.toml"
    if text is not None:
        path.write_text(text)
    r = experiments("net", str(path), "--target", "soft")
    assert r.returncode == 2
    assert message in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


class Recorded(Exception):
    pass


def test_net_installs_a_tcp_job_in_tcp_mode(tmp_path, monkeypatch):
    """`net` resolves the config as `run` does: the network's jobs carry
    their transport (the old `python3 -m topologies` dropped it, so a TCP
    job's flows were installed in UDP mode)."""
    path = tmp_path / "c.toml"
    path.write_text('[topology]\nkind = "star"\nhosts = 2\nhost_rate_mbit = 10\n' + JOB + 'transport = "tcp"\n')
    built = []

    def network(topo, jobs, **kw):
        built.append((topo, jobs, kw))
        raise Recorded

    monkeypatch.setattr(N, "TestbedNetwork", network)
    monkeypatch.setattr(cli_common.os, "geteuid", lambda: 0)
    with pytest.raises(Recorded):
        cli.main(["net", str(path), "--target", "soft", "--baseline"])
    (topo, jobs, kw), = built
    assert [j.transport for j in jobs] == ["tcp"] and [j.hosts for j in jobs] == [("h1", "h2")]
    assert kw["symphony"].enabled is False


def net_id_from(stdout) -> str:
    """The JSON description printed at start-up (up to the closing brace)."""
    lines = []
    for line in stdout:
        lines.append(line)
        if line.rstrip() == "}":
            return json.loads("".join(lines))["id"]
    raise AssertionError("no description printed: " + "".join(lines))


@pytest.mark.root
def test_network_up_then_ctrl_c(tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text('[topology]\nkind = "dumbbell"\nhosts = 2\nhost_rate_mbit = 10\n' + JOB)
    proc = subprocess.Popen([sys.executable, "-m", "experiments", "net", str(cfg), "--target", "soft",
                             "--run-dir", str(tmp_path / "run")], cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    net_id = net_id_from(proc.stdout)
    assert proc.stdout.readline().startswith("network up")
    assert [x for x in list_links() if x.startswith(f"{PREFIX}{net_id}")]
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=30) == 0
    time.sleep(0.2)
    assert not [x for x in list_links() if x.startswith(f"{PREFIX}{net_id}")]


@pytest.mark.root
def test_cli_pingall_then_exit(tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text('[topology]\nkind = "star"\nhosts = 3\nhost_rate_mbit = 10\n' + JOB)
    r = experiments("net", str(cfg), "--cli", "--target", "soft", "--run-dir", str(tmp_path / "run"),
                    input="pingall\nexit\n")
    assert r.returncode == 0, r.stderr
    assert "Results: 0% dropped (6/6 received)" in r.stdout + r.stderr


# --- python3 -m experiments model, run --rank-by-oracle / --model-only ----------------

VICTIM = """name = "victim"
[topology]
kind = "dumbbell"
hosts = 6
host_rate_mbit = 1
[[jobs]]
ranks = 4
hosts = ["h1", "h2", "h4", "h5"]
message_bytes = 4000
iterations = 1
[[jobs]]
ranks = 2
hosts = ["h3", "h6"]
message_bytes = 2000
iterations = 1
[symphony]
threshold = 0
[[jitter]]
kind = "compute"
job = 1
rank = 1
iter = 0
delay_s = 0.08
"""


def test_model_prints_each_jobs_prediction(tmp_path):
    # tests/experiments/test_summary.py's victim case: job 2 32 ms -> 16 ms, job 1 128 ms both
    path = tmp_path / "victim.toml"
    path.write_text(VICTIM)
    r = experiments("model", str(path), "--no-sim")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[1].split() == ["job", "ranks", "baseline", "CCT", "s", "Symphony", "CCT", "s", "change", "%",
                                "bound", "s"]
    assert lines[2].split() == ["1", "4", "0.1280", "0.1280", "+0.00", "0.0480"]
    assert lines[3].split() == ["2", "2", "0.0320", "0.0160", "-50.00", "0.0160"]
    r = experiments("model", str(path), "--no-sim", "--json", "--repeat", "2", "--seed", "9")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["jobs"]["2"] == pytest.approx({"baseline_cct_s": 0.032, "symphony_cct_s": 0.016,
                                              "cct_change_pct": -50.0, "bound_s": 0.016})
    assert out["repeats"] == [1, 2] and out["threshold"] == 0 and out["model_time_s"] < 1.0


def test_model_of_a_shipped_config_needs_no_root(monkeypatch, capsys):
    monkeypatch.setattr(cli_common.os, "geteuid", lambda: 1000)
    assert cli.main(["model", "experiments/configs/twojobs_straggle.toml", "--json", "--no-sim"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out["jobs"]) == {"1", "2"}
    for job in out["jobs"].values():
        assert {"baseline_cct_s", "symphony_cct_s", "cct_change_pct", "bound_s"} <= set(job)


def test_model_refuses_a_bad_config_as_check_does(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('[topology]\nkind = "ring"\nhosts = 4\nhost_rate_mbit = 10\n'
                   '[[jobs]]\nranks = 4\nmessage_bytes = 400\niterations = 1\n')
    model, check = experiments("model", str(bad)), experiments("check", str(bad))
    assert model.returncode == check.returncode == 2
    assert model.stderr == check.stderr and len(model.stderr.strip().splitlines()) == 1
    assert model.stdout == ""


SWEEP = {
    "name": "rank", "seed": 1, "repeats": 1,
    "topology": {"kind": "dumbbell", "hosts": 6, "host_rate_mbit": 1},
    "jobs": [{"ranks": 4, "hosts": ["h1", "h2", "h4", "h5"], "message_bytes": 4000, "iterations": 1},
             {"ranks": 2, "hosts": ["h3", "h6"], "message_bytes": 2000, "iterations": 1}],
    "jitter": [{"kind": "compute", "job": 1, "rank": 1, "iter": 0, "delay_s": 0.08}],
    "sweep": {"symphony.threshold": [2, 0, 1]},
}


def test_rank_points_puts_the_largest_predicted_gain_first(capsys):
    # thresholds 0 and 1 give job 2 -50 % and -25 % (test_flowmodel's victim, 2u and 3u of 4u);
    # at 2 job 1's leading flow is never ahead enough to yield
    ranked = cli_model.rank_points(C.sweep_points(SWEEP))
    assert [label for label, _ in ranked] == ["threshold0", "threshold1", "threshold2"]
    out = capsys.readouterr().out
    assert "oracle ranking" in out and "job 2 -50.00" in out and "job 2 -25.00" in out


def test_model_only_prints_the_ranking_and_stops_without_root(tmp_path, monkeypatch, capsys):
    path = tmp_path / "s.toml"
    path.write_text(tomli_w.dumps(SWEEP))
    monkeypatch.setattr(cli_common.os, "geteuid", lambda: 1000)
    monkeypatch.setattr(cli_run, "run_points", lambda *a: pytest.fail("--model-only ran something"))
    assert cli.main(["run", str(path), "--sweep", "--model-only", "--out", str(tmp_path / "out")]) == 0
    assert "1  threshold0" in capsys.readouterr().out
    assert not (tmp_path / "out").exists()


def test_rank_by_oracle_runs_the_points_in_that_order(tmp_path, monkeypatch):
    path = tmp_path / "s.toml"
    path.write_text(tomli_w.dumps(SWEEP))
    ran = []
    monkeypatch.setattr(cli_common.os, "geteuid", lambda: 0)
    monkeypatch.setattr(cli_common, "resolve_target", lambda target: "soft")
    monkeypatch.setattr(cli_run, "run_points",
                        lambda args, points, **kw: ran.extend(label for label, *_ in points) or 0)
    assert cli.main(["run", str(path), "--sweep", "--rank-by-oracle", "--target", "soft"]) == 0
    assert ran == ["threshold0", "threshold1", "threshold2"]


def test_run_on_bmv2_compiles_a_stale_program_before_the_batch(tmp_path, monkeypatch, capsys):
    # a fresh clone or a pulled P4 change: every run would fail on the network's stale-program check
    path = tmp_path / "s.toml"
    path.write_text(tomli_w.dumps(SWEEP))
    events = []
    monkeypatch.setattr(cli_common.os, "geteuid", lambda: 0)
    monkeypatch.setattr(cli_common, "resolve_target", lambda target: "bmv2")
    monkeypatch.setattr(cli_common, "build_bmv2_program", lambda: events.append("build"))
    monkeypatch.setattr(cli_run, "run_points", lambda args, points, **kw: events.append("run") or 0)
    assert cli.main(["run", str(path), "--sweep", "--target", "bmv2", "--out", str(tmp_path / "out")]) == 0
    assert events == ["build", "run"]

    def broken():
        raise TargetError("`make p4` failed (exit 2): symphony.p4(3): error: boom")
    events.clear()
    monkeypatch.setattr(cli_common, "build_bmv2_program", broken)
    assert cli.main(["run", str(path), "--sweep", "--target", "bmv2", "--out", str(tmp_path / "out")]) == exits.USAGE
    assert capsys.readouterr().err.strip().splitlines()[-1] == \
        "--target bmv2: `make p4` failed (exit 2): symphony.p4(3): error: boom"
    assert events == []


def test_run_on_the_soft_target_compiles_nothing(tmp_path, monkeypatch):
    path = tmp_path / "s.toml"
    path.write_text(tomli_w.dumps(SWEEP))
    monkeypatch.setattr(cli_common.os, "geteuid", lambda: 0)
    monkeypatch.setattr(cli_common, "resolve_target", lambda target: "soft")
    monkeypatch.setattr(cli_common, "build_bmv2_program", lambda: pytest.fail("compiled for the soft target"))
    monkeypatch.setattr(cli_run, "run_points", lambda args, points, **kw: 0)
    assert cli.main(["run", str(path), "--sweep", "--target", "soft", "--out", str(tmp_path / "out")]) == 0


def test_model_takes_the_schedule_as_the_target_would_apply_it(tmp_path):
    # netem on the soft target without sch_netem: the twin's delay lines, which the model does not have
    path = tmp_path / "n.toml"
    path.write_text('[topology]\nkind = "star"\nhosts = 2\nhost_rate_mbit = 10\n' + JOB
                    + '[[jitter]]\nkind = "netem"\nrank = 0\nstart_s = 0.1\nduration_s = 0.2\ndelay_ms = 5\n')
    r = experiments("model", str(path), "--no-sim", "--target", "soft", "--json")
    assert r.returncode == 0, r.stderr
    assert "netem on h1-s1 from 0.1 to 0.3 s: not modelled" in r.stderr
    assert json.loads(r.stdout)["notes"] == [r.stderr.strip().removeprefix("note: ")]


@pytest.mark.parametrize("target, build, warned", [
    ("bmv2", "package", True),          # about 1,700 data packets/s
    ("soft", "package", False),
    ("bmv2", "performance", False),     # within the performance build's budget
])
def test_run_warns_where_the_target_cannot_carry_the_batchs_packets(target, build, warned, monkeypatch):
    monkeypatch.setenv(BUILD_ENV, build)     # the budget of a known build, whatever this machine has
    spec = C.load(REPO / "experiments" / "configs" / "victim_straggle8_small.toml")
    lines = cli_run.over_budget([(None, scale(spec, Scaling(50)), Scaling(50))], target)
    assert bool(lines) == warned, lines
    if warned:
        assert re.search(r"about 1,[0-9]{3} data packets/s, over BMv2's 1,000", lines[0]), lines


def test_model_simulates_the_deployment_with_the_packets_coarse_asks_for(tmp_path, monkeypatch, capsys):
    """--coarse C reaches the deployment's simulation (default a batch's:
    full packets, which the header says); outside 1..64 a one-line refusal,
    the same for `run`'s --coarse."""
    path = tmp_path / "victim.toml"
    path.write_text(VICTIM)
    asked = []

    def fake_predict(spec, repeats, via, cache, progress, coarse):
        asked.append(coarse)
        jobs = {str(j.job): {"baseline_cct_s": 1.0, "symphony_cct_s": 0.9, "cct_change_pct": -10.0} for j in spec.jobs}
        return {"scales": {"config": {"jobs": jobs}, "deployment": {"jobs": jobs, "coarse": coarse}}, "runs": []}
    monkeypatch.setattr(cli_model, "predict", fake_predict)
    assert cli.main(["model", str(path)]) == 0
    assert "(full packets)" in capsys.readouterr().out
    assert cli.main(["model", str(path), "--coarse", "32"]) == 0
    assert "(32 of its packets as one)" in capsys.readouterr().out and asked == [1, 32]
    for command in ("model", "run"):
        for bad in ("0", "65", "x"):
            with pytest.raises(SystemExit) as exc:
                cli.main([command, str(path), "--coarse", bad])
            assert exc.value.code == exits.USAGE
            err = capsys.readouterr().err.strip()
            assert f"--coarse: give an integer in 1..64 (packets simulated as one), got {bad}" in err
            assert "\n" not in err
    assert asked == [1, 32]


def test_a_sweep_of_two_jobs_prints_each_jobs_change(tmp_path, capsys):
    """No change pooled over two jobs' iterations: the sweep's table gives each job's."""
    rows = [{"point": "a", "cct_change_pct": None,
             "jobs": {"1": {"cct_change_pct": -3.04}, "2": {"cct_change_pct": -29.1}}},
            {"point": "b", "cct_change_pct": -5.0, "jobs": {"1": {"cct_change_pct": -5.0}}}]
    cli_run.write_sweep(tmp_path / "s-sweep.json", "sw", "s", rows, False)
    out = capsys.readouterr().out.splitlines()
    assert out[1].split() == ["a", "change", "job", "1", "-3.0", "%,", "job", "2", "-29.1", "%"]
    assert out[2].split() == ["b", "change", "-5.0", "%"]


def test_a_deployment_simulation_is_not_refused_for_the_memory_its_data_runs_would_need(tmp_path, monkeypatch,
                                                                                         capsys):
    # --deployment carries no data: the 1,024-host cluster was refused for
    # 455 GB its config's own runs would hold
    path = tmp_path / "big.toml"
    raw = tomllib.loads((REPO / "experiments/configs/ci4.toml").read_text())
    raw["jobs"][0]["message_bytes"] = 400_000_000
    raw["runner"]["run_deadline_s"] = 100_000
    path.write_text(tomli_w.dumps(raw))
    monkeypatch.setattr(machine, "available_memory_bytes", lambda: 1 << 30)
    ran = []
    monkeypatch.setattr(cli_run, "run_points", lambda args, points, **kw: ran.append(args.deployment) or 0)
    assert cli.main(["run", str(path), "--target", "sim", "--no-sim", "--out", str(tmp_path / "out")]) == exits.USAGE
    assert "of memory at once" in capsys.readouterr().err
    assert cli.main(["run", str(path), "--target", "sim", "--deployment", "--no-sim",
                     "--out", str(tmp_path / "out")]) == exits.OK
    assert ran == [True]
