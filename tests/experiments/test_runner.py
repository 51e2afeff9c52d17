"""The runner's loop, supervision and records against a fake network whose
'agents' are small local processes (no root, no Mininet): what a run does
when everything works, when a switch dies, when an agent hangs or is wrong,
and when the user interrupts."""

import dataclasses
import json
import os
import re
import signal
import threading
import time
import tomllib

from contract.events import validate
from experiments import runner as RN
from experiments import summary as SU
from experiments import supervise
from experiments.signals import Signals
from hosts import agent
from hosts.job import JobSpec, RankSpec


def make_runner(fake_net, tmp_path, c, **net_kw):
    lines = []
    r = RN.Runner(c, tmp_path / "fake", target="soft", netem_ok=False, versions={"test": True},
                  network_factory=lambda **kw: fake_net(**kw, **net_kw), say=lines.append)
    return r, lines


def meta(run_dir):
    return json.loads((run_dir / "meta.json").read_text())


def test_two_variants_ok_records_and_summary(tmp_path, fake_net, fake_spec):
    r, lines = make_runner(fake_net, tmp_path, fake_spec())
    results = r.run_all()
    assert [x.status for x in results] == ["ok", "ok"], [x.reason for x in results]
    assert SU.exit_code(results, False) == SU.EXIT_OK
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
    analysed = [a for _, a in SU.load_analysed(results)]
    s = SU.summary(r.spec, results, analysed, interrupted=False)
    for v in ("baseline", "symphony"):
        assert s["variants"][v]["runs_ok"] == 1 and s["variants"][v]["cct_mean_s"] > 0
    assert isinstance(s["cct_change_pct"], float)
    assert "baseline" in SU.table(s)


def test_run_dirs_are_never_reused(tmp_path, fake_net, fake_spec):
    r, _ = make_runner(fake_net, tmp_path, fake_spec())
    r.stamp = "20000101T000000Z"
    a = r.run_one("baseline", 1)
    b = r.run_one("baseline", 1)
    assert a.run_dir != b.run_dir and a.run_dir.exists() and b.run_dir.exists()


def test_dead_switch_fails_the_run_keeps_records_next_repeat_runs(tmp_path, fake_net, fake_spec):
    r, _ = make_runner(fake_net, tmp_path, fake_spec(repeats=2, variants=["baseline"]), die_after=0.3, mode="hang")
    t = time.monotonic()
    results = r.run_all()
    assert time.monotonic() - t < 10
    assert [x.status for x in results] == ["failed", "failed"]
    assert re.fullmatch(r"switch p1 exited with code -9 at t=\d+\.\ds", results[0].reason), results[0].reason
    for res in results:
        assert meta(res.run_dir)["reason"] == res.reason
        assert (res.run_dir / "agents" / "rank0.jsonl").stat().st_size > 0
    assert all(n.stopped for n in fake_net.instances) and len(fake_net.instances) == 2
    assert all(p.poll() is not None for n in fake_net.instances for p in n.procs)
    assert SU.exit_code(results, False) == SU.EXIT_FAILED


def test_fail_fast_stops_after_the_first_failure(tmp_path, fake_net, fake_spec):
    r, lines = make_runner(fake_net, tmp_path, fake_spec(repeats=2), die_after=0.3, mode="hang")
    r.fail_fast = True
    results = r.run_all()
    assert len(results) == 1 and results[0].status == "failed"
    assert any("--fail-fast" in x for x in lines)


def test_agent_deadline_error_is_the_reason(tmp_path, fake_net, fake_spec):
    r, _ = make_runner(fake_net, tmp_path, fake_spec(variants=["baseline"]), mode="fail3")
    (res,) = r.run_all()
    assert res.status == "failed"
    assert "agent job 1 rank 1 on" in res.reason and "exited with code 3" in res.reason
    assert "waited 5 s for step 3 data from rank 0" in res.reason


def test_wrong_result_gives_exit_1(tmp_path, fake_net, fake_spec):
    r, _ = make_runner(fake_net, tmp_path, fake_spec(variants=["symphony"]), mode="wrong")
    (res,) = r.run_all()
    assert res.wrong and res.status == "failed"
    assert meta(res.run_dir)["wrong_result"] is True
    assert SU.exit_code([res], False) == SU.EXIT_WRONG


def test_runner_deadline(tmp_path, fake_net, fake_spec):
    r, _ = make_runner(fake_net, tmp_path, fake_spec(run_deadline_s=1, variants=["baseline"]), mode="hang")
    (res,) = r.run_all()
    assert res.status == "failed" and res.reason.startswith("runner deadline of 1s passed with 4 agent(s)")
    assert all(p.poll() is not None for p in fake_net.instances[0].procs)


