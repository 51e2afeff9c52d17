"""One scaling of a scenario, for the emulation's ``--scale K`` and the
simulation's ``--deployment`` alike (docs/design.md, "Scaling").  Pure.

A scenario keeps its shape in units of its own ring step when its durations
(compute and straggle delays, jitter start times, windows and netem delays,
deadlines, DCQCN's step_ms) scale by a time factor t, its link rates by a
rate factor r and its bytes (message sizes) by t x r: a step at line rate
lasts t times as long, and everything else happens at the same point of it.

- ``--scale K``: t = K, r = 1.  Same network, K times the bytes per step, so
  steps are K times as many RTTs and DCQCN periods long (link delays and
  the machine's timer floor stay: they are the network's and the machine's).
- ``--rate R`` (with ``--scale K``: ``at(K, R)``): t = K / R, r = R.  The
  network's links R times as fast, the bytes K times, so a step lasts K / R
  times as long and the agents send R times the data packets per second:
  R < 1 keeps a scenario within what an emulation target carries on this
  machine (BMv2: experiments/README.md, "Fidelity at scale").
- ``--deployment``: the declared deployment (hosts.dcqcn_regime.DEPLOYMENT)
  runs the scenario: host links at its line rate, every other link at the
  same ratio to them; t so that a step at line rate lasts as long as the
  deployment's; and the network's own parameters the deployment's: link
  delays (its base RTT over the longest path), ECN thresholds and queue
  depth, DCQCN's published values, its packet size and transport timers.
  ``coarse`` C > 1 makes every packet C of the deployment's (a queue, ECN
  threshold or packet count in packets divides by C; a frame is ECN-marked
  as any of its C packets would be): the simulation's option for speed,
  measured against finer packets (experiments/README.md).

Times measured on a scaled run are reported in the config's own units,
divided by ``time`` (``Scaling.time``; meta.json and the summary say it).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace

from experiments.config.derive import base_rtt_s
from experiments.config.spec import ExperimentSpec, JobConfig, RunnerParams, gate_pkts, scenario_step_s
from hosts import dcqcn, ring
from hosts.dcqcn_regime import DEPLOYMENT, Deployment
from hosts.udp.params import WIRE_OVERHEAD, UdpParams
from topologies.spec.routes import any_path_links, next_ports
from topologies.spec.topo import TopoParams, build
from topologies.switch.params import EcnParams

MAX_COARSE = 64                  # a data packet's length field holds 65,535 bytes
DEFAULT_ACK_EVERY = UdpParams().ack_every
DEFAULT_BURST = UdpParams().burst_packets
TIMED = ("start_s", "duration_s", "delay_s")      # a jitter entry's durations
NETEM_TIMES = ("delay_ms", "jitter_ms")           # scaled with the scenario under --deployment only
RATES = ("rate_mbit",)                            # a squeeze's or cross traffic's rate


@dataclass(frozen=True)
class Scaling:
    """time: durations' factor; rate: link rates'; bytes: their product;
    deployment: the network's parameters are the deployment's; coarse:
    deployment packets per simulated packet."""

    time: float
    rate: float = 1.0
    deployment: bool = False
    coarse: int = 1

    def __post_init__(self):
        for name in ("time", "rate"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
                raise ValueError(f"scaling: {name} must be a positive finite number, got {v!r}")
        if not isinstance(self.coarse, int) or not 1 <= self.coarse <= MAX_COARSE:
            raise ValueError(f"scaling: coarse must be an integer in 1..{MAX_COARSE}, got {self.coarse!r}")
        if self.coarse > 1 and not self.deployment:
            raise ValueError("scaling: coarse packets are the deployment simulation's option only")

    @property
    def bytes(self) -> float:
        return self.time * self.rate

    @property
    def identity(self) -> bool:
        return self == Scaling(1.0)

    def as_dict(self) -> dict:
        return {**asdict(self), "bytes": self.bytes}


def at(k: float, rate: float = 1.0) -> Scaling:
    """``--scale K --rate R``: K times the bytes on links R times as fast."""
    return Scaling(time=k / rate, rate=rate)


def rate_words(rate: float) -> str:
    """A --rate as it is written: 1/3 for a third, 0.75 for what is not one over a whole number."""
    inv = 1 / rate
    return f"1/{round(inv)}" if rate < 1 and math.isclose(inv, round(inv)) else f"{rate:g}"


def step_s(spec: ExperimentSpec) -> float:
    """The scenario's ring step (spec.scenario_step_s), which the deployment's step stands for."""
    step = scenario_step_s(spec)
    if step is None:
        raise ValueError("scaling needs topology.host_rate_mbit: there is no line rate to scale from")
    return step


def deployment_scaling(spec: ExperimentSpec, coarse: int = 1, d: Deployment = DEPLOYMENT) -> Scaling:
    """The deployment's: host links at its line rate, a step at line rate
    as long as its step."""
    return Scaling(time=d.step_s / step_s(spec), rate=d.line_rate_bps / (spec.topology.host_rate_mbit * 1e6),
                   deployment=True, coarse=coarse)


# --- the pieces ------------------------------------------------------------------

def _times(x, f: float):
    """A number or a [low, high] range, times f."""
    return [v * f for v in x] if isinstance(x, list) else x * f


def _message(nbytes: int, ranks: int, f: float) -> int:
    """Bytes scaled, whole float32 elements, at least one per rank."""
    return max(ranks, round(nbytes * f / ring.ITEM)) * ring.ITEM


def longest_path(topo, table: dict | None = None) -> tuple[str, str]:
    """Two hosts with the most links between them (star 2, dumbbell 3, leaf-spine 4):
    the first such pair in host order.  Routes are shortest paths, so a
    path's length is its access switches': worked out once per pair of
    switches, not per pair of hosts (a million at 1,024 hosts)."""
    hosts, table = [h.name for h in topo.hosts], table or next_ports(topo)
    access = {h: topo.access_switch(h)[0] for h in hosts}
    lengths: dict[tuple[str, str], int] = {}

    def length(pair: tuple[str, str]) -> int:
        key = (access[pair[0]], access[pair[1]])
        if key not in lengths:
            lengths[key] = len(any_path_links(topo, *pair, table))     # every equal-cost path's
        return lengths[key]
    return max(((a, b) for a in hosts for b in hosts if a != b), key=length)


def link_delay_ms(topo, d: Deployment = DEPLOYMENT, coarse: int = 1) -> float:
    """Every link's one-way delay under --deployment (topo at the
    deployment's rates): what is left of the deployment's base RTT once a
    data frame of `coarse` packets and its ACK have been serialised on the
    longest path there and back, spread evenly over its links; 0 where the
    serialisation alone takes longer.  So the base RTT is the deployment's
    whatever C: a frame of 32 packets takes 10 us to store and forward over
    a leaf-spine's 4 links at 100 Gbit/s, and delays taken from the whole
    RTT made its base RTT 2.5 times the deployment's (experiments/README.md,
    "Coarse packets against finer ones")."""
    table = next_ports(topo)
    a, b = longest_path(topo, table)
    links = len(any_path_links(topo, a, b, table))
    serial = base_rtt_s(topo, a, b, d.packet_bytes * coarse + WIRE_OVERHEAD, table, delays=False)
    return max(0.0, d.base_rtt_s - serial) / (2 * links) * 1e3


def _topology(spec: ExperimentSpec, sc: Scaling, d: Deployment) -> TopoParams:
    t = spec.topology
    rates = {k: getattr(t, k) * sc.rate if getattr(t, k) else getattr(t, k)
             for k in ("host_rate_mbit", "fabric_rate_mbit")}
    if not sc.deployment:
        return replace(t, **rates)
    delay = link_delay_ms(build(replace(t, **rates)), d, sc.coarse)
    depth = max(1, round(d.queue_bytes / d.packet_bytes / sc.coarse))
    return replace(t, **rates, host_delay_ms=delay, fabric_delay_ms=delay, queue_depth_pkts=depth)


def _udp(job: JobConfig, sc: Scaling, d: Deployment) -> dict:
    """--deployment: the deployment's packets and the transport's timers from
    its base RTT; the window derived again (experiments.config.derive)."""
    if not sc.deployment:
        return dict(job.udp)
    rtt_ms = d.base_rtt_s * 1e3
    return {"payload_bytes": d.packet_bytes * sc.coarse,
            "ack_every": max(1, round(DEFAULT_ACK_EVERY / sc.coarse)),
            "burst_packets": max(1, round(DEFAULT_BURST / sc.coarse)),
            "ack_delay_ms": rtt_ms,                       # an RTT: ack_every packets arrive far sooner
            "rto_ms": max(1.0, 100 * rtt_ms),             # above the RTT behind a full queue
            "rto_max_ms": 100.0}


def _job(job: JobConfig, sc: Scaling, d: Deployment) -> JobConfig:
    deadlines = {k: v * (sc.rate if k == "rate_mbit" else sc.time) for k, v in job.deadlines.items()}
    return replace(job, message_bytes=_message(job.message_bytes, job.ranks, sc.bytes), udp=_udp(job, sc, d),
                   deadlines=deadlines)


def _jitter(entry: dict, sc: Scaling) -> dict:
    e = dict(entry)
    for k in TIMED:
        if k in e:
            e[k] = _times(e[k], sc.time)
    for k in RATES:
        if k in e:
            e[k] = _times(e[k], sc.rate)
    if sc.deployment:
        for k in NETEM_TIMES:
            if k in e:
                e[k] = _times(e[k], sc.time)
        if e["kind"] == "cross":
            e["packet_bytes"] = e["packet_bytes"] * sc.coarse      # as many datagrams per step
    return e


def _dcqcn(spec: ExperimentSpec, sc: Scaling) -> dict:
    """--deployment: the deployment's published DCQCN (no overrides, no
    step-derived timers); --scale: the step the timers derive from, scaled."""
    if sc.deployment:
        return {"preset": spec.dcqcn["preset"] if spec.dcqcn["preset"] == dcqcn.PRESET_OFF else "paper"}
    out = dict(spec.dcqcn)
    if "step_ms" in out:
        out["step_ms"] = out["step_ms"] * sc.time
    return out


def _ecn(spec: ExperimentSpec, sc: Scaling, d: Deployment) -> EcnParams:
    if not sc.deployment:
        return spec.ecn
    return EcnParams(kmin=max(1, round(d.kmin_bytes / d.packet_bytes / sc.coarse)),
                     kmax=max(1, round(d.kmax_bytes / d.packet_bytes / sc.coarse)), pmax=d.pmax,
                     frame_packets=sc.coarse)


def scale(spec: ExperimentSpec, sc: Scaling, d: Deployment = DEPLOYMENT) -> ExperimentSpec:
    """The scenario scaled (module docstring); the same hosts, jobs and
    placement.  Its job files are checked as any run's are (hosts.job)."""
    if sc.identity:
        return spec
    topology = _topology(spec, sc, d)
    runner = RunnerParams(spec.runner.run_deadline_s * sc.time if spec.runner.run_deadline_s else None)
    symphony = spec.symphony
    if sc.deployment:
        symphony = replace(symphony, k_sym=math.ceil(symphony.k_sym / sc.coarse))
    out = replace(spec, topology=topology, topo=build(topology), jobs=tuple(_job(j, sc, d) for j in spec.jobs),
                  dcqcn=_dcqcn(spec, sc), ecn=_ecn(spec, sc, d), symphony=symphony,
                  jitter=tuple(_jitter(e, sc) for e in spec.jitter), runner=runner)
    # the gate is a share of the step: as many of the scaled run's packets as its step holds
    return replace(out, symphony=replace(symphony, gate_pkts=gate_pkts(out)))
