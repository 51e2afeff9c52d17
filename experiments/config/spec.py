"""The resolved experiment: what every part of a run takes as it is.

``ExperimentSpec`` is built once per config (or sweep point) by
``experiments.config.resolve``: the topology built, the jobs placed, every
default filled.  The network takes ``topo``, the placed jobs, ``ecn`` and
``symphony``; the job files come from ``job_specs``; ``as_dict`` is the
resolved config as a run directory's config.toml holds it (analysis reads it).
"""

from __future__ import annotations

import copy
from dataclasses import asdict, dataclass, field
from typing import Any

from experiments.config import derive
from hosts import dcqcn
from hosts.job import JobSpec, parse_job
from hosts.udp.params import UdpParams
from topologies.spec.placement import PlacedJob
from topologies.spec.topo import TopoParams, TopoSpec
from topologies.switch.params import EcnParams, SymphonyParams


@dataclass(frozen=True)
class RunnerParams:
    run_deadline_s: float | None = None     # None: the agents' run deadline plus slack


@dataclass(frozen=True)
class JobConfig:
    """One [[jobs]] table: where its ranks run (ring order) and what they do.
    ``udp`` and ``deadlines`` go to the job file as they are (hosts.job checks them)."""
    placed: PlacedJob
    message_bytes: int
    iterations: int
    udp: dict = field(default_factory=dict)
    deadlines: dict = field(default_factory=dict)

    @property
    def job(self) -> int:
        return self.placed.job

    @property
    def hosts(self) -> tuple[str, ...]:
        return self.placed.hosts

    @property
    def ranks(self) -> int:
        return len(self.placed.hosts)

    @property
    def transport(self) -> str:
        return self.placed.transport

    @property
    def data_port(self) -> int:
        return self.placed.data_port

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"job": self.job, "ranks": self.ranks, "hosts": list(self.hosts),
                               "message_bytes": self.message_bytes, "iterations": self.iterations,
                               "transport": self.transport, "data_port": self.data_port}
        for key in ("udp", "deadlines"):
            if getattr(self, key):
                out[key] = dict(getattr(self, key))
        return out


@dataclass(frozen=True)
class ExperimentSpec:
    name: str
    seed: int
    repeats: int
    variants: tuple[str, ...]
    topology: TopoParams
    topo: TopoSpec
    jobs: tuple[JobConfig, ...]
    dcqcn: dict                         # preset and overrides of its fields by name
    ecn: EcnParams
    symphony: SymphonyParams            # enabled: set per variant by the runner
    jitter: tuple[dict, ...]            # [[jitter]] entries, defaults filled
    runner: RunnerParams
    sweep: dict = field(default_factory=dict)        # "dotted.key" -> values
    sweep_point: dict | None = None                  # this point's values, in a sweep
    notes: tuple[str, ...] = ()                      # derived values that moved to fit the config's (resolve)

    def job(self, job_id: int) -> JobConfig:
        return next(j for j in self.jobs if j.job == job_id)

    def repeat_numbers(self, count: int | None = None) -> range:
        """The repeats a batch runs, as its run directories (-repN) and
        jitter draws number them: 1 to `repeats` (or to `count`)."""
        return range(1, (self.repeats if count is None else count) + 1)

    def as_dict(self, keep_none: bool = False) -> dict[str, Any]:
        """The resolved config as config.toml holds it (no [sweep]; None
        values left out unless keep_none, since TOML has no null)."""
        topology = asdict(self.topology)
        if self.topology.kind != "leafspine":
            del topology["leaves"], topology["spines"]
        symphony = asdict(self.symphony)
        del symphony["enabled"], symphony["gate_pkts"]      # the variant's; derived from gate_step
        ecn = asdict(self.ecn)
        del ecn["frame_packets"]                            # the scaling's (meta.json's coarse)
        out = {"name": self.name, "seed": self.seed, "repeats": self.repeats, "variants": list(self.variants),
               "topology": topology, "jobs": [j.as_dict() for j in self.jobs], "dcqcn": dict(self.dcqcn),
               "ecn": ecn, "symphony": symphony, "jitter": copy.deepcopy(list(self.jitter)),
               "runner": asdict(self.runner), "sweep_point": copy.deepcopy(self.sweep_point)}
        return out if keep_none else _without_none(out)


def _without_none(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_none(v) for v in value]
    return value


def job_files(spec: ExperimentSpec, straggles: dict[int, list[dict]]) -> list[dict[str, Any]]:
    """Every job's job file content, in the config's order (straggles: job
    id -> [[straggle]] entries of the run's jitter schedule)."""
    shares = derive.least_shares_mbit(spec.topo, [j.placed for j in spec.jobs])
    return [job_file(spec, job, straggles.get(job.job, []), shares[job.job]) for job in spec.jobs]


