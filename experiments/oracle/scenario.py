"""The adapter: an experiment (ExperimentSpec) and the jitter schedule of one
repeat -> the flow-level model's input.  Pure: no sockets, clock or files.

The schedule is taken as the runner applies it, after
``experiments.jitter.schedule.apply_fallbacks`` (plan.run_plan's
``schedule``): the model sees what the network saw.

* links: both directions of every topology link, ``"<from>><to>"`` (the
  link ``h3-l1`` is ``h3>l1`` and ``l1>h3``), each with the link's rate and
  delay; a direction leaving a switch names it (Symphony prioritises there);
* ring paths: rank r -> r+1 along ``topologies.spec.routes.route``, the
  route the switches' forward tables give.  Under ``routing = "ecmp"`` a
  ring flow's path changes with its step (the tag is its source port) and
  the model keeps one path per ring edge: the path of its first step, an
  approximation ``Scenario.notes`` states (docs/ecmp.md); under
  ``ecmp-flow`` the hash leaves the tag out and the path is exact;
* where Symphony acts: per ring edge the switches that track its flow, the
  control plane's (``controlplane.tracking_switches``, ``[symphony]
  track``): under ``leaves`` its two access switches alone keep a frontier
  for it and may mark it; under ``verdict`` they alone keep one, and the
  switches between mark it as the source's leaf judged;
* rate squeezes (and netem turned into squeezes by the fallback): the
  injector's own timeline, ``jitter.schedule.rate_changes`` (where squeezes
  overlap the lowest rate holds), each change on both directions of the link,
  as ``set_link_rate`` shapes both ends;
* cross traffic: demand served first on the directed path from its source to
  its destination, for its period;
* compute stragglers: ``jitter.schedule.straggles``, the job files'
  [[straggle]] entries (delays of one rank and iteration added up).

netem applied as netem (a kernel with sch_netem) is not modelled: the model
has no time-varying delay or loss; ``Scenario.notes`` says so.  The schedule
differs per repeat, so a scenario is one repeat; the prediction of a config
is the mean over its repeats (``predict_repeats``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from statistics import mean

from experiments.config import ExperimentSpec
from experiments.jitter.schedule import rate_changes, straggles
from topologies.spec.routes import Flow, any_path_links, next_ports, ring_flow, route
from topologies.spec.topo import TopoSpec
from topologies.switch.controlplane import tracking_switches

from .inputs import CapacityChange, CrossDemand, Link, ModelError, ModelInput, RingJob, Straggle
from .prediction import JobPrediction, Prediction, change_pct, predict

MBIT = 1e6


@dataclass(frozen=True)
class Scenario:
    """One repeat of an experiment as the model takes it."""
    input: ModelInput
    threshold: int                  # [symphony] threshold
    notes: tuple[str, ...] = ()     # what of the schedule the model leaves out


def link_id(a: str, b: str) -> str:
    """The directed link from node a to node b."""
    return f"{a}>{b}"


def model_links(topo: TopoSpec) -> tuple[Link, ...]:
    """Both directions of every topology link.  ModelError for a link
    without a rate (the model needs every rate)."""
    out = []
    for link in topo.links:
        if not link.rate_mbit:
            raise ModelError(f"link {link.name} has no rate: the model needs topology.host_rate_mbit "
                             "(and fabric_rate_mbit)")
        for a, b in ((link.node1, link.node2), (link.node2, link.node1)):
            out.append(Link(link_id(a, b), link.rate_mbit * MBIT, link.delay_ms / 1e3,
                            a if topo.is_switch(a) else None))
    return tuple(out)


def directed_path(topo: TopoSpec, src: str, names: Iterable[str]) -> tuple[str, ...]:
    """The directed links of a path given as topology link names in order
    from host src (as ``routes.path_links`` and the schedule's cross entries
    give it)."""
    node, out = src, []
    for name in names:
        link = topo.link(name)
        if node not in (link.node1, link.node2):
            raise ModelError(f"path from {src}: link {name} does not touch {node}")
        nxt = link.node2 if node == link.node1 else link.node1
        out.append(link_id(node, nxt))
        node = nxt
    return tuple(out)


def host_path(topo: TopoSpec, src: str, dst: str, table: dict, flow: Flow | None = None) -> tuple[str, ...]:
    """The directed links from host src to host dst along the switches'
    routes (table: ``routes.next_ports``; flow: the packets' ports, which an
    ECMP routing needs)."""
    nodes = [src, *(hop.switch for hop in route(topo, src, dst, table, flow)), dst]
    return tuple(link_id(a, b) for a, b in zip(nodes[:-1], nodes[1:], strict=True))


def any_host_path(topo: TopoSpec, src: str, dst: str, table: dict | None = None) -> tuple[str, ...]:
    """host_path's directed links along one shortest path whatever the
    routing: for what every equal-cost path shares (its links' rates and
    delays, routes.any_path_links)."""
    return directed_path(topo, src, any_path_links(topo, src, dst, table))


def ring_paths(topo: TopoSpec, hosts: tuple[str, ...], table: dict | None = None,
               data_port: int = 0) -> tuple[tuple[str, ...], ...]:
    """Per ring edge r -> r+1 (mod N), its directed links: under an ECMP
    routing those of its first step's packets (module docstring)."""
    table = table if table is not None else next_ports(topo)
    n = len(hosts)
    return tuple(host_path(topo, hosts[r], hosts[(r + 1) % n], table, ring_flow(0, data_port)) for r in range(n))


