"""Typed specs for tests: a topology, placed jobs, a network, in one line each.

    topo("leafspine", 8, 20, leaves=2, spines=2)      # TopoSpec, 20 Mb/s links
    place(t, 4, 2, transport="tcp")                     # one job per ranks count
    make_net("star", 3, 10, jobs=(3,), run_dir=...)     # TestbedNetwork, not started

Jobs given by their number of ranks get the ids and ports the experiment
config would give them (job i+1, data port 5000 + 10 i).
"""

from __future__ import annotations

from collections.abc import Sequence

from topologies.network.testbed import TestbedNetwork
from topologies.spec.placement import JobRequest, PlacedJob, place_jobs
from topologies.spec.topo import TopoParams, TopoSpec, build


def topo(kind: str, hosts: int, rate: float | None = None, **params) -> TopoSpec:
    """build() of these [topology] values; rate: host_rate_mbit."""
    return build(TopoParams(kind, hosts, host_rate_mbit=rate, **params))


def requests(*jobs: int | JobRequest, transport: str = "udp") -> list[JobRequest]:
    return [j if isinstance(j, JobRequest) else JobRequest(i + 1, j, 5000 + 10 * i, transport)
            for i, j in enumerate(jobs)]


def place(t: TopoSpec, *jobs: int | JobRequest, transport: str = "udp") -> list[PlacedJob]:
    return place_jobs(t, requests(*jobs, transport=transport))


def make_net(kind: str, hosts: int, rate: float | None = None, *, jobs: Sequence[int | JobRequest] = (),
             target: str = "soft", run_dir=None, net_kw: dict | None = None, **params) -> TestbedNetwork:
    """A TestbedNetwork (not started) on topo(kind, hosts, rate, **params);
    net_kw: TestbedNetwork's keywords (ecn, symphony, json_path, ...)."""
    t = topo(kind, hosts, rate, **params)
    return TestbedNetwork(t, place(t, *jobs), target=target, run_dir=run_dir, **(net_kw or {}))