def scenario_step_s(spec: ExperimentSpec) -> float | None:
    """The scenario's ring step: its largest chunk at the host line rate
    (None without one).  The deployment's step stands for it when a
    scenario is scaled (experiments/config/scale.py), and every job's DCQCN
    timers derive from it: a cluster's NICs all run the same timers, so a
    job with shorter steps spans fewer of them per step there too."""
    rate = spec.topology.host_rate_mbit
    if not rate:
        return None
    return max(dcqcn.step_time_s(j.message_bytes, j.ranks, rate * 1e6) for j in spec.jobs)


def gate_pkts(spec: ExperimentSpec) -> int:
    """symphony.gate_step in the scenario's data packets (derive.gate_pkts):
    its step at the host line rate over the jobs' largest data payload, so
    re-derived wherever a scaling changes the step or the packets."""
    share = spec.symphony.gate_step
    if not share:
        return 0
    step = scenario_step_s(spec)
    if step is None:
        raise ValueError("symphony.gate_step: the gate is a share of the step at topology.host_rate_mbit, "
                         "and the topology has none")
    payload = max(j.udp.get("payload_bytes", UdpParams().payload_bytes) for j in spec.jobs)
    return derive.gate_pkts(share, step, spec.topology.host_rate_mbit, payload)


def step_fraction(spec: ExperimentSpec, js: JobSpec) -> float:
    """A job's step at its line rate as a fraction of the scenario's step
    (1 without a line rate): what hosts.dcqcn.regime_targets' step_fraction
    holds the job to."""
    scenario, line_step = scenario_step_s(spec), js.line_step_s
    if not scenario or not line_step:
        return 1.0
    return line_step / scenario


def job_file(spec: ExperimentSpec, job: JobConfig, straggles: list[dict], share_mbit: float | None) -> dict[str, Any]:
    """A job file's content (docs/hosts.md): ranks in ring order with their
    addresses, DCQCN from [dcqcn] with the host link rate as line rate and
    the scenario's step as the step its timers derive from (unless [dcqcn]
    names a step_ms), the run's [[straggle]] entries, and where the job's share of its busiest
    queue (share_mbit: derive.least_shares_mbit) is below the host rate and
    the config sets no deadlines, that share for them to assume."""
    d: dict[str, Any] = {
        "job": job.job, "data_port": job.data_port, "message_bytes": job.message_bytes,
        "iterations": job.iterations, "transport": job.transport, "seed": spec.seed,
        "ranks": [{"rank": r, "ip": spec.topo.host(h).ip, "host": h} for r, h in enumerate(job.hosts)],
        "dcqcn": {"line_rate_mbit": spec.topology.host_rate_mbit, **_timer_step(spec), **spec.dcqcn},
    }
    udp = derived_udp(spec, job)
    if udp:
        d["udp"] = udp
    deadlines = dict(job.deadlines)
    host_rate = spec.topology.host_rate_mbit
    if ("rate_mbit" not in deadlines and not {"step_s", "run_s"} <= deadlines.keys()
            and share_mbit is not None and host_rate and share_mbit < host_rate):
        deadlines["rate_mbit"] = share_mbit     # other ring flows share a bottleneck: a step takes longer
    if deadlines:
        d["deadlines"] = deadlines
    if straggles:
        d["straggle"] = [dict(s) for s in straggles]
    return d


def _timer_step(spec: ExperimentSpec) -> dict[str, float]:
    step = scenario_step_s(spec)
    return {} if step is None else {"step_ms": step * 1e3}


def derived_udp(spec: ExperimentSpec, job: JobConfig) -> dict[str, Any]:
    """The job file's [udp]: the config's keys, and the in-flight bound
    derived from the network (experiments.config.derive) where the config
    gives no window_packets.  A [udp] the job file refuses is left for its
    check to name."""
    udp = dict(job.udp)
    if "window_packets" not in udp:
        try:
            params = UdpParams(**udp)
        except (TypeError, ValueError):
            return udp
        udp["window_packets"] = derive.window_packets(spec.topo, job.placed, params)
    return udp


def job_specs(spec: ExperimentSpec, straggles: dict[int, list[dict]]) -> list[JobSpec]:
    """Every job's JobSpec for one run (straggles: job id -> [[straggle]]
    entries of the run's jitter schedule).  hosts.job.JobError when a job
    cannot run."""
    return [parse_job(doc) for doc in job_files(spec, straggles)]
