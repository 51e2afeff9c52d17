"""Runs on the simulation target (experiments/sim/run.py): every rank's
AllReduce exact through the agents' own code and the twin's switches, every
jitter kind performed, records identical for the same config and seed, a
flipped bit caught by the agents' own check, a TCP job refused."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import tomli_w

from contract import exits
from experiments import config as C
from experiments.plan import run_plan, wall_deadline_s
from experiments.sim.run import SimRun, run_sim
from experiments.supervise import RunFailed, RunResult
from tests.harness import REPO

# Two jobs on a 2-leaf, 2-spine fabric; every jitter kind
RAW = {
    "name": "simtest", "seed": 5, "repeats": 1,
    "topology": {"kind": "leafspine", "hosts": 6, "leaves": 2, "spines": 2, "host_rate_mbit": 20,
                 "fabric_rate_mbit": 10, "host_delay_ms": 0.5, "fabric_delay_ms": 1.0, "queue_depth_pkts": 64},
    "jobs": [{"ranks": 4, "message_bytes": 60000, "iterations": 2},
             {"ranks": 2, "message_bytes": 20000, "iterations": 3}],
    "ecn": {"kmin": 5, "kmax": 20},
    "jitter": [
        {"kind": "compute", "job": 1, "rank": "random", "iter": 1, "delay_s": 0.2},
        {"kind": "rate", "pick": "fabric", "start_s": 0.05, "duration_s": 0.2, "fraction": 0.3},
        {"kind": "netem", "pick": "access", "start_s": 0.1, "duration_s": 0.3, "delay_ms": 2, "jitter_ms": 1,
         "loss_pct": 2},
        {"kind": "cross", "src": "h2", "dst": "h5", "start_s": 0.0, "duration_s": 0.3, "rate_mbit": 4},
    ],
}


def spec(**changes) -> C.ExperimentSpec:
    raw = json.loads(json.dumps(RAW))
    raw.update(changes)
    return C.resolve(raw)


def simulate(tmp: Path, variant: str = "symphony", s: C.ExperimentSpec | None = None) -> tuple[RunResult, dict]:
    s = s or spec()
    plan = run_plan(s, variant, 1, netem_ok=True, target="sim")
    tmp.mkdir(parents=True, exist_ok=True)
    res, meta = RunResult(tmp, variant, 1), {}
    run_sim(plan, tmp, res, meta, wall_deadline_s(s, plan.jobs))
    return res, meta


def events(run_dir: Path) -> list[dict]:
    return [json.loads(line) for p in sorted(run_dir.glob("agents/job*/rank*.jsonl"))
            for line in p.read_text().splitlines()]


def test_every_allreduce_is_exact_and_every_jitter_kind_applied(tmp_path):
    res, meta = simulate(tmp_path)
    assert set(res.agent_codes.values()) == {exits.OK} and len(res.agent_codes) == 6
    ends = [e for e in events(tmp_path) if e["kind"] == "iter_end"]
    assert len(ends) == 4 * 2 + 2 * 3 and all(e["exact"] is True for e in ends)
    applied = [json.loads(line) for line in (tmp_path / "jitter_applied.jsonl").read_text().splitlines()]
    assert {a["op"] for a in applied} == {"set_rate", "netem_start", "netem_stop", "cross_start", "cross_stop"}
    assert meta["target"] == "sim" and meta["fidelity"]["verdict"] == "ok"
    assert meta["sim"]["frames"] > 1000 and meta["sim"]["events"] > meta["sim"]["frames"]
    nics = meta["host_nics"]
    assert nics["h5"]["no_listener"] > 0             # the cross traffic reached its sink
    dumps = {p.stem: json.loads(p.read_text()) for p in (tmp_path / "switches").glob("*.json")}
    assert set(dumps) == {"l1", "l2", "p1", "p2"} and all(d["target"] == "sim" for d in dumps.values())
    assert any(d["counters"]["sym_marks"] for d in dumps.values())


def test_the_same_config_and_seed_give_identical_records(tmp_path):
    simulate(tmp_path / "a")
    simulate(tmp_path / "b")
    for rel in ["jitter_applied.jsonl", *sorted(str(p.relative_to(tmp_path / "a"))
                                              for p in (tmp_path / "a").glob("*/**/*.json*"))]:
        assert (tmp_path / "a" / rel).read_bytes() == (tmp_path / "b" / rel).read_bytes(), rel


def job_codes(sim: SimRun) -> dict[int, list[int]]:
    codes = {r.spec.job: [] for r in sim.ranks}
    for r in sim.ranks:
        codes[r.spec.job].append(r.code)
    return codes


def test_a_flipped_bit_is_caught_by_the_agents_own_check(tmp_path):
    plan = run_plan(spec(), "baseline", 1, netem_ok=True, target="sim")
    sim = SimRun(plan, tmp_path, engine="python")
    # one data frame of one step gets a bit of its payload flipped on the wire
    h = sim.net.hosts[plan.jobs[0].ranks[1].host]           # a rank of job 1
    receive, flipped = h.receive, []

    def corrupt(port, frame):
        if not flipped and len(frame) > 600 and frame[37] == 0x88:     # job 1's data port 5000
            frame = frame[:-1] + bytes([frame[-1] ^ 1])
            flipped.append(frame)
        receive(port, frame)
    h.receive = corrupt
    sw, port = next((s, p) for s in sim.net.switches.values() for p, (fn, _) in s.out.items()
                    if getattr(fn, "__self__", None) is h)
    sw.connect(port, corrupt, 0)
    sim.run(60.0)
    sim.close()
    assert flipped
    codes = job_codes(sim)
    assert exits.WRONG in codes[1] and set(codes[2]) == {exits.OK}


class FlipOnce:
    """A compiled transport whose first step handed over has a bit flipped:
    what the compiled engine delivers is checked by the same Rank."""

    def __init__(self, transport):
        self.transport, self.flipped = transport, False

    def __getattr__(self, name):
        return getattr(self.transport, name)

    def taken(self):
        data = self.transport.taken()
        if not self.flipped and data:
            data[-1] ^= 1
            self.flipped = True
        return data


def test_a_bit_flipped_in_the_compiled_engine_is_caught_by_the_agents_own_check(tmp_path):
    plan = run_plan(spec(), "baseline", 1, netem_ok=True, target="sim")
    sim = SimRun(plan, tmp_path, engine="compiled")
    victim = next(r for r in sim.ranks if r.spec.job == 1 and r.rank.rank == 1).rank.tr
    victim.c = flip = FlipOnce(victim.c)
    sim.run(60.0)
    sim.close()
    assert flip.flipped
    codes = job_codes(sim)
    assert exits.WRONG in codes[1] and set(codes[2]) == {exits.OK}


def test_a_tcp_job_is_refused_in_one_line(tmp_path):
    raw = json.loads(json.dumps(RAW))
    raw["jobs"][1]["transport"] = "tcp"
    cfg = tmp_path / "tcp.toml"
    cfg.write_text(tomli_w.dumps(raw))
    r = subprocess.run([sys.executable, "-m", "experiments", "run", str(cfg), "--target", "sim",
                        "--out", str(tmp_path / "out")], capture_output=True, text=True, cwd=REPO)
    assert r.returncode == exits.USAGE
    assert r.stderr.strip().count("\n") == 0 and "TCP" in r.stderr and "jobs[1]" in r.stderr
    with pytest.raises(ValueError, match="TCP"):
        SimRun(run_plan(C.resolve(raw), "baseline", 1, netem_ok=True, target="sim"), tmp_path / "run")


def test_a_deadline_that_passes_fails_the_run_naming_the_rank(tmp_path):
    s = spec(jobs=[{**RAW["jobs"][0], "deadlines": {"step_s": 0.01}}, RAW["jobs"][1]])
    with pytest.raises(RunFailed, match=r"agent job 1 rank \d on h\d exited with code 3 .*step deadline"):
        simulate(tmp_path, s=s)
