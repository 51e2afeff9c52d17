"""What a run gets: the two variants of a repeat differ only in whether the
Symphony flows are enabled; the network's jobs carry their transport."""

from dataclasses import replace

import pytest

from experiments import network as N
from experiments import plan as P
from experiments.network import build_network
from hosts.job import Straggle
from topologies.switch.params import EcnParams


def test_variants_differ_only_in_enabled(fake_spec):
    c = fake_spec()
    base = P.run_plan(c, "baseline", 1, netem_ok=False)
    sym = P.run_plan(c, "symphony", 1, netem_ok=False)
    assert base.symphony.enabled is False and sym.symphony.enabled is True
    assert replace(base.symphony, enabled=True) == sym.symphony
    assert base.ecn == sym.ecn == EcnParams(kmin=3, kmax=9, pmax=0.5)
    assert base.jobs == sym.jobs                              # DCQCN, straggles, placement, seed
    assert base.jobs[0].dcqcn == {"preset": "emulation", "line_rate_mbit": 10.0, "step_ms": pytest.approx(0.8)}
    assert base.jobs[0].straggle == (Straggle(rank=2, iter=1, delay_s=0.2),)
    assert base.schedule == sym.schedule
    assert base.topo == sym.topo and base.placed == sym.placed


def test_network_gets_each_jobs_transport(fake_spec):
    """The switches install a job's flows in its transport's mode, so the
    network's job tables carry it (a TCP job was once installed as UDP)."""
    plan = P.run_plan(fake_spec(transport="tcp"), "symphony", 1, netem_ok=False)
    assert [j.transport for j in plan.placed] == ["tcp"]
    assert plan.jobs[0].transport == "tcp"


def test_the_network_is_built_from_the_plan(fake_spec, monkeypatch):
    """TestbedNetwork gets the spec's topology, placed jobs, ECN and the
    variant's Symphony parameters, nothing else."""
    calls = []
    monkeypatch.setattr(N, "TestbedNetwork", lambda *a, **kw: calls.append((a, kw)))
    spec = fake_spec(transport="tcp")
    build_network(P.run_plan(spec, "baseline", 1, netem_ok=False), target="soft", run_dir="/tmp/x")
    (args, kw), = calls
    assert args == (spec.topo, tuple(j.placed for j in spec.jobs))
    assert kw == {"target": "soft", "run_dir": "/tmp/x", "ecn": spec.ecn,
                  "symphony": replace(spec.symphony, enabled=False), "seed": P.switch_seed(spec.seed, 1),
                  "frame_bytes": None}          # a TCP job: no UDP data frame to fit the MTU to


def test_switch_seed_per_repeat_same_for_both_variants(fake_spec):
    c = fake_spec()
    seeds = {(v, rep): P.run_plan(c, v, rep, netem_ok=False, target="soft").seed
             for v in ("baseline", "symphony") for rep in (1, 2)}
    assert seeds[("baseline", 1)] == seeds[("symphony", 1)] != seeds[("baseline", 2)] == seeds[("symphony", 2)]


def test_netem_entries_say_how_they_will_be_applied(fake_spec):
    c = replace(fake_spec(), jitter=(*fake_spec().jitter, {
        "kind": "netem", "link": "h1-l1", "start_s": 0.0, "duration_s": 1.0, "count": 1, "delay_ms": 3.0,
        "jitter_ms": 0.0, "loss_pct": 0.0, "distribution": "uniform", "correlation_pct": 0.0, "reorder_pct": 0.0,
        "fallback_fraction": 0.5}))

    def netem(plan):
        return [(e["applied_as"], e["via"]) for e in plan.schedule if e["kind"] == "netem"]

    assert netem(P.run_plan(c, "baseline", 1, netem_ok=True, target="soft")) == [("netem", "netem")]
    twin = P.run_plan(c, "baseline", 1, netem_ok=False, target="soft")
    assert netem(twin) == [("netem", "twin")] and twin.notes == ()


def test_link_delays_left_out_on_bmv2_without_netem_are_said(fake_spec, monkeypatch):
    monkeypatch.setattr(P, "resolve_target", lambda target: "bmv2")
    c = fake_spec()
    delayed = replace(c, topo=replace(c.topo, links=tuple(replace(link, delay_ms=2.0) for link in c.topo.links)))
    assert P.run_plan(c, "baseline", 1, netem_ok=False, target="bmv2").notes == ()
    note, = P.run_plan(delayed, "baseline", 1, netem_ok=False, target="bmv2").notes
    assert note.startswith("link delays (host_delay_ms, fabric_delay_ms) left out: no sch_netem")
    assert P.run_plan(delayed, "baseline", 1, netem_ok=True, target="bmv2").notes == ()
