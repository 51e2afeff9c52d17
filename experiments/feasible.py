"""What a config is sure to fail, found before anything starts (``check``
and ``run`` alike: experiments.cli_common.load), and what its runs will
cost.  Pure: the oracle's model on the config, no I/O.

The ideal timeline of a job: the flow-level oracle (experiments.oracle) on
the job alone (no other job, no cross traffic: both only slow it), its
baseline (max-min shares among the job's own flows), with the repeat's rate
squeezes and stragglers, at the config's link rates and delays.  The model
sends at full rate from the first byte and has no ACKs, windows, queues or
loss, so no run is faster.  A run is sure to fail, and the config is
refused (ConfigError, one line naming the key), when in that ideal timeline:

- a straggle is longer than the run deadline (the agents' or the runner's);
- a step waits longer than its step deadline (``[jobs.deadlines] step_s``,
  or the derived one: a multiple of the step's bandwidth bound at the host
  link rate, or at the job's share of its busiest queue where other ring
  flows share it (experiments.config.derive), counting no link delay);
- a job ends after its run deadline, or after the runner's;
- the same, in closed form, of each step's least time: its smallest chunk
  at the path's slowest rate and the path's delay, and for UDP the
  transport's window (at most window_packets unacknowledged, an ACK back a
  round trip of link delays later), which the fluid model leaves out;
- 100 % netem loss on a link a ring flow crosses keeps the run's first step
  from arriving before that step's deadline (``loss_applies``: netem applied
  as loss, by tc or the twin; bmv2 without sch_netem squeezes instead).

Each repeat has its own draws; the first MODELLED_REPEATS are modelled, and
of a long job the first iterations that fit STEP_BUDGET step records (a
refusal on them holds for the whole run; the run's cost is extrapolated).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from statistics import mean

from experiments.config import ConfigError, ExperimentSpec, JobConfig, job_specs
from experiments.jitter import schedule as J
from experiments.oracle import ModelError, ModelResult, simulate
from experiments.oracle.scenario import any_host_path, link_id, model_links, ring_paths, scenario
from experiments.plan import RUNNER_SLACK_S, wall_deadline_s
from hosts.job import DEADLINE_FACTOR, RUN_SLACK_S, STEP_SLACK_S, JobError, JobSpec, derived_deadlines, first_step_slack
from hosts.ring import ITEM
from topologies.network.links import VIA_TWIN
from topologies.spec.routes import next_ports

MODELLED_REPEATS = 4
STEP_BUDGET = 10_000        # step records per job modelled: about 0.5 s of the model at 64 ranks
# what a run costs besides its agents' time: the network built, the agents
# started, the switches dumped, the teardown (3-6 s measured on 2 cores)
RUN_OVERHEAD_S = 5.0
LONG_RUN_S = 3600.0         # a run expected to take longer is warned about
# a deadline under this many times the ideal is warned about: measured
# baselines took up to 1.3 times the oracle's (experiments/README.md)
TIGHT_FACTOR = 1.5
MIN_MODEL_RATE_MBIT = 0.001  # 1 kbit/s: a 1500-byte frame in 12 s; slower, the floors alone judge


@dataclass(frozen=True)
class Ideal:
    """One job's ideal timeline in one repeat (module docstring)."""
    index: int                  # the job's position in the config (jobs[index])
    spec: JobSpec               # its job file in that repeat (deadlines, straggles)
    model: ModelResult          # of its first `iterations` iterations
    iterations: int

    @property
    def end_s(self) -> float:
        return self.model.end_s

    @property
    def full_end_s(self) -> float:
        """The whole run's ideal end, extrapolated where iterations were left out."""
        return self.model.end_s * self.spec.iterations / self.iterations


