"""What a run gets, decided before anything starts (pure; the network is
built from a plan by experiments.network): the network's inputs, the job
files, the jitter schedule.

Variants differ in one thing only: the Symphony flows are installed with
enabled=1 (symphony) or enabled=0 (baseline).  Everything else comes from the
one ExperimentSpec, so the two variants of a repeat get the same placement,
DCQCN parameters, ECN thresholds and jitter (a test checks it on the plans).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace

from experiments.config import ExperimentSpec, job_specs
from experiments.jitter import schedule as J
from experiments.jitter.schedule import NO_NETEM
from hosts.job import JobSpec, derived_deadlines
from topologies.network.links import VIA_FALLBACK, VIA_TWIN, delay_via
from topologies.spec.placement import PlacedJob
from topologies.spec.topo import TopoSpec
from topologies.switch.params import EcnParams, SymphonyParams
from topologies.switch.targets import TARGETS as SWITCH_TARGETS
from topologies.switch.targets import resolve_target

RUNNER_SLACK_S = 20.0         # runner's wall deadline = agents' run deadline + this
# The simulation target (experiments/sim): no emulator, the twin's switches on
# a virtual clock; delays and netem in their delay lines, as on the soft target
SIM = "sim"
TARGETS = (*SWITCH_TARGETS, SIM)
NO_LINK_DELAY = ("link delays (host_delay_ms, fabric_delay_ms) left out: {why} and the bmv2 target "
                 "has no delay line (--target soft has them)")


@dataclass(frozen=True)
class RunPlan:
    variant: str
    repeat: int
    topo: TopoSpec
    placed: tuple[PlacedJob, ...]     # the network's jobs: hosts in ring order, data port, transport
    ecn: EcnParams
    symphony: SymphonyParams          # enabled by the variant
    jobs: tuple[JobSpec, ...]         # the job files, one per job
    schedule: tuple[dict, ...]        # jitter events as applied here (fallbacks taken)
    notes: tuple[str, ...] = field(default_factory=tuple)
    seed: int = 0                     # the switches' draws (ECN marking, delay lines)
    frame_bytes: int | None = None    # the jobs' largest UDP data frame: the links' MTU, bmv2's packets/s


def data_frame_bytes(jobs) -> int | None:
    """The largest data frame of the UDP jobs (hosts.udp.params.UdpParams.
    frame_bytes), None without one: the network fits its links' MTU to it."""
    return max((j.udp.frame_bytes for j in jobs if j.transport == "udp"), default=None)


def symphony_for(spec: ExperimentSpec, variant: str) -> SymphonyParams:
    return replace(spec.symphony, enabled=(variant == "symphony"))


def switch_seed(seed: int, repeat: int) -> int:
    """The switches' seed for one repeat of a config: both variants get the
    same, each repeat its own."""
    digest = hashlib.sha256(f"symphony-switches:{seed}:{repeat}".encode()).digest()
    return int.from_bytes(digest[:4], "big")


def network_plan(spec: ExperimentSpec, variant: str, repeat: int = 0) -> RunPlan:
    """The network of one variant without jobs files or jitter (for
    ``python3 -m experiments net``)."""
    return RunPlan(variant=variant, repeat=repeat, topo=spec.topo, placed=tuple(j.placed for j in spec.jobs),
                   ecn=spec.ecn, symphony=symphony_for(spec, variant), jobs=(), schedule=(),
                   seed=switch_seed(spec.seed, repeat), frame_bytes=data_frame_bytes(job_specs(spec, {})))


def run_plan(spec: ExperimentSpec, variant: str, repeat: int, netem_ok: bool, netem_why: str = NO_NETEM,
             target: str = "auto") -> RunPlan:
    """netem_ok: the kernel has sch_netem; with the target it decides how
    netem jitter is applied (topologies.network.links.delay_via, the rule
    the network follows for its link delays too; the simulation holds them
    in the twin's delay lines)."""
    via = VIA_TWIN if target == SIM else delay_via(resolve_target(target), netem_ok)
    events, notes = J.apply_fallbacks(J.make_schedule(spec, repeat), via, netem_why)
    if via == VIA_FALLBACK and any(link.delay_ms for link in spec.topo.links):
        notes.append(NO_LINK_DELAY.format(why=netem_why))
    return replace(network_plan(spec, variant, repeat),
                   jobs=tuple(job_specs(spec, J.straggles(events))), schedule=tuple(events), notes=tuple(notes))


def wall_deadline_s(spec: ExperimentSpec, jobs: tuple[JobSpec, ...]) -> float:
    """The runner's own deadline for the agents' phase of a run: the config's,
    or the longest agent run deadline plus slack."""
    if spec.runner.run_deadline_s:
        return spec.runner.run_deadline_s
    return max(derived_deadlines(s)[1] for s in jobs) + RUNNER_SLACK_S
