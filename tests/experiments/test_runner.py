"""The runner's loop, supervision and records against a fake network whose
'agents' are small local processes (no root, no Mininet): what a run does
when everything works, when a switch dies, when an agent hangs or is wrong,
and when the user interrupts."""

import json
import os
import signal
import subprocess
import sys
import threading
import time
import tomllib

import pytest

from contract.events import validate
from experiments import config as C
from experiments import runner as RN

# A stand-in for hosts.agent: reads the job file, writes schema-valid events,
# behaves as FAKE_MODE says: ok | wrong | hang | fail3.
FAKE_AGENT = r"""
import os, sys, time
from contract.events import EventLog
from hosts.job import load_job
args = sys.argv[1:]
job = load_job(args[args.index("--job") + 1]); rank = int(args[args.index("--rank") + 1])
log_dir = args[args.index("--log-dir") + 1]
mode = os.environ.get("FAKE_MODE", "ok")
n = job.n_ranks
with EventLog(os.path.join(log_dir, f"rank{rank}.jsonl"), job.job, rank) as log:
    for it in range(job.iterations):
        log.emit("iter_start", it, it * 2 * (n - 1))
        for k in range(2 * (n - 1)):
            step = it * 2 * (n - 1) + k
            log.emit("step_start", it, step, k=k, phase="rs" if k < n - 1 else "ag", send_chunk=0, recv_chunk=0)
            time.sleep(0.01 + 0.002 * rank)
            log.emit("step_end", it, step, k=k, phase="rs" if k < n - 1 else "ag", bytes=100)
        if mode == "hang":
            time.sleep(1000)
        if mode == "fail3" and rank == 1:
            log.emit("error", it, step, reason="waited 5 s for step 3 data from rank 0")
            sys.exit(3)
        log.emit("iter_end", it, step, exact=(mode != "wrong" or rank != 0))
sys.exit(1 if mode == "wrong" and rank == 0 else 0)
"""


class FakeNet:
    """What the runner uses of TestbedNetwork."""
    instances = []

    def __init__(self, plan, run_dir, target, die_after=None, mode="ok"):
        self.plan, self.run_dir, self.target_req = plan, run_dir, target
        self.target = "fake"
        self.warnings = []
        self.procs = []
        self.rates = []
        self.die_after = die_after
        self.mode = mode
        self.started = None
        self.stopped = False
        FakeNet.instances.append(self)

    def __enter__(self):
        self.started = time.monotonic()
        return self

    def __exit__(self, *exc):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
            p.wait()
        self.stopped = True

    def popen(self, host, args, **kw):
        assert args[1:3] == ["-m", "hosts.agent"]
        env = dict(os.environ, FAKE_MODE=self.mode)
        p = subprocess.Popen([sys.executable, "-c", FAKE_AGENT, *args[3:]], env=env, **kw)
        self.procs.append(p)
        return p

    def set_link_rate(self, link, rate):
        self.rates.append((link, rate))

    def dead_switches(self):
        # dies die_after seconds after the agents are up (a loaded machine
        # can take a second to start four interpreters)
        logs = [self.run_dir / "agents" / f"rank{r}.jsonl" for r in range(4)]
        if self.die_after is not None and all(p.exists() and p.stat().st_size for p in logs):
            self.up = getattr(self, "up", None) or time.monotonic()
            if time.monotonic() - self.up > self.die_after:
                return [("p1", -9)]
        return []

    def dump_switches(self, out_dir):
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / "p1.json").write_text(json.dumps({"switch": "p1", "counters": {}}))


def cfg(repeats=1, **runner):
    raw = {
        "name": "fake", "seed": 3, "repeats": repeats,
        "topology": {"kind": "leafspine", "hosts": 4, "leaves": 2, "spines": 1, "host_rate_mbit": 10},
        "jobs": [{"ranks": 4, "message_bytes": 4000, "iterations": 2}],
        "ecn": {"kmin": 3, "kmax": 9, "pmax": 0.5},
        "dcqcn": {"preset": "emulation"},
        "jitter": [{"kind": "rate", "rank": 1, "start_s": [0.0, 0.05], "duration_s": 0.1, "fraction": 0.5},
                   {"kind": "compute", "rank": 2, "iter": 1, "delay_s": 0.2}],
        "runner": {"run_deadline_s": 20, **runner},
    }
    return C.resolve(raw)