def modelled_iterations(job: JobConfig) -> int:
    steps = job.ranks * 2 * (job.ranks - 1)
    return max(1, min(job.iterations, STEP_BUDGET // steps))


def schedule(spec: ExperimentSpec, repeat: int) -> list[dict]:
    """A repeat's jitter events, netem left as netem (not modelled: a lower
    bound); ConfigError for a schedule no run can make (a `pick` of a link
    class the topology has none of: every run failed making it)."""
    try:
        return J.apply_fallbacks(J.make_schedule(spec, repeat), VIA_TWIN)[0]
    except ValueError as exc:
        raise ConfigError(f"jitter: {exc} (repeat {repeat}'s schedule)") from None


def ideal(spec: ExperimentSpec, index: int, js: JobSpec, events: list[dict], done: dict | None = None) -> Ideal:
    """jobs[index] alone on the network, its first iterations
    (modelled_iterations); done: models already made, by their input (the
    repeats of a config without draws are one)."""
    job = spec.jobs[index]
    k = modelled_iterations(job)
    alone = replace(spec, jobs=(replace(job, iterations=k),))
    mine = [ev for ev in events if ev["applied_as"] in ("rate", "netem")
            or (ev["applied_as"] == "compute" and ev["job"] == job.job and ev["params"]["iter"] < k)]
    done = {} if done is None else done
    mi = scenario(alone, mine).input
    if mi not in done:
        done[mi] = simulate(mi, "baseline")
    return Ideal(index, js, done[mi], k)


@dataclass(frozen=True)
class Assessment:
    run_s: float                # a run's expected wall time: the ideal, and the set-up and teardown
    warnings: list[str]         # to print: a run over LONG_RUN_S


def check(spec: ExperimentSpec, loss_applies: bool = True) -> list[str]:
    """ConfigError when a run of the config is sure to fail (module
    docstring); else the warnings to print (a run over LONG_RUN_S)."""
    return assess(spec, loss_applies).warnings


def assess(spec: ExperimentSpec, loss_applies: bool = True) -> Assessment:
    """check()'s verdict and the expected wall time of a run (the mean over
    the modelled repeats)."""
    per_run = []
    tight: dict[str, str] = {}
    done: dict = {}
    for repeat in spec.repeat_numbers(min(spec.repeats, MODELLED_REPEATS)):
        events = schedule(spec, repeat)
        try:
            jobs = job_specs(spec, J.straggles(events))
        except JobError as exc:     # a straggle the job file refuses (over an hour, several added up)
            raise ConfigError(f"jitter: repeat {repeat}'s job file: {exc}") from None
        wall = wall_deadline_s(spec, tuple(jobs))
        _straggles(spec, events, jobs, wall, repeat)
        floors = [step_floor_s(spec, i, js) for i, js in enumerate(jobs)]
        least = max(f[0] * js.iterations * 2 * (js.n_ranks - 1) for f, js in zip(floors, jobs, strict=True))
        ends = [least]
        if _modellable(spec, events):       # the model first: its ideal counts the flows' sharing
            try:
                ideals = [ideal(spec, i, js, events, done) for i, js in enumerate(jobs)]
            except ModelError:
                return Assessment(0.0, [])      # nothing the model can say (the network's start will)
            if loss_applies:
                _loss(spec, events, ideals, repeat)
            for one in ideals:
                _deadlines(spec, one, wall, repeat)
                for line in _tight(one, wall, repeat):
                    tight.setdefault(line.split(" (")[0], line)     # once per key, the first repeat's
            ends += [one.full_end_s for one in ideals]
        for i, js in enumerate(jobs):       # then what it leaves out: the transport's window
            _floor(i, js, floors[i], wall)
        per_run.append(max(ends) + RUN_OVERHEAD_S)
    run_s = mean(per_run)
    return Assessment(run_s, [*tight.values(), *_cost(spec, run_s)])


def _modellable(spec: ExperimentSpec, events: list[dict]) -> bool:
    """Whether the flow model can take these rates: below MIN_MODEL_RATE_MBIT
    (a link, or a squeeze) its float steps stop moving time forward (the
    closed-form floors judge such a config alone)."""
    rates = [link.rate_mbit for link in spec.topo.links]
    rates += [ev["params"]["rate_mbit"] for ev in events if ev["applied_as"] == "rate"]
    return min(rates) >= MIN_MODEL_RATE_MBIT


def _derived(js: JobSpec, key: str) -> str:
    if getattr(js.deadlines, key) is not None:
        return ""
    what = "a step's" if key == "step_s" else "the run's"
    slack = STEP_SLACK_S if key == "step_s" else RUN_SLACK_S
    share = js.deadlines.rate_mbit
    at = "the host link rate" if share is None else f"{share:.4g} Mbit/s, the job's share of its busiest queue"
    return (f" (derived: {DEADLINE_FACTOR:g} x {what} bandwidth bound at {at} + {slack:g} s; "
            f"link delays are not counted: set [jobs.deadlines] {key})")


def _straggles(spec: ExperimentSpec, events: list[dict], jobs: list[JobSpec], wall: float, repeat: int) -> None:
    """A straggle longer than a run deadline: the run ends before the straggler starts."""
    run_s = {js.job: derived_deadlines(js)[1] for js in jobs}
    for ev in events:
        if ev["applied_as"] != "compute":
            continue
        delay = ev["params"]["delay_s"]
        limit, what = min((run_s[ev["job"]], f"job {ev['job']}'s run deadline"), (wall, "the runner's deadline"))
        if delay >= limit:
            raise ConfigError(f"jitter[{ev['entry']}].delay_s: a straggle of {delay:g} s (repeat {repeat}) is no "
                              f"shorter than {what} ({limit:.4g} s): every run would fail")


def _deadlines(spec: ExperimentSpec, one: Ideal, wall: float, repeat: int) -> None:
    js, where = one.spec, f"jobs[{one.index}].deadlines"
    step_s, run_s = derived_deadlines(js)
    worst = max(one.model.steps, key=lambda s: s.end_s - s.start_s - (first_step_slack(js) if s.step == 0 else 0))
    wait = worst.end_s - worst.start_s
    limit = step_s + (first_step_slack(js) if worst.step == 0 else 0.0)
    ideal_at = "at the config's rates and delays: every run would fail"
    if wait > limit:
        raise ConfigError(f"{where}.step_s: {limit:.4g} s{_derived(js, 'step_s')} is shorter than the oracle's ideal "
                          f"step ({wait:.4g} s: rank {worst.rank} waiting for step {worst.step}, repeat {repeat}) "
                          f"{ideal_at}")
    if one.end_s > run_s:
        raise ConfigError(f"{where}.run_s: {run_s:.4g} s{_derived(js, 'run_s')} is shorter than the oracle's ideal "
                          f"run of job {js.job} ({one.end_s:.4g} s, repeat {repeat}) {ideal_at}")
    if one.end_s > wall:
        derived = "" if spec.runner.run_deadline_s else f" (derived: the agents' run deadline + {RUNNER_SLACK_S:g} s)"
        raise ConfigError(f"runner.run_deadline_s: {wall:.4g} s{derived} is shorter than the oracle's ideal run of "
                          f"job {js.job} ({one.end_s:.4g} s, repeat {repeat}) {ideal_at}")


def _tight(one: Ideal, wall: float, repeat: int) -> list[str]:
    """Deadlines a run meets only if it keeps within TIGHT_FACTOR of the
    ideal: warnings (a run may fail; not sure to)."""
    js, out = one.spec, []
    step_s, run_s = derived_deadlines(js)
    worst = max((s.end_s - s.start_s for s in one.model.steps if s.step > 0), default=0.0)
    end = one.full_end_s
    for limit, key, what in ((step_s, f"jobs[{one.index}].deadlines.step_s", ("step", worst)),
                             (run_s, f"jobs[{one.index}].deadlines.run_s", ("run", end)),
                             (wall, "runner.run_deadline_s", ("run", end))):
        if limit < TIGHT_FACTOR * what[1]:
            out.append(f"warning: {key} ({limit:.4g} s) is less than {TIGHT_FACTOR:g} x the oracle's ideal {what[0]} "
                       f"of job {js.job} ({what[1]:.4g} s, repeat {repeat}): runs have taken up to 1.3 x the ideal, "
                       "their agents seconds to start, so a run may fail; going on")
    return out


def step_floor_s(spec: ExperimentSpec, index: int, js: JobSpec) -> tuple[float, str]:
    """The least time any step of jobs[index] takes, in closed form: on each
    ring edge its smallest chunk at the path's slowest nominal rate plus the
    path's delay, and for UDP the transport's window (no more than
    window_packets unacknowledged, each ACK back a round trip of link delays
    after its packet left: a chunk of P packets takes ceil(P / W) - 1 round
    trips and a one-way delay); the edge where that is least.  And what
    bound it, for a message."""
    job = spec.jobs[index]
    links = {link.id: link for link in model_links(spec.topo)}
    table = next_ports(spec.topo)
    chunk = js.n_elems // js.n_ranks * ITEM
    packets = max(1, math.ceil(chunk / js.udp.payload_bytes))
    rounds = math.ceil(packets / js.udp.window_packets) - 1 if js.transport == "udp" else 0
    best = (math.inf, "")
    for r, src in enumerate(job.hosts):
        dst = job.hosts[(r + 1) % len(job.hosts)]
        # rates and delays only: every equal-cost path has the same (any_host_path)
        there = any_host_path(spec.topo, src, dst, table)
        delay = sum(links[x].delay_s for x in there)
        back = sum(links[x].delay_s for x in any_host_path(spec.topo, dst, src, table))
        rate = min(links[x].rate_bps for x in there)
        sending = chunk * 8 / rate + delay
        window = rounds * (delay + back) + delay
        edge = max((sending, f"at the path's rate ({chunk} bytes at {rate / 1e6:g} Mbit/s, "
                             f"{delay * 1e3:g} ms of link delay)"),
                   (window, f"with the transport's window ({packets} packets of {js.udp.payload_bytes} bytes, "
                            f"{js.udp.window_packets} in flight per round trip of {(delay + back) * 1e3:g} ms)"),
                   key=lambda x: x[0])
        best = min(best, edge, key=lambda x: x[0])
    return best


def _floor(one_index: int, js: JobSpec, floor: tuple[float, str], wall: float) -> None:
    """Deadlines no run can meet by the closed-form floor of its steps
    (step_floor_s): every step's earliest starter waits it at least, and the
    earliest start of each step is that much after the step before's."""
    step, how = floor
    where = f"jobs[{one_index}].deadlines"
    step_s, run_s = derived_deadlines(js)
    steps = js.iterations * 2 * (js.n_ranks - 1)
    said = f"{how}: every run would fail"
    if step > step_s:           # a run has two steps at least: the second has no start-up slack
        raise ConfigError(f"{where}.step_s: {step_s:.4g} s{_derived(js, 'step_s')} is shorter than a step's least "
                          f"time ({step:.4g} s) {said}")
    for limit, key, note in ((run_s, f"{where}.run_s", _derived(js, "run_s")), (wall, "runner.run_deadline_s", "")):
        if step * steps > limit:
            raise ConfigError(f"{key}: {limit:.4g} s{note} is shorter than the run's least time ({step * steps:.4g} s: "
                              f"{steps} steps of {step:.4g} s) {said}")


def _loss(spec: ExperimentSpec, events: list[dict], ideals: list[Ideal], repeat: int) -> None:
    """100 % loss over a ring flow's first step, from before its data could
    arrive until past that step's deadline."""
    for ev in events:
        if ev["applied_as"] != "netem" or ev["params"]["loss_pct"] < 100:
            continue
        link = spec.topo.link(ev["link"])
        lossy = {link_id(link.node1, link.node2), link_id(link.node2, link.node1)}
        for one in ideals:
            paths = ring_paths(spec.topo, spec.jobs[one.index].hosts, data_port=spec.jobs[one.index].placed.data_port)
            step_s, run_s = derived_deadlines(one.spec)
            limit = min(step_s + first_step_slack(one.spec), run_s)
            for t in one.model.transfers:
                if t.step == 0 and lossy & set(paths[t.src]) and ev["start_s"] < t.arrival_s \
                        and ev["end_s"] - one.spec.straggle_delay(t.dst, 0) > limit:
                    raise ConfigError(
                        f"jitter[{ev['entry']}].loss_pct: 100 % loss on {ev['link']} from {ev['start_s']:g} to "
                        f"{ev['end_s']:g} s (repeat {repeat}) keeps job {one.spec.job}'s first step from rank "
                        f"{t.src} to rank {t.dst} from arriving within its deadline ({limit:.4g} s): every run "
                        "would fail")


def duration(seconds: float) -> str:
    if seconds >= 2 * 86400:
        return f"{seconds / 86400:.1f} days"
    if seconds >= 2 * 3600:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 60:.0f} min" if seconds >= 120 else f"{seconds:.0f} s"


def _cost(spec: ExperimentSpec, run_s: float) -> list[str]:
    if run_s <= LONG_RUN_S:
        return []
    runs = spec.repeats * len(spec.variants)
    point = f" (point {spec.sweep_point})" if spec.sweep_point else ""
    return [f"warning: a run of {spec.name}{point} would take about {duration(run_s)} (the oracle's ideal at the "
            f"config's rates and delays, and about {RUN_OVERHEAD_S:g} s to set up and tear down); its {runs} run(s): "
            f"about {duration(run_s * runs)}; going on"]
