"""python3 -m experiments model CONFIG [--json] [--repeat N] [--seed S] [--target ...]:
the flow-level oracle's CCT per job, baseline against Symphony, on the
jitter schedules a run would apply; and the sweep's ranking by the oracle
(`run --rank-by-oracle / --model-only`).  No root, no network: this module
imports neither Mininet nor the runner."""

from __future__ import annotations

import json
import sys
import time

from analysis.simulation import DEPLOYMENT_SCALE
from contract import exits
from experiments import config as C
from experiments.cli_common import Refused, load
from experiments.config.regime import data_packets
from experiments.oracle import ModelError
from experiments.oracle.scenario import RepeatsPrediction, predict_repeats
from experiments.plan import SIM, run_plan
from experiments.sim.predict import SCALES as SIM_SCALES
from experiments.sim.predict import SIM_CACHE, predict, progress_lines
from experiments.sim.run import refusal
from experiments.tables import align, fmt
from hosts.job import JobError
from topologies.network.links import VIA_TWIN, delay_via
from topologies.switch.targets import TargetError, resolve_target

MODEL_ERRORS = (ModelError, JobError, TargetError)


def planned_schedules(spec: C.ExperimentSpec, target: str) -> tuple[dict[int, list[dict]], list[str]]:
    """Each repeat's jitter schedule as a run on `target` would apply it
    (plan.run_plan), on a kernel without sch_netem (the runner probes the
    kernel, which needs root; the model does not), and the fallback notes.
    TargetError for a target that cannot run here."""
    schedules, notes = {}, []
    for rep in spec.repeat_numbers():
        plan = run_plan(spec, "baseline", rep, netem_ok=False, target=target)
        schedules[rep] = list(plan.schedule)
        notes += [n for n in plan.notes if n not in notes]
    return schedules, notes


def expected_load(spec: C.ExperimentSpec) -> tuple[float, float]:
    """A batch's mean run length (s, the oracle's timeline of every repeat,
    the longer variant) and its agents' data packets per second over it.
    ModelError, JobError, TargetError."""
    pred = predict_repeats(spec, planned_schedules(spec, "soft")[0])
    end = sum(max(p.baseline.end_s, p.symphony.end_s) for p in pred.repeats.values()) / len(pred.repeats)
    return end, data_packets(spec) / end


def oracle(spec: C.ExperimentSpec, target: str = "auto") -> tuple[RepeatsPrediction, list[str]]:
    """The model on every repeat's schedule, and what it says of them
    (fallbacks taken, what it leaves out).  ModelError, JobError, TargetError."""
    schedules, notes = planned_schedules(spec, target)
    pred = predict_repeats(spec, schedules)
    return pred, notes + [f"repeat {rep}: {n}" for rep, ns in pred.notes.items() for n in ns]


def predicted_gain_pct(pred: RepeatsPrediction) -> float:
    """What the oracle says Symphony gains, the mean over jobs of minus the
    change of their mean CCT (positive: faster)."""
    return 0.0 - sum(j.cct_change_pct for j in pred.jobs.values()) / len(pred.jobs)     # 0.0 -: never -0.0


def rank_points(points: list[tuple[str | None, C.ExperimentSpec]],
                target: str = "auto") -> list[tuple[str | None, C.ExperimentSpec]]:
    """The points by the oracle's predicted gain, most first (stable: ties
    keep the sweep's order); prints the ranking."""
    preds = []
    for label, spec in points:
        try:
            preds.append(oracle(spec, target)[0])
        except MODEL_ERRORS as exc:
            raise type(exc)(f"point {label}: {exc}" if label else str(exc)) from None
    order = sorted(range(len(points)), key=lambda i: -predicted_gain_pct(preds[i]))
    print("oracle ranking (predicted change of each job's mean CCT, Symphony against baseline; most gain first):")
    rows = [("#", "point", "gain %", "per job change %")]
    for n, i in enumerate(order, 1):
        label, spec = points[i]
        per_job = ", ".join(f"job {j} {p.cct_change_pct:+.2f}" for j, p in preds[i].jobs.items())
        rows.append((str(n), label or spec.name, f"{predicted_gain_pct(preds[i]):+.2f}", per_job))
    print(align(rows, "  "))
    return [points[i] for i in order]


