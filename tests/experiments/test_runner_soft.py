"""The runner end to end on the soft target (root, Mininet, the twin, the
agents): a short 4-rank run of both variants (also on BMv2, where it is
installed: the VM), a twin killed mid-run, SIGINT to the runner mid-run.
Skips with the reason while a part it needs is absent."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from contract.events import validate
from experiments import config as C
from experiments import runner as RN
from experiments.network import build_network
from tests.harness import REPO

CI4 = REPO / "experiments" / "configs" / "ci4.toml"


def _missing() -> str:
    if os.geteuid() != 0:
        return "needs root (Mininet, network namespaces)"
    for mod, what in (("topologies.network.testbed", "the network (topologies/network/testbed.py)"),
                      ("topologies.switch.twin.__main__", "the twin process (python3 -m topologies.switch.twin)"),
                      ("hosts.agent", "the agent (hosts/agent.py)"),
                      ("mininet.net", "Mininet")):
        try:
            if importlib.util.find_spec(mod) is None:
                return f"{what} is not there yet"
        except ImportError:
            return f"{what} is not there yet"
    return ""


pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(bool(_missing()), reason=_missing() or "ok")]


def _meta(run_dir: Path) -> dict:
    return json.loads((run_dir / "meta.json").read_text())


def _left_behind(net_id: str) -> list[str]:
    """Namespaces, interfaces, state files and processes of one network that
    still exist."""
    left = []
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    left += [x.split()[0] for x in out.splitlines() if f"sym-{net_id}-" in x]
    out = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout
    left += [x.split(":")[1].strip() for x in out.splitlines() if f" sym{net_id}" in x]
    state = Path(os.environ.get("SYMPHONY_STATE_DIR", "/run/symphony")) / f"{net_id}.json"
    if state.exists():
        left.append(str(state))
    return left


def _procs_mentioning(text: str) -> list[str]:
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            stat = (d / "stat").read_text()
        except OSError:
            continue
        if text in cmd and ") Z " not in stat and int(d.name) != os.getpid():
            out.append(f"{d.name}: {cmd[:120]}")
    return out


def _runs(exp_dir: Path) -> list[Path]:
    return sorted(p for p in exp_dir.iterdir() if p.is_dir() and re.search(r"-rep\d+$", p.name))


# The start barrier's bounds on a real run (4 agents, ci4): every rank's
# first step starts within FIRST_STEP_MS of t0 (meta.json's start time) and
# never before it; ci4 measured 0.3-1.2 ms (spread 0.75-0.84 ms) with another
# engineer's 8-rank emulation sharing the 2 cores, 16 ranks on a quiet machine
# (experiments/README.md, "The start barrier"); the bound
# leaves room for a loaded machine (the agents' timer p99 reached 6 ms with 8
# agents and 2 busy loops: docs/hosts.md, "Timer lateness").
FIRST_STEP_MS = 10.0
# a jitter action is begun when due after t0: measured 0.1-2.8 ms after its
# scheduled time, quiet or beside two busy loops
JITTER_LATE_MS = 50.0
# and done once both ends of the link are changed: the switch's control call
# (2-4 ms) and a tc on the host (a process spawned into its namespace: 5-11 ms
# on a quiet machine, 9-42 ms beside two busy loops; CI saw one action done
# 122 ms after its time on BMv2).  The bound catches a call that hangs, not a
# busy machine.
JITTER_APPLY_MS = 500.0


def _check_start(run: Path, meta: dict) -> None:
    """The start barrier in a run's records: the start file holds meta.json's
    t0_ns, every rank logged `ready` before it and started within
    FIRST_STEP_MS after it, the jitter actions at their times after it."""
    t0 = meta["t0_ns"]
    assert int((run / "agents" / RN.START_FILE).read_text()) == t0
    firsts = []
    for f in sorted((run / "agents").glob("rank*.jsonl")):
        evs = [json.loads(x) for x in f.read_text().splitlines()]
        assert evs[0]["kind"] == "ready" and evs[0]["t"] < t0
        firsts.append(next(e["t"] for e in evs if e["kind"] == "step_start") - t0)
    assert 0 <= min(firsts) and max(firsts) < FIRST_STEP_MS * 1e6, [x / 1e6 for x in firsts]
    start = meta["start"]
    assert start["started"] == 4 and start["headroom_min_ms"] > 0 and start["first_step_ms"][1] < FIRST_STEP_MS
    applied = [json.loads(x) for x in (run / "jitter_applied.jsonl").read_text().splitlines()]
    due = [a for a in applied if a.get("t_sched_s") is not None]
    assert [a["op"] for a in due] == ["set_rate", "set_rate"]
    for a in due:
        late_ms = ((a["t_begun"] - t0) / 1e9 - a["t_sched_s"]) * 1e3
        assert 0 <= late_ms < JITTER_LATE_MS, a
        assert 0 <= (a["t"] - a["t_begun"]) / 1e6 < JITTER_APPLY_MS, a


@pytest.mark.parametrize("target", ["soft", pytest.param("bmv2", marks=pytest.mark.bmv2)])
def test_ci4_both_variants_exact_records_valid(tmp_path, target):
    r = subprocess.run([sys.executable, "-m", "experiments", "run", str(CI4), "--no-sim", "--target", target,
                        "--out", str(tmp_path), "--no-report"],
                       capture_output=True, text=True, timeout=300, cwd=REPO)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    runs = _runs(tmp_path / "ci4")
    assert sorted(p.name.split("-")[1] for p in runs) == ["baseline", "symphony"]
    for run in runs:
        meta = _meta(run)
        assert meta["status"] == "ok" and meta["target"] == target and meta["wrong_result"] is False
        files = sorted((run / "agents").glob("rank*.jsonl"))
        assert [f.name for f in files] == [f"rank{i}.jsonl" for i in range(4)]
        iter_ends = 0
        for f in files:
            for line in f.read_text().splitlines():
                ev = json.loads(line)
                validate(ev)
                if ev["kind"] == "iter_end":
                    assert ev["exact"] is True
                    iter_ends += 1
        assert iter_ends == 4 * 2
        assert sorted(p.stem for p in (run / "switches").glob("*.json")) == ["l1", "l2", "p1"]
        for p in (run / "switches").glob("*.json"):
            json.loads(p.read_text())
        assert (run / "config.toml").exists() and (run / "jobs" / "job1.toml").exists()
        _check_start(run, meta)
        assert _left_behind(meta["network_id"]) == []
    # same seed, same schedule; and it is the one the config makes
    texts = {(run / "jitter.jsonl").read_text() for run in runs}
    assert len(texts) == 1 and texts.pop().count("\n") == 2
    summary = json.loads((tmp_path / "ci4" / "summary.json").read_text())
    for v in ("baseline", "symphony"):
        assert summary["variants"][v]["runs_ok"] == 1 and summary["variants"][v]["cct_mean_s"] > 0
    assert isinstance(summary["cct_change_pct"], float)
    assert "Symphony against baseline" in r.stdout


def _long_ci_config(tmp_path: Path, repeats: int) -> Path:
    """ci4 with a message large enough that a run lasts several seconds."""
    text = CI4.read_text().replace("message_bytes = 120000", "message_bytes = 600000")
    text = text.replace("repeats = 1", f"repeats = {repeats}")
    text = text.replace('variants = ["baseline", "symphony"]', 'variants = ["baseline"]')
    path = tmp_path / "long.toml"
    path.write_text(text)
    return path


def _signal_the_spine(cfg, tmp_path: Path, sig: int, after_s: float) -> tuple[list[RN.RunResult], list]:
    """Run cfg on the soft target and, in the first run only, send sig to
    the spine's twin after_s once every agent is up; the results and the
    (network, run dir) of each run."""
    nets = []

    def factory(plan, run_dir, target):
        net = build_network(plan, target=target, run_dir=run_dir)
        nets.append((net, run_dir))
        return net

    def signaller():
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if nets:
                net, run_dir = nets[0]
                logs = [run_dir / "agents" / f"rank{i}.jsonl" for i in range(4)]
                if all(p.exists() and p.stat().st_size for p in logs):
                    time.sleep(after_s)
                    os.kill(net.net.get("p1").switch_pid, sig)
                    return
            time.sleep(0.05)

    runner = RN.Runner(cfg, tmp_path / "exp", target="soft", network_factory=factory, say=lambda line: None)
    t = threading.Thread(target=signaller, daemon=True)
    t.start()
    results = runner.run_all()
    t.join(5)
    return results, nets


def test_killing_a_twin_fails_the_run_and_the_next_repeat_runs(tmp_path):
    results, nets = _signal_the_spine(C.load(_long_ci_config(tmp_path, repeats=2)), tmp_path, signal.SIGKILL, 0.5)
    assert [r.status for r in results] == ["failed", "ok"], [r.reason for r in results]
    reason = results[0].reason
    assert re.fullmatch(r"switch p1 exited with code -9 at t=\d+\.\ds", reason), reason
    first = results[0].run_dir
    assert _meta(first)["status"] == "failed" and _meta(first)["reason"] == reason
    assert all((first / "agents" / f"rank{i}.jsonl").stat().st_size > 0 for i in range(4))
    for net, run_dir in nets:
        assert _left_behind(net.id) == []
        assert _procs_mentioning(str(run_dir)) == []


def test_a_stopped_twin_fails_the_run_as_hung(tmp_path):
    """SIGSTOP of the spine's twin once the agents are up: the run fails
    naming the hung switch (not the jitter action it stalls, nor an agent's
    deadline), quickly, and leaves nothing behind."""
    t0 = time.monotonic()
    (res,), [(net, run_dir)] = _signal_the_spine(C.load(_long_ci_config(tmp_path, repeats=1)), tmp_path,
                                                 signal.SIGSTOP, 0.0)
    assert res.status == "failed" and time.monotonic() - t0 < 60
    assert re.fullmatch(r"switch p1 hung at t=\d+\.\ds: stopped \(process \d+ in state T: SIGSTOP or a debugger\)",
                        res.reason), res.reason
    assert _meta(res.run_dir)["problems"] == ["switch dump skipped: p1 hung"]
    assert _left_behind(net.id) == []
    assert _procs_mentioning(str(run_dir)) == []


def test_sigint_to_the_runner_marks_the_run_and_writes_the_summary(tmp_path):
    config = _long_ci_config(tmp_path, repeats=3)
    out = tmp_path / "res"
    proc = subprocess.Popen([sys.executable, "-m", "experiments", "run", str(config), "--no-sim", "--target", "soft",
                             "--out", str(out), "--no-report"], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        first = None
        while time.monotonic() < deadline and proc.poll() is None:
            runs = _runs(out / "ci4") if (out / "ci4").is_dir() else []
            if runs and all((runs[0] / "agents" / f"rank{i}.jsonl").exists() for i in range(4)):
                first = runs[0]
                break
            time.sleep(0.05)
        assert first is not None, "the first run never got its agents up"
        time.sleep(0.5)
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, stdout[-1500:] + stderr[-1500:]
    runs = _runs(out / "ci4")
    assert len(runs) == 1
    meta = _meta(runs[0])
    assert meta["status"] == "interrupted"
    summary = json.loads((out / "ci4" / "summary.json").read_text())
    assert summary["interrupted"] is True
    assert [r["status"] for r in summary["runs"]] == ["interrupted"]
    assert _left_behind(meta["network_id"]) == []
    assert _procs_mentioning(str(runs[0])) == []