def make_runner(tmp_path, c, **net_kw):
    FakeNet.instances = []
    lines = []
    r = RN.Runner(c, tmp_path / "fake", target="soft", netem_ok=False, versions={"test": True},
                  network_factory=lambda **kw: FakeNet(**kw, **net_kw), say=lines.append)
    return r, lines


def meta(run_dir):
    return json.loads((run_dir / "meta.json").read_text())


def test_variants_differ_only_in_enabled():
    c = cfg()
    base = RN.run_plan(c, "baseline", 1, netem_ok=False)
    sym = RN.run_plan(c, "symphony", 1, netem_ok=False)
    assert base.symphony.pop("enabled") is False and sym.symphony.pop("enabled") is True
    assert base.symphony == sym.symphony
    assert base.ecn == sym.ecn == {"kmin": 3, "kmax": 9, "pmax": 0.5}
    assert base.job_files == sym.job_files                    # DCQCN, straggles, placement, seed
    assert base.job_files[0]["dcqcn"] == {"preset": "emulation", "line_rate_mbit": 10.0}
    assert base.job_files[0]["straggle"] == [{"rank": 2, "iter": 1, "delay_s": 0.2}]
    assert base.schedule == sym.schedule
    assert base.topology == sym.topology and base.jobs_cfg == sym.jobs_cfg


def test_network_gets_each_jobs_transport():
    """The switches install a job's flows in its transport's mode, so the
    network's job tables carry it (a TCP job was once installed as UDP)."""
    c = cfg()
    c["jobs"][0]["transport"] = "tcp"
    plan = RN.run_plan(c, "symphony", 1, netem_ok=False)
    assert [j["transport"] for j in plan.jobs_cfg] == ["tcp"]
    assert plan.job_files[0]["transport"] == "tcp"


def test_two_variants_ok_records_and_summary(tmp_path):
    r, lines = make_runner(tmp_path, cfg())
    results = r.run_all()
    assert [x.status for x in results] == ["ok", "ok"], [x.reason for x in results]
    assert RN.exit_code(results, False) == RN.EXIT_OK
    jit = []
    for res in results:
        d = res.run_dir
        assert d.name.endswith(f"-{res.variant}-rep1")
        m = meta(d)
        assert m["status"] == "ok" and m["target"] == "fake" and m["seed"] == 3 and m["t0_ns"] > 0
        assert m["kernel"] and m["versions"] == {"test": True} and m["wall_s"] > 0
        conf = tomllib.loads((d / "config.toml").read_text())
        assert conf["run"]["variant"] == res.variant and conf["ecn"]["kmax"] == 9
        for rank in range(4):
            for line in (d / "agents" / f"rank{rank}.jsonl").read_text().splitlines():
                validate(json.loads(line))
        assert (d / "switches" / "p1.json").exists()
        assert (d / "jobs" / "job1.toml").exists()
        jit.append((d / "jitter.jsonl").read_text())
        applied = [json.loads(x) for x in (d / "jitter_applied.jsonl").read_text().splitlines()]
        assert [a["op"] for a in applied] == ["set_rate", "set_rate"]
    assert jit[0] == jit[1] and jit[0]
    analysed = RN.analyse(results)
    s = RN.summary(r.cfg, results, analysed, interrupted=False)
    for v in ("baseline", "symphony"):
        assert s["variants"][v]["runs_ok"] == 1 and s["variants"][v]["cct_mean_s"] > 0
    assert isinstance(s["cct_change_pct"], float)
    assert "baseline" in RN.table(s)


def test_run_dirs_are_never_reused(tmp_path):
    r, _ = make_runner(tmp_path, cfg())
    r.stamp = "20000101T000000Z"
    a = r.run_one("baseline", 1)
    b = r.run_one("baseline", 1)
    assert a.run_dir != b.run_dir and a.run_dir.exists() and b.run_dir.exists()