def ring_trackers(topo: TopoSpec, placed, track: str, table: dict | None = None) -> tuple[frozenset[str], ...]:
    """Per ring edge, the switches that track its flow: the control plane's
    (controlplane.tracking_switches, symphony.track)."""
    return tuple(frozenset(tracking_switches(topo, src, dst, dport, track, table))
                 for src, dst, dport in placed.ring_flows())


def routing_notes(topo: TopoSpec) -> tuple[str, ...]:
    """What the model leaves out of the routing."""
    if topo.routing != "ecmp":
        return ()
    return ("routing ecmp: each ring edge on its first step's path; the fabric hashes every step's tag "
            "anew (per-step paths and collisions not modelled)",)


def _both_ways(topo: TopoSpec, name: str) -> tuple[str, str]:
    link = topo.link(name)
    return link_id(link.node1, link.node2), link_id(link.node2, link.node1)


def scenario(spec: ExperimentSpec, events: Iterable[Mapping]) -> Scenario:
    """The model's input for one repeat: ``events`` is that repeat's jitter
    schedule as applied (after fallbacks)."""
    events = [dict(ev) for ev in events]
    topo = spec.topo
    table = next_ports(topo)
    jobs = tuple(RingJob(j.job, j.hosts, ring_paths(topo, j.hosts, table, j.placed.data_port), j.message_bytes,
                         j.iterations, ring_trackers(topo, j.placed, spec.symphony.track, table),
                         verdict=spec.symphony.track == "verdict")
                 for j in spec.jobs)
    changes = tuple(CapacityChange(t, directed, rate * MBIT)
                    for t, name, rate, _ in rate_changes(events) for directed in _both_ways(topo, name))
    cross = tuple(CrossDemand(ev["start_s"], ev["end_s"], directed_path(topo, ev["src"], ev["links"]),
                              ev["params"]["rate_mbit"] * MBIT)
                  for ev in events if ev["applied_as"] == "cross")
    late = tuple(Straggle(job, s["rank"], s["iter"], s["delay_s"])
                 for job, entries in straggles(events).items() for s in entries)
    notes = routing_notes(topo) + tuple(
        f"netem on {ev['link']} from {ev['start_s']:g} to {ev['end_s']:g} s: not modelled "
        "(no time-varying delay or loss in the model)" for ev in events if ev["applied_as"] == "netem")
    return Scenario(ModelInput(model_links(topo), jobs, changes, cross, late), spec.symphony.threshold, notes)


# --- a config: the mean over its repeats ------------------------------------------

@dataclass(frozen=True)
class RepeatsPrediction:
    """Both variants of every repeat, and per job the means over them."""
    repeats: dict[int, Prediction]
    notes: dict[int, tuple[str, ...]]
    jobs: dict[int, JobPrediction]          # means over iterations and repeats

    def as_dict(self) -> dict:
        return {"jobs": {str(j): p.as_dict() for j, p in self.jobs.items()}, "repeats": sorted(self.repeats)}


def mean_jobs(predictions: Iterable[Prediction]) -> dict[int, JobPrediction]:
    """Per job: the mean CCT of each variant over the predictions, and the
    change between those means (as the measured change is taken)."""
    predictions = list(predictions)
    out = {}
    for job in predictions[0].jobs:
        base = mean(p.jobs[job].baseline_cct_s for p in predictions)
        sym = mean(p.jobs[job].symphony_cct_s for p in predictions)
        out[job] = JobPrediction(job, base, sym, change_pct(base, sym), predictions[0].jobs[job].bound_s)
    return out


def predict_repeats(spec: ExperimentSpec, schedules: Mapping[int, Iterable[Mapping]]) -> RepeatsPrediction:
    """The model on each repeat's schedule (repeat -> events as applied);
    repeats with the same input are modelled once."""
    if not schedules:
        raise ModelError("no repeat to model")
    done: dict[Scenario, Prediction] = {}
    repeats, notes = {}, {}
    for rep, events in sorted(schedules.items()):
        sc = scenario(spec, events)
        if sc not in done:
            done[sc] = predict(sc.input, sc.threshold)
        repeats[rep], notes[rep] = done[sc], sc.notes
    return RepeatsPrediction(repeats, notes, mean_jobs(repeats.values()))