def test_interrupt_marks_the_run_and_stops(tmp_path, fake_net, fake_spec):
    r, _ = make_runner(fake_net, tmp_path, fake_spec(repeats=2), mode="hang")
    sigs = Signals()
    r.signals = sigs
    sigs.install()
    try:
        threading.Timer(0.8, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
        results = r.run_all()
    finally:
        sigs.restore()
    assert len(results) == 1 and results[0].status == "interrupted"
    assert meta(results[0].run_dir)["status"] == "interrupted"
    assert fake_net.instances[0].stopped
    assert all(p.poll() is not None for p in fake_net.instances[0].procs)
    s = SU.summary(r.spec, results, [a for _, a in SU.load_analysed(results)], interrupted=True)
    assert s["interrupted"] is True and s["runs"][0]["status"] == "interrupted"
    assert SU.exit_code(results, True) == SU.EXIT_INTERRUPTED


def test_second_interrupt_still_cleans_up(tmp_path, fake_net, fake_spec):
    """Two SIGINTs in a row: the run is torn down and marked, the second
    only makes the runner skip what is not cleanup."""
    r, _ = make_runner(fake_net, tmp_path, fake_spec(repeats=2), mode="hang")
    sigs = Signals()
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
    assert fake_net.instances[0].stopped
    assert all(p.poll() is not None for p in fake_net.instances[0].procs)


def test_every_agent_starts_at_the_start_file_time_and_the_jitter_counts_from_it(tmp_path, fake_net, fake_spec):
    """The start barrier with the fake agents (hosts.agent's own wait and
    sleep): every agent logs `ready` before the start file exists, meta.json's
    t0_ns is the time the file holds, every first step starts after it (a
    loose bound here: the fake agents are for the logic; the tight one is the
    soft target's, test_runner_soft.py), and the squeezes land relative to it."""
    r, _ = make_runner(fake_net, tmp_path, fake_spec(variants=["baseline"]))
    (res,) = r.run_all()
    assert res.status == "ok", res.reason
    m = meta(res.run_dir)
    t0 = m["t0_ns"]
    assert int((res.run_dir / "agents" / RN.START_FILE).read_text()) == t0
    assert m["start_margin_s"] == RN.START_MARGIN_S and t0 - m["agents_ready_ns"] == round(RN.START_MARGIN_S * 1e9)
    for rank in range(4):
        evs = [json.loads(x) for x in (res.run_dir / "agents" / f"rank{rank}.jsonl").read_text().splitlines()]
        assert [e["kind"] for e in evs[:3]] == ["ready", "iter_start", "step_start"]
        assert evs[0]["t"] <= m["agents_ready_ns"]
        assert evs[1]["start"]["at_ns"] == t0 and evs[1]["start"]["seen_ns"] < t0
        assert 0 <= evs[2]["t"] - t0 < 200e6
    start = m["start"]
    assert start["agents"] == start["started"] == 4 and start["headroom_min_ms"] > 0
    assert 0 <= start["first_step_ms"][0] <= start["first_step_ms"][1] < 200
    applied = [json.loads(x) for x in (res.run_dir / "jitter_applied.jsonl").read_text().splitlines()]
    assert [a["op"] for a in applied] == ["set_rate", "set_rate"]
    # each action at its scheduled time after t0 (the wall clock's when the
    # injector did it), never before
    for a in applied:
        assert 0 <= (a["t"] - t0) / 1e9 - a["t_sched_s"] < 0.15, a


def test_an_agent_that_never_gets_ready_fails_the_run_naming_it(tmp_path, fake_net, fake_spec, monkeypatch):
    monkeypatch.setattr("experiments.supervise.STARTUP_S", 3.0)
    r, _ = make_runner(fake_net, tmp_path, fake_spec(variants=["baseline"]), mode="unready")
    t = time.monotonic()
    (res,) = r.run_all()
    assert time.monotonic() - t < 15
    assert res.status == "failed"
    assert re.fullmatch(r"agent job 1 rank 1 on h\d+ was not ready \(set up, logged `ready`\) within 3s of its start",
                        res.reason), res.reason
    # no start file: the others were never let go, and the run has no t0
    assert not (res.run_dir / "agents" / RN.START_FILE).exists() and "t0_ns" not in meta(res.run_dir)
    assert all(p.poll() is not None for p in fake_net.instances[0].procs)


def test_the_runner_gives_up_on_a_slow_start_before_the_agents_do():
    """An agent waits longer for the start file than the runner waits for
    every agent to be ready: a slow start is reported by the runner, naming
    the late agent, not by the early agents timing out."""
    assert supervise.STARTUP_S < agent.START_WAIT_S
    # ... however long the agents' inputs take to draw: both limits grow with them
    small = JobSpec(job=1, data_port=5000, message_bytes=4000, iterations=3,
                    ranks=tuple(RankSpec(r, f"10.0.0.{r + 1}") for r in range(2)))
    large = dataclasses.replace(small, message_bytes=40_000_000, iterations=1,
                                ranks=tuple(RankSpec(r, f"10.0.0.{r + 1}") for r in range(6)))
    assert supervise.startup_s((small,)) < supervise.STARTUP_S + 1
    # the demo's large job at K = 50: six agents each draw all six 40 MB inputs
    assert supervise.startup_s((small, large)) >= supervise.STARTUP_S + 6 * 240e6 / supervise.DRAW_BYTES_PER_S
    # and every agent can see the start file before the start time
    assert agent.START_POLL_S < supervise.START_MARGIN_S / 4