def test_dead_switch_fails_the_run_keeps_records_next_repeat_runs(tmp_path):
    r, _ = make_runner(tmp_path, cfg(repeats=2), die_after=0.3, mode="hang")
    r.cfg["variants"] = ["baseline"]
    t = time.monotonic()
    results = r.run_all()
    assert time.monotonic() - t < 10
    assert [x.status for x in results] == ["failed", "failed"]
    import re
    assert re.fullmatch(r"switch p1 exited with code -9 at t=\d+\.\ds", results[0].reason), results[0].reason
    for res in results:
        assert meta(res.run_dir)["reason"] == res.reason
        assert (res.run_dir / "agents" / "rank0.jsonl").stat().st_size > 0
    assert all(n.stopped for n in FakeNet.instances) and len(FakeNet.instances) == 2
    assert all(p.poll() is not None for n in FakeNet.instances for p in n.procs)
    assert RN.exit_code(results, False) == RN.EXIT_FAILED


def test_fail_fast_stops_after_the_first_failure(tmp_path):
    r, lines = make_runner(tmp_path, cfg(repeats=2), die_after=0.3, mode="hang")
    r.fail_fast = True
    results = r.run_all()
    assert len(results) == 1 and results[0].status == "failed"
    assert any("--fail-fast" in x for x in lines)


def test_agent_deadline_error_is_the_reason(tmp_path):
    r, _ = make_runner(tmp_path, cfg(), mode="fail3")
    r.cfg["variants"] = ["baseline"]
    (res,) = r.run_all()
    assert res.status == "failed"
    assert "agent job 1 rank 1 on" in res.reason and "exited with code 3" in res.reason
    assert "waited 5 s for step 3 data from rank 0" in res.reason


def test_wrong_result_gives_exit_1(tmp_path):
    r, _ = make_runner(tmp_path, cfg(), mode="wrong")
    r.cfg["variants"] = ["symphony"]
    (res,) = r.run_all()
    assert res.wrong and res.status == "failed"
    assert meta(res.run_dir)["wrong_result"] is True
    assert RN.exit_code([res], False) == RN.EXIT_WRONG


def test_runner_deadline(tmp_path):
    r, _ = make_runner(tmp_path, cfg(run_deadline_s=1), mode="hang")
    r.cfg["variants"] = ["baseline"]
    (res,) = r.run_all()
    assert res.status == "failed" and res.reason.startswith("runner deadline of 1s passed with 4 agent(s)")
    assert all(p.poll() is not None for p in FakeNet.instances[0].procs)