def model(args, spec: C.ExperimentSpec) -> int:
    """Per job the oracle's baseline and Symphony CCT, change and bound:
    means over iterations and over the repeats' schedules."""
    t = time.perf_counter()
    try:
        pred, notes = oracle(spec, args.target)
    except MODEL_ERRORS as exc:
        raise Refused(f"model: {exc}") from None
    elapsed = time.perf_counter() - t
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    sim = None if args.no_sim else simulation(spec, args)
    if args.json:
        print(json.dumps({"experiment": spec.name, "threshold": spec.symphony.threshold, "model_time_s": elapsed,
                          "notes": notes, **pred.as_dict(), **({"sim": sim} if sim else {})}, indent=1))
        return exits.OK
    print(f"{spec.name}: the flow-level oracle over {len(pred.repeats)} repeat(s)' jitter schedules "
          f"(seed {spec.seed}), threshold {spec.symphony.threshold}, {elapsed:.3f} s"
          + ("; beside it the simulation at the config's rates and at the deployment's scale"
             + _packets(sim) if sim else ""))
    rows = [("job", "ranks", "baseline CCT s", "Symphony CCT s", "change %", "bound s",
             *(("sim base s", "sim Sym s", "sim change %", "deployment %") if sim else ()))]
    ranks = {j.job: j.ranks for j in spec.jobs}
    for job, p in pred.jobs.items():
        extra = ()
        if sim:
            c, d = (sim["scales"][k]["jobs"].get(str(job), {}) for k in SIM_SCALES)
            extra = (fmt(c.get("baseline_cct_s"), "{:.4f}"), fmt(c.get("symphony_cct_s"), "{:.4f}"),
                     fmt(c.get("cct_change_pct"), "{:+.2f}"), fmt(d.get("cct_change_pct"), "{:+.2f}"))
        rows.append((str(job), str(ranks[job]), f"{p.baseline_cct_s:.4f}", f"{p.symphony_cct_s:.4f}",
                     f"{p.cct_change_pct:+.2f}", f"{p.bound_s:.4f}", *extra))
    print(align(rows))
    print("CCT: mean over iterations and repeats; change: (Symphony - baseline) / baseline, negative = faster; "
          "bound: 2(N-1)/N x S / B at the slowest access link"
          + ("; sim: the simulation (docs/design.md, \"Simulation\"), times in the config's units" if sim else ""))
    return exits.OK


def simulation(spec: C.ExperimentSpec, args) -> dict | None:
    """The simulation's figures on the repeats' schedules (cached under
    --out), progress on stderr; None where it cannot run the config."""
    why = refusal(spec)
    if why:
        print(f"note: no simulation: {why}", file=sys.stderr)
        return None
    via = VIA_TWIN if args.target == SIM else delay_via(resolve_target(args.target), False)
    total = len(SIM_SCALES) * spec.repeats * len(spec.variants)
    progress = progress_lines(total, lambda line: print(line, file=sys.stderr, flush=True))
    return predict(spec, list(spec.repeat_numbers()), via, args.out / SIM_CACHE, progress=progress,
                   coarse=args.coarse)


def _packets(sim: dict) -> str:
    """How many of the deployment's packets its simulation ran as one."""
    coarse = sim["scales"][DEPLOYMENT_SCALE]["coarse"]       # predict always simulates the deployment
    return " (full packets)" if coarse == 1 else f" ({coarse} of its packets as one)"


def main(args) -> int:
    # the model runs no agent: what a run asks of this machine is run's and check's to refuse
    return model(args, load(args, machine=False)[0][1])
