"""The emulated network of a run plan: topologies' TestbedNetwork built on
the plan's inputs.  Apart from experiments.plan, which stays pure (and free
of Mininet, so `experiments model` imports quickly)."""

from __future__ import annotations

from pathlib import Path

from experiments.plan import RunPlan
from topologies.network.testbed import TestbedNetwork


def build_network(plan: RunPlan, *, target: str, run_dir: Path | str | None) -> TestbedNetwork:
    """The network of one run (not started: a context manager)."""
    return TestbedNetwork(plan.topo, plan.placed, target=target, run_dir=run_dir, ecn=plan.ecn,
                          symphony=plan.symphony, seed=plan.seed, frame_bytes=plan.frame_bytes)
