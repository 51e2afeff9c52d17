"""The compiled engine and the Python one run a scenario alike: the same
records (every agent's jsonl line, to the byte), switch dumps, port and
NIC counters, jitter log, events and frames, on the shipped configs the
issue names (ci4, nohelp_star, the demo's full size at the config's
rates), on a fabric with every jitter kind (netem jitter, loss,
correlation and reordering, a squeeze, cross traffic, a straggler), and
at the deployment's scale without data; an incast's flows alike too
(experiments/sim/flows.py).  The Python engine is the
reference: where these differ, the compiled one is wrong."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from experiments import config as C
from experiments.bench import dcqcn_reference
from experiments.config.scale import deployment_scaling, scale
from experiments.plan import run_plan, wall_deadline_s
from experiments.sim.flows import run as run_flows
from experiments.sim.run import run_sim
from experiments.supervise import RunResult
from tests.experiments.sim.test_run import RAW
from tests.harness import REPO

CONFIGS = REPO / "experiments" / "configs"
EVERY_KIND = json.loads(json.dumps(RAW))
EVERY_KIND["jitter"][2].update(correlation_pct=25, reorder_pct=10, distribution="normal")


def run(spec: C.ExperimentSpec, engine: str, out: Path, variant: str, data: bool) -> dict:
    plan = run_plan(spec, variant, 1, netem_ok=True, target="sim")
    out.mkdir(parents=True)
    meta: dict = {}
    run_sim(plan, out, RunResult(out, variant, 1), meta, wall_deadline_s(spec, plan.jobs), data=data, engine=engine)
    files = {str(p.relative_to(out)): p.read_text() for p in sorted(out.rglob("*")) if p.is_file()}
    sim = {k: meta["sim"][k] for k in ("virtual_s", "events", "frames")}
    return {"files": files, "ports": meta["switch_ports"], "nics": meta["host_nics"], "sim": sim}


def same(spec: C.ExperimentSpec, tmp: Path, variant: str = "symphony", data: bool = True) -> dict:
    compiled = run(spec, "compiled", tmp / "compiled", variant, data)
    python = run(spec, "python", tmp / "python", variant, data)
    assert compiled["files"].keys() == python["files"].keys()
    for name, text in python["files"].items():
        assert compiled["files"][name] == text, name
    for key in ("ports", "nics", "sim"):
        assert compiled[key] == python[key], key
    return python


@pytest.mark.parametrize("variant", ["baseline", "symphony"])
@pytest.mark.parametrize("name", ["ci4", "nohelp_star"])
def test_shipped_configs_alike(tmp_path, name, variant):
    out = same(C.load(CONFIGS / f"{name}.toml"), tmp_path, variant)
    assert any('"kind":"step_end"' in t for t in out["files"].values())


def test_every_jitter_kind_alike(tmp_path):
    out = same(C.resolve(EVERY_KIND), tmp_path)
    applied = out["files"]["jitter_applied.jsonl"]
    assert all(kind in applied for kind in ("netem", "rate", "cross"))
    assert any(p.get("netem_egress") or p.get("netem_ingress") for sw in out["ports"].values()
               for p in sw["ports"].values())


@pytest.mark.slow
def test_the_demo_at_its_rates_alike(tmp_path):
    out = same(C.load(CONFIGS / "victim_straggle8.toml"), tmp_path)
    assert out["sim"]["frames"] > 50_000


def test_deployment_scale_without_data_alike(tmp_path):
    spec = C.load(CONFIGS / "ci4.toml")
    same(scale(spec, deployment_scaling(spec, 32)), tmp_path, data=False)


def ecmp_spines2(routing: str, track: str = "path") -> C.ExperimentSpec:
    """ecmp_spines2 under a routing and a track, its messages an eighth."""
    raw = C.load_raw(CONFIGS / "ecmp_spines2.toml")
    raw["topology"]["routing"] = routing
    raw["symphony"] = {**raw.get("symphony", {}), "track": track}
    for job in raw["jobs"]:
        job["message_bytes"] //= 8
    return C.resolve(raw)


@pytest.mark.parametrize("routing", ["ecmp", "ecmp-flow"])
def test_ecmp_fabric_alike(tmp_path, routing):
    # both engines' switches hash every step's tag onto the spines alike
    out = same(ecmp_spines2(routing), tmp_path)
    dumps = {name: json.loads(t) for name, t in out["files"].items() if name.startswith("switches/")}
    assert all(d.get("ecmp") for name, d in dumps.items() if name.startswith("switches/l"))
    # under ecmp a spine's n_local counts every flow that may cross it, so no
    # step completes there (docs/ecmp.md); ecmp-flow's spines keep up
    frontiers = {d["registers"]["frontier"][slot] for name, d in dumps.items() if name.startswith("switches/p")
                 for slot in d["jobs"].values()}
    assert (frontiers == {0x3FFF}) == (routing == "ecmp")


def test_ecmp_tracked_at_the_leaves_alike(tmp_path):
    # symphony.track = "leaves": the spines get no flow entries, so they
    # never track or Symphony-mark; the leaves see every step of their
    # hosts' flows and their frontiers reach each job's last step
    spec = ecmp_spines2("ecmp", "leaves")
    out = same(spec, tmp_path)
    dumps = {name: json.loads(t) for name, t in out["files"].items() if name.startswith("switches/")}
    spines = {name: d for name, d in dumps.items() if name.startswith("switches/p")}
    assert spines and all(not d["flows"] and not d["jobs"] for d in spines.values())
    assert not any(c["packets"] for d in spines.values() for c in d["counters"]["sym_marks"].values())
    last = {j.job: (j.iterations * 2 * (j.ranks - 1) - 1) & 0x3FFF for j in spec.jobs}
    leaves = [d for name, d in dumps.items() if name.startswith("switches/l")]
    assert {(job, d["registers"]["frontier"][slot]) for d in leaves for job, slot in d["jobs"].items()} == \
        {(str(job), step) for job, step in last.items()}


def test_ecmp_tracked_in_groups_alike(tmp_path):
    # symphony.track = "groups": each flow's n_local at a spine is its spine
    # group's size, so whichever spine carries a step completes it, and the
    # spines that carried a job's last step end on it (docs/ecmp.md)
    spec = ecmp_spines2("ecmp", "groups")
    out = same(spec, tmp_path)
    dumps = {name: json.loads(t) for name, t in out["files"].items() if name.startswith("switches/p")}
    last = {str(j.job): (j.iterations * 2 * (j.ranks - 1) - 1) & 0x3FFF for j in spec.jobs}
    ends = {(job, d["registers"]["frontier"][slot]) for d in dumps.values() for job, slot in d["jobs"].items()}
    assert set(last.items()) <= ends


# three leaves of three hosts under one spine: job 1's ring visits every leaf
# twice (each leaf holds two of its ranks, not neighbours), job 2's runs the
# other way round, so the spine's downlinks carry flows from two leaves
THREE_LEAVES = {
    "name": "verdict3", "seed": 3, "repeats": 1,
    "topology": {"kind": "leafspine", "hosts": 9, "leaves": 3, "spines": 1, "host_rate_mbit": 20,
                 "fabric_rate_mbit": 10, "host_delay_ms": 0.5, "fabric_delay_ms": 1.0},
    "jobs": [{"ranks": 6, "hosts": ["h1", "h4", "h7", "h2", "h5", "h8"], "message_bytes": 120000, "iterations": 1},
             {"ranks": 3, "hosts": ["h9", "h6", "h3"], "message_bytes": 40000, "iterations": 2}],
    "symphony": {"threshold": 1, "track": "verdict"},
    "jitter": [{"kind": "compute", "job": 1, "rank": 1, "iter": 0, "delay_s": 0.3}],
}


def test_the_leaves_verdict_alike(tmp_path):
    # symphony.track = "verdict": flows installed at their leaves only, and
    # the spine, tracking none, marks on the verdict a leaf wrote into the
    # packet (the reserved IPv4 flag: frame bytes in the Python engine, a
    # descriptor field in the compiled one), counted in verdict_marks
    out = same(C.resolve(THREE_LEAVES), tmp_path)
    dumps = {name: json.loads(t) for name, t in out["files"].items() if name.startswith("switches/")}
    verdict = {name: sum(c["packets"] for c in d["counters"]["verdict_marks"].values()) for name, d in dumps.items()}
    assert not dumps["switches/p1.json"]["flows"] and verdict["switches/p1.json"] > 0
    assert all(n == 0 for name, n in verdict.items() if name != "switches/p1.json")


def incast(engine: str) -> list[tuple]:
    """dcqcn_reference's four-sender incast with a late joiner, 2 MB a flow."""
    net = dcqcn_reference.network(4, seed=2)
    flows = run_flows(net, [2_000_000] * 4, [0.0] * 3 + [dcqcn_reference.LATE_S], until=0.05, engine=engine)
    return [(f.end_s, [r for r in f.rates if r[0] <= f.end_s]) for f in flows]


def test_an_incast_alike():
    # the DCQCN comparison with HPCC's ns-3 runs on either engine: each
    # flow's completion and every change of its sender's rate the same
    python = incast("python")
    assert all(end is not None for end, _ in python)
    assert sum(len(rates) for _, rates in python) > 20      # the network marked, and the senders reacted
    assert incast("compiled") == python


def test_a_cnp_from_outside_needs_the_python_engine():
    net = dcqcn_reference.network(2, seed=1)
    with pytest.raises(ValueError, match="cnp_at"):
        run_flows(net, [10_000, 10_000], [0.0, 0.0], until=0.01, cnp_at={0: 1e-4}, engine="compiled")