def test_interrupt_marks_the_run_and_stops(tmp_path):
    r, _ = make_runner(tmp_path, cfg(repeats=2), mode="hang")
    sigs = RN.Signals()
    r.signals = sigs
    sigs.install()
    try:
        threading.Timer(0.8, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
        results = r.run_all()
    finally:
        sigs.restore()
    assert len(results) == 1 and results[0].status == "interrupted"
    assert meta(results[0].run_dir)["status"] == "interrupted"
    assert FakeNet.instances[0].stopped
    assert all(p.poll() is not None for p in FakeNet.instances[0].procs)
    s = RN.summary(r.cfg, results, RN.analyse(results), interrupted=True)
    assert s["interrupted"] is True and s["runs"][0]["status"] == "interrupted"
    assert RN.exit_code(results, True) == RN.EXIT_INTERRUPTED


def test_cli_bad_config_exits_2_with_one_line(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('[topology]\nkind = "ring"\nhosts = 4\nhost_rate_mbit = 10\n'
                   '[[jobs]]\nranks = 4\nmessage_bytes = 400\niterations = 1\n')
    r = subprocess.run([sys.executable, "-m", "experiments", "run", str(bad)], capture_output=True, text=True)
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        "config error: topology.kind: unknown topology 'ring' (known: star, leafspine, dumbbell)"]
    bad.write_text('[topology]\nkind = "star"\nhosts = 4\nhost_rate_mbit = 10\n[[jobs]]\nranks = 4\n')
    r = subprocess.run([sys.executable, "-m", "experiments", "run", str(bad)], capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.strip() == "config error: jobs[0].message_bytes: missing required key"
    bad.write_text('[topology]\nkind = "star"\nhosts = "four"\n')
    r = subprocess.run([sys.executable, "-m", "experiments", "run", str(bad)], capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.strip().startswith("config error: topology.hosts: expected an integer")


def test_sweep_through_the_cli_loop(tmp_path, monkeypatch, capsys):
    """--sweep: every point in its own directory, a sweep table at the end."""
    import argparse

    from experiments import cli

    raw = {
        "name": "sw", "seed": 2, "repeats": 1,
        "topology": {"kind": "star", "hosts": 4, "host_rate_mbit": 10},
        "jobs": [{"ranks": 4, "message_bytes": 4000, "iterations": 1}],
        "jitter": [{"kind": "rate", "rank": 1, "start_s": 0.0, "duration_s": 0.1, "fraction": 0.5}],
        "sweep": {"jitter.0.fraction": [0.25, 0.5], "symphony.threshold": [0, 2]},
    }
    points = C.sweep_points(raw)
    FakeNet.instances = []
    monkeypatch.setattr(RN.Runner, "_network",
                        lambda self, plan, run_dir: FakeNet(plan=plan, run_dir=run_dir, target=self.target))
    monkeypatch.setattr(RN.Runner, "_netem", lambda self: False)
    args = argparse.Namespace(out=tmp_path, fail_fast=False, no_report=True, target="soft")
    code = cli.run_points(args, points)
    assert code == 0
    assert sorted(p.name for p in (tmp_path / "sw").iterdir() if p.is_dir()) == [
        "fraction0.25_threshold0", "fraction0.25_threshold2", "fraction0.5_threshold0", "fraction0.5_threshold2"]
    for point in ("fraction0.25_threshold0", "fraction0.5_threshold2"):
        runs = [p for p in (tmp_path / "sw" / point).iterdir() if p.is_dir()]
        assert len(runs) == 2
        s = json.loads((tmp_path / "sw" / point / "summary.json").read_text())
        assert s["sweep_point"]["symphony.threshold"] in (0, 2)
    (table,) = list((tmp_path / "sw").glob("*-sweep.json"))
    rows = json.loads(table.read_text())["points"]
    assert len(rows) == 4 and all(isinstance(r["cct_change_pct"], float) for r in rows)
    # the swept value reached the run: the jitter schedule of that point
    sched = [json.loads(x) for x in next((tmp_path / "sw" / "fraction0.25_threshold0").glob("*baseline*"))
             .joinpath("jitter.jsonl").read_text().splitlines()]
    assert sched[0]["params"]["fraction"] == 0.25
    assert "change" in capsys.readouterr().out
    assert sorted({n.plan.symphony["threshold"] for n in FakeNet.instances}) == [0, 2]


@pytest.mark.root
def test_cli_unavailable_target_exits_2_with_one_line():
    from topologies.switch.targets import bmv2_available
    if bmv2_available():
        pytest.skip("BMv2 is installed here")
    r = subprocess.run([sys.executable, "-m", "experiments", "run", "experiments/configs/ci4.toml",
                        "--target", "bmv2"], capture_output=True, text=True, cwd=str(RN.REPO))
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("--target bmv2:") and "--target soft" in lines[0]


def test_second_interrupt_still_cleans_up(tmp_path):
    """Two SIGINTs in a row: the run is torn down and marked, the second
    only makes the runner skip what is not cleanup."""
    r, _ = make_runner(tmp_path, cfg(repeats=2), mode="hang")
    sigs = RN.Signals()
    r.signals = sigs
    sigs.install()

    def twice():
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.05)
        os.kill(os.getpid(), signal.SIGINT)

    try:
        threading.Timer(0.8, twice).start()
        results = r.run_all()
        time.sleep(0.2)
    finally:
        sigs.restore()
    assert sigs.hurry and len(results) == 1 and results[0].status == "interrupted"
    assert FakeNet.instances[0].stopped
    assert all(p.poll() is not None for p in FakeNet.instances[0].procs)
