"""Symphony on an ECMP fabric (issue 51, docs/ecmp.md):
python3 -m experiments.bench.ecmp [--scenario NAME ...] [--routing NAME ...] [--track path|leaves|groups|verdict]
        [--repeats N] [--jobs N] [--scale deployment|config] [--coarse C] [--json FILE] [--plot PNG [--plot-job N]]

Runs each scenario in the simulation (the compiled engine, ``--target sim``)
with ``[topology] routing`` = destination, ecmp and ecmp-flow (or the
``--routing`` given), baseline and Symphony, on the jitter of repeats 1 to
``--repeats`` N (default 1: a batch's first repeat, the draws ``experiments
run`` makes, so the two give the same figures), with
``[symphony] track`` = ``--track`` (default path: every switch a flow may
cross tracks it; leaves: its two access switches only; groups: path's
switches, each flow's n_local its spine group's size; verdict: leaves',
every other switch marking on the verdict the leaf carries in the packet),
at the deployment's
scale (``--scale deployment``, its packets ``--coarse`` C to one) or at the
config's rates, the runs on every core (``--jobs`` N to use fewer), and
prints:

* per job the baseline and Symphony CCT (config units, the repeats' mean)
  and the change of the means, each repeat's change, for each routing, and
  the flow-level oracle's change on the same jitter (the repeats' mean);
* per spine and job (repeat 1's runs) what its frontier did, worked out from the routes the
  switches compute (routes.route on every step's tag): the steps each spine
  saw complete (its step_count reaching n_local), how many of the job's
  steps its frontier stood still on and how often it jumped (advanced more
  than one step at once); what it did in the Symphony run, sampled 20
  times a step (advances, jumps between two samples, where it ended, its
  longest stand short of the job's last step); and from the end-of-run
  dump (switches/<name>.json) how far behind the job's last step its
  frontier ended and how many step_count slots still held arrivals; a
  spine that tracks none of the job's flows (track leaves, verdict) says
  "untracked";
* Symphony's marks at the spines and at the leaves (a Symphony run's mean).

* per routing and variant, the reordering the receivers saw (every repeat's): of their
  valid data packets (frames, at the deployment's scale), how many came
  behind one of a newer step from the same sender (the records' stats
  counter rx_older_step, docs/hosts.md).  A step starts once the previous
  one is all sent, not acknowledged (hosts/udp/endpoint.py,
  step_complete), so under ECMP the tail of step k and the head of step
  k+1 travel on different spines at once.

The scenarios: the shipped 16-host victim_straggle16 on two spines (its one
spine gives ECMP no choice: spines = 2 and the fabric rate halved, the same
oversubscription), and ecmp_spines2, ecmp_spines4, ecmp_spines8
(experiments/configs/); ``ecmp_spines4.long`` (five iterations, 70 steps:
past W = 64, where a spine's step_count slots are reused) and
ecmp_leaves4 (four leaves of two hosts: the four-leaf fabric an
emulation on two cores carries) on request.
Figures, not a timed test.  Which rank straggles is a repeat's draw, and
under ECMP it decides which flows collide: one repeat is one draw
(docs/log/2026-12-03-ecmp-repeats.md).
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import shutil
import sys
import tempfile
import warnings
from dataclasses import replace
from pathlib import Path
from statistics import mean

from analysis import plots
from analysis.metrics import run_metrics
from analysis.records import load_run
from contract import p4names as pn
from contract.ecmp import ROUTINGS
from contract.tags import TAG_MASK
from experiments import config as C
from experiments import workers as W
from experiments.cli import at_least_one, worker_count
from experiments.config import job_specs
from experiments.config.scale import deployment_scaling, scale, step_s
from experiments.jitter import schedule as J
from experiments.oracle.scenario import predict_repeats
from experiments.plan import run_plan, wall_deadline_s
from experiments.sim.predict import schedule
from experiments.sim.ranks import EPOCH_NS
from experiments.sim.run import SimRun
from experiments.supervise import REPO
from experiments.tables import align
from topologies.network.links import VIA_TWIN
from topologies.spec.routes import ring_flow, route
from topologies.switch import controlplane as cp
from topologies.switch.params import TRACKS

VARIANTS = ("baseline", "symphony")
SAMPLES_PER_STEP = 20          # frontier samples per scenario step
CONFIGS = REPO / "experiments" / "configs"
# name -> (config, [topology] overrides, overrides of every [[jobs]])
SCENARIOS = {
    "victim_straggle16.2spines": ("victim_straggle16", {"spines": 2, "fabric_rate_mbit": 5}, {}),
    "ecmp_spines2": ("ecmp_spines2", {}, {}),
    "ecmp_spines4": ("ecmp_spines4", {}, {}),
    "ecmp_spines8": ("ecmp_spines8", {}, {}),
    "ecmp_leaves4": ("ecmp_leaves4", {}, {}),
    # 70 steps: past W = 64, where a spine's step_count slot is reused
    "ecmp_spines4.long": ("ecmp_spines4", {}, {"iterations": 5}),
}
DEFAULT_SCENARIOS = ("victim_straggle16.2spines", "ecmp_spines2", "ecmp_spines4", "ecmp_spines8")


def spec_of(name: str, routing: str, track: str = "path") -> C.ExperimentSpec:
    config, overrides, job_overrides = SCENARIOS[name]
    raw = C.load_raw(CONFIGS / f"{config}.toml")
    raw["topology"] = {**raw["topology"], **overrides, "routing": routing}
    raw["symphony"] = {**raw.get("symphony", {}), "track": track}
    raw["jobs"] = [{**job, **job_overrides} for job in raw["jobs"]]
    raw["name"] = f"{name}-{routing}"
    return C.resolve(raw, f"{config}.toml")


def simulate(spec: C.ExperimentSpec, variant: str, time_factor: float, repeat: int = 1,
             engine: str = "compiled") -> dict:
    """One simulated run (experiments.sim.run.run_sim's, with every
    switch's frontier registers sampled) on the repeat's jitter: per job
    its mean CCT in config units, the end dumps and the frontiers' series."""
    events = schedule(spec, repeat, VIA_TWIN)
    plan = run_plan(spec, variant, repeat, netem_ok=True, target="sim")
    plan = replace(plan, schedule=tuple(events), jobs=tuple(job_specs(spec, J.straggles(events))))
    run_dir = Path(tempfile.mkdtemp(prefix="symecmp-"))
    try:
        sim = SimRun(plan, run_dir, data=False, engine=engine)
        series = watch_frontiers(sim, step_s(spec) / SAMPLES_PER_STEP)
        try:
            sim.run(wall_deadline_s(spec, plan.jobs))
        finally:
            sim.close()
            sim.net.dump_switches(run_dir / "switches")
        if sim.failed or any(not r.done for r in sim.ranks):
            return {"error": "an agent failed or the deadline passed"}
        meta = {"variant": variant, "repeat": repeat, "status": "ok", "target": sim.net.target, "t0_ns": EPOCH_NS,
                "start_margin_s": 0.0}
        (run_dir / "meta.json").write_text(json.dumps(meta), encoding="utf-8")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            run = load_run(run_dir)
        per_job = run_metrics(run.events, run.switches, run.config, run.jitter)["jobs"]
        jobs = {job: mean(j["cct_s"]) / time_factor if j["cct_s"] else None for job, j in per_job.items()}
        late = {k: sum(j["reordering"][k] for j in per_job.values()) for k in ("rx_data", "rx_older_step")}
        return {"cct": jobs, "reordering": late, "switches": run.switches, "end_s": sim.engine.now / time_factor,
                "frontiers": {f"{sw}/{job}": [(t / time_factor, v) for t, v in pts]
                              for (sw, job), pts in series.items()}}
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)


def oracle_changes(spec: C.ExperimentSpec, repeats: int = 1) -> dict[str, float]:
    """The flow-level oracle's change per job (%, the repeats' mean) on the
    jitter the runs apply, beside the simulation's: under `ecmp` the model
    keeps each ring edge on its first step's path (docs/ecmp.md)."""
    pred = predict_repeats(spec, {r: schedule(spec, r, VIA_TWIN) for r in spec.repeat_numbers(repeats)})
    return {str(job): round(p.cct_change_pct, 1) for job, p in pred.jobs.items()}


def watch_frontiers(sim: SimRun, dt: float) -> dict[tuple[str, int], list[tuple[float, int]]]:
    """Every dt virtual seconds while agents run, each switch's frontier of
    each job it tracks, as a step index (-1: the step before the first),
    kept where it changed: (switch, job) -> [(t, step)]."""
    cells = [(sw, job, slot) for sw, p in sim.net.plans.items() for job, slot in p.jobs.items()]
    series: dict[tuple[str, int], list[tuple[float, int]]] = {(sw, job): [] for sw, job, _ in cells}

    def look() -> None:
        now = sim.engine.now
        for sw, job, slot in cells:
            step = ((sim.net.clients[sw].register_read(pn.FRONTIER, slot) + 1) & TAG_MASK) - 1
            pts = series[(sw, job)]
            if not pts or pts[-1][1] != step:
                pts.append((now, step))
        if sim.running:
            sim.engine.at(now + dt, look)
    sim.engine.at(0.0, look)
    return series


def frontier_moves(pts: list[tuple[float, int]], last_step: int, end_s: float) -> dict:
    """A sampled frontier's advances, jumps (more than one step between two
    samples, a sample being a twentieth of a step) and its longest stand
    short of the job's last step (config seconds, to the run's end if it
    never got there)."""
    moves = [b - a for (_, a), (_, b) in zip(pts, pts[1:], strict=False)]
    ends = [t for t, _ in pts[1:]] + [end_s] if pts else []      # no samples: a failed run
    stand = max((e - t for (t, v), e in zip(pts, ends, strict=True) if v < last_step), default=0.0)
    return {"advances": len(moves), "sampled_jumps": sum(m > 1 for m in moves),
            "final": pts[-1][1] if pts else None, "longest_stand_s": round(stand, 4)}


# --- the spines' frontiers as the routes make them --------------------------------

def arrivals(spec: C.ExperimentSpec, job, spine: str, steps: int, entries: list) -> list[tuple[int, int]]:
    """Per step, how many of the job's ring flows cross the spine with that
    step's tag (every flow sends every step), and the n_local the spine's
    entries (its plan's flows) hold for them: the first arriving flow's, 0
    with none (under track groups a step's arrivals are one group of one
    n_local)."""
    topo = spec.topo
    held = {(e.src_ip, e.dst_ip, e.dport): e.n_local for e in entries}
    out = []
    for k in range(steps):
        came = [(s, d, p) for s, d, p in job.placed.ring_flows()
                if any(h.switch == spine for h in route(topo, s, d, flow=ring_flow(k, p)))]
        n = held.get((topo.host(came[0][0]).ip, topo.host(came[0][1]).ip, came[0][2]), 0) if came else 0
        out.append((len(came), n))
    return out


def frontier_walk(arrived: list[tuple[int, int]]) -> dict:
    """The spine's step_count and frontier over the job's steps, in step
    order, from each step's (arrivals, n_local): a slot (step mod W) counts
    arrivals until the n_local-th completes it (then resets); the frontier
    moves to a completed step.  A ring spreads fewer than W steps, so a
    slot's earlier step has all its arrivals before a later step's come."""
    slots = [0] * pn.W
    frontier, completed, stalls, jumps = -1, 0, 0, 0
    for k, (a, n_local) in enumerate(arrived):
        slot = k % pn.W
        total = slots[slot] + a
        if a and total >= n_local:
            slots[slot] = total % n_local         # the n_local-th arrival resets the slot
            completed += 1
            jumps += k - frontier > 1
            frontier = k
        else:
            slots[slot] = total
            stalls += 1
    return {"completed": completed, "stalled": stalls, "jumps": jumps}


def dump_state(dump: dict, job: int, last_step: int) -> dict | None:
    """From a switch dump: how far behind the job's last step its frontier
    ended, and the step_count slots still holding arrivals."""
    slot = dump.get("jobs", {}).get(str(job))
    if slot is None:
        return None
    regs = dump["registers"]
    behind = (last_step - regs["frontier"][slot]) & TAG_MASK
    left = sum(1 for c in regs["step_count"][slot * pn.W:(slot + 1) * pn.W] if c)
    return {"behind": behind, "slots_left": left}


def marks(dump: dict, job: int) -> int:
    ids = [f["flow_id"] for f in dump.get("flows", []) if f["job"] == job]
    return sum(dump["counters"]["sym_marks"].get(str(i), {}).get("packets", 0) for i in ids)


def spines_of(spec) -> list[str]:
    return [s.name for s in spec.topo.switches if s.role == "spine"]


def spine_rows(spec, runs: dict) -> list[dict]:
    """Per spine and job: the frontier walk, n_local, the dumps' ends; a
    spine with none of the job's flows installed only says so (untracked)."""
    plans = cp.plan(spec.topo, [j.placed for j in spec.jobs], spec.symphony)
    rows = []
    for j in spec.jobs:
        steps = j.iterations * 2 * (j.ranks - 1)
        for sw in spines_of(spec):
            held = sorted({f.n_local for f in plans[sw].flows if f.job == j.job})    # several under track groups
            n_local = held[0] if len(held) == 1 else "/".join(map(str, held))
            if not n_local:
                rows.append({"job": j.job, "spine": sw, "n_local": 0, "steps": steps, "untracked": True})
                continue
            walk = frontier_walk(arrivals(spec, j, sw, steps, plans[sw].flows))
            sym = runs.get("symphony", {})
            dump = sym.get("switches", {}).get(sw)
            end = dump_state(dump, j.job, steps - 1) if dump else None
            pts = sym.get("frontiers", {}).get(f"{sw}/{j.job}", [])
            moved = frontier_moves(pts, steps - 1, sym.get("end_s", 0.0))
            rows.append({"job": j.job, "spine": sw, "n_local": n_local, "steps": steps, **walk, **moved,
                         **({"end_behind": end["behind"], "end_slots_left": end["slots_left"]} if end else {})})
    return rows


def verdict_marks(dump: dict) -> int:
    """Symphony's marks on a verdict carried in (track verdict), every port's."""
    return sum(c.get("packets", 0) for c in dump["counters"].get(pn.VERDICT_MARKS, {}).values())


def mark_split(spec, reps: dict[int, dict]) -> dict[str, int]:
    """Symphony's marks at the spines and at the leaves, a Symphony run's
    mean over the repeats that ran: on the flows a switch tracks, and on the
    verdicts carried in (track verdict)."""
    spines = set(spines_of(spec))
    out = {"spines": 0, "leaves": 0}
    done = [runs["symphony"] for runs in reps.values() if "switches" in runs.get("symphony", {})]
    for run in done:
        for sw, dump in run["switches"].items():
            where = "spines" if sw in spines else "leaves"
            out[where] += sum(marks(dump, j.job) for j in spec.jobs) + verdict_marks(dump)
    return {k: round(v / len(done)) if done else 0 for k, v in out.items()}


# --- one scenario --------------------------------------------------------------

def run_scenario(name: str, at_deployment: bool, coarse: int, say, routings: tuple[str, ...] = ROUTINGS,
                 track: str = "path", repeats: int = 1) -> dict:
    specs, factors, predicted = {}, {}, {}
    for routing in routings:
        spec = spec_of(name, routing, track)
        predicted[routing] = oracle_changes(spec, repeats)
        factors[routing] = 1.0
        if at_deployment:
            sc = deployment_scaling(spec, coarse)
            spec, factors[routing] = scale(spec, sc), sc.time
        specs[routing] = spec
    todo = [(routing, variant, rep) for routing in routings for rep in specs[routing].repeat_numbers(repeats)
            for variant in VARIANTS]
    say(f"{name}: track {track}, {len(todo)} runs ({', '.join(routings)}; repeats 1-{repeats}) ...")
    done = simulate_all({t: (specs[t[0]], t[1], factors[t[0]], t[2]) for t in todo},
                        lambda t: say(f"{name}: {t[0]} track {track} {t[1]} repeat {t[2]} done"))
    out = {}
    for routing in routings:
        reps = {rep: {v: done[(r, v, rep)] for v in VARIANTS} for r, _, rep in todo if r == routing}
        first = reps[min(reps)]
        out[routing] = {"jobs": job_rows(reps, predicted[routing]), "spines": spine_rows(specs[routing], first),
                        "marks": mark_split(specs[routing], reps), "frontiers": first["symphony"].get("frontiers", {}),
                        "end_s": first["symphony"].get("end_s"), "repeats": sorted(reps),
                        "reordering": reordering(reps),
                        "errors": {f"{v} repeat {rep}": r["error"] for rep, runs in reps.items()
                                   for v, r in runs.items() if "error" in r}}
    return out


def simulate_all(todo: dict, finished) -> dict:
    """simulate(*args) of every task (key -> args) on the command's local
    workers (one per core, or --jobs; experiments.workers: an interrupt
    kills them at once), in this process where one is all there is."""
    jobs = W.local_jobs(len(todo))
    if jobs <= 1:
        out = {}
        for key, args in todo.items():
            out[key] = simulate(*args)
            finished(key)
        return out
    with W.process_pool(jobs) as pool:
        futures = {pool.submit(simulate, *args): key for key, args in todo.items()}
        out = {}
        for fut in cf.as_completed(futures):
            out[futures[fut]] = fut.result()
            finished(futures[fut])
        return out


def reordering(reps: dict[int, dict]) -> dict[str, dict[str, int]]:
    """Per variant, the receivers' counts summed over the repeats."""
    out: dict[str, dict[str, int]] = {}
    for runs in reps.values():
        for v, r in runs.items():
            if "reordering" in r:
                acc = out.setdefault(v, {"rx_data": 0, "rx_older_step": 0})
                for k in acc:
                    acc[k] += r["reordering"][k]
    return out


def job_rows(reps: dict[int, dict], oracle_pct: dict[str, float]) -> dict[str, dict]:
    """Per job: the repeats' mean baseline and Symphony CCT and the change
    of the means (the runner's summary's rule), and each repeat's change;
    a job missing from a repeat's run (it failed) leaves that repeat out."""
    jobs = sorted({job for runs in reps.values() for r in runs.values() for job in r.get("cct", {})}, key=int)
    rows = {}
    for job in jobs:
        pairs = [(runs["baseline"].get("cct", {}).get(job), runs["symphony"].get("cct", {}).get(job))
                 for _, runs in sorted(reps.items())]
        pairs = [(b, s) for b, s in pairs if b and s]
        b = mean(p[0] for p in pairs) if pairs else None
        s = mean(p[1] for p in pairs) if pairs else None
        rows[job] = {"baseline_s": b, "symphony_s": s,
                     "change_pct": round(100 * (s / b - 1), 1) if b and s else None,
                     "repeat_changes_pct": [round(100 * (s / b - 1), 1) for b, s in pairs],
                     "oracle_pct": oracle_pct.get(str(job))}
    return rows


def print_scenario(name: str, res: dict, track: str = "path") -> None:
    print(f"\n== {name} (symphony.track {track})")
    rows = [["routing", "job", "baseline s", "symphony s", "change %", "each repeat %", "oracle %"]]
    for routing, r in res.items():
        for job, j in r["jobs"].items():
            each = " ".join(f"{c:+.1f}" for c in j.get("repeat_changes_pct", [])) or "-"
            rows.append([routing, job, _f(j["baseline_s"]), _f(j["symphony_s"]), _f(j["change_pct"], 1), each,
                         _f(j.get("oracle_pct"), 1)])
    print(align(rows))
    print("(the spine table and the frontiers: repeat 1's runs)")
    rows = [["routing", "job", "spine", "n_local", "steps", "routes: completed", "stalled", "jumps",
             "sampled: advances", "jumps", "final", "longest stand s", "dump: behind", "slots left"]]
    for routing, r in res.items():
        for s in r["spines"]:
            if s.get("untracked"):
                rows.append([routing, str(s["job"]), s["spine"], "untracked", str(s["steps"])] + ["-"] * 9)
                continue
            rows.append([str(x) for x in (routing, s["job"], s["spine"], s["n_local"], s["steps"], s["completed"],
                                          s["stalled"], s["jumps"], s["advances"], s["sampled_jumps"], s["final"],
                                          s["longest_stand_s"], s.get("end_behind", "-"),
                                          s.get("end_slots_left", "-"))])
    print(align(rows))
    for routing, r in res.items():
        for variant, c in r.get("reordering", {}).items():
            share = f" ({100 * c['rx_older_step'] / c['rx_data']:.1f} %)" if c["rx_data"] else ""
            print(f"{routing} {variant}: of {c['rx_data']} data packets the receivers got {c['rx_older_step']}"
                  f"{share} after a newer step's")
    for routing, r in res.items():
        print(f"{routing}: Symphony marks at the spines {r['marks']['spines']}, at the leaves {r['marks']['leaves']}"
              + (f"; errors {r['errors']}" if r["errors"] else ""))


def plot_frontiers(res: dict, name: str, job: int, path: Path, track: str = "path") -> None:
    """Symphony's run: job's frontier (step) over time at every switch that
    tracks it, one panel per routing."""
    plt = plots.plt                  # analysis.plots' matplotlib, on Agg
    res = {k: v for k, v in res.items() if k in ROUTINGS}
    fig, axes = plt.subplots(1, len(res), figsize=(4.2 * len(res), 3.2), sharey=True, squeeze=False)
    axes = axes[0]
    for ax, (routing, r) in zip(axes, res.items(), strict=True):
        for key, pts in sorted(r["frontiers"].items()):
            sw, j = key.split("/")
            if int(j) != job or not pts:
                continue
            ts, vs = zip(*(list(pts) + [(r["end_s"] or pts[-1][0], pts[-1][1])]), strict=True)
            ax.step(list(ts), list(vs), where="post", label=sw, lw=1.6 if sw.startswith("p") else 0.8,
                    ls="-" if sw.startswith("p") else "--")
        ax.set_title(f"{routing}")
        ax.set_xlabel("time (s, config units)")
    axes[0].set_ylabel(f"job {job}'s frontier (step)")
    axes[-1].legend(fontsize=7, loc="lower right")
    fig.suptitle(f"{name}, track {track}: job {job}'s frontier at each switch\n"
                 "(spines solid, leaves dashed), Symphony on", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def _f(x, nd: int = 3) -> str:
    return "-" if x is None else f"{x:.{nd}f}"


def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python3 -m experiments.bench.ecmp", description=__doc__.split("\n")[0])
    ap.add_argument("--scenario", action="append", choices=sorted(SCENARIOS))
    ap.add_argument("--routing", action="append", choices=ROUTINGS,
                    help="[topology] routing to run (repeatable; default: all of them)")
    ap.add_argument("--track", choices=TRACKS, default="path",
                    help="[symphony] track of every run: path (every switch a flow may cross), leaves, "
                         "groups (path's switches, n_local the size of a flow's spine group), or verdict "
                         "(leaves', the others marking on the leaf's verdict the packet carries)")
    ap.add_argument("--repeats", type=at_least_one("a number of repeats"), default=1,
                    help="run on the jitter of repeats 1 to N, as a batch numbers them (default 1: a batch's first)")
    ap.add_argument("--jobs", type=worker_count, help="local worker processes (default: one per core)")
    ap.add_argument("--scale", choices=("deployment", "config"), default="deployment")
    ap.add_argument("--coarse", type=int, default=1,
                    help="--scale deployment: packets simulated as one (default 1, full packets: 32 is several times "
                         "faster and lay 15 to 31 points off under ecmp, docs/log/2026-12-02-ecmp-full-packets.md)")
    ap.add_argument("--json", type=Path, help="write the figures here too")
    ap.add_argument("--plot", type=Path, help="the first scenario's job 1 frontiers, one panel per routing, here")
    ap.add_argument("--plot-job", type=at_least_one("a job id"), default=1, help="--plot this job's frontiers")
    args = ap.parse_args(argv)
    args.routing = tuple(dict.fromkeys(args.routing or ROUTINGS))
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    results = {}
    with W.using(args.jobs):
        for name in args.scenario or DEFAULT_SCENARIOS:
            results[name] = run_scenario(name, args.scale == "deployment", args.coarse,
                                         lambda m: print(m, file=sys.stderr, flush=True), args.routing, args.track,
                                         args.repeats)
            print_scenario(name, results[name], args.track)
            sys.stdout.flush()
    if args.json:
        args.json.write_text(json.dumps(results, indent=1, sort_keys=True), encoding="utf-8")
    if args.plot:
        first = next(iter(results))
        plot_frontiers(results[first], first, args.plot_job, args.plot, args.track)
    return 0


if __name__ == "__main__":
    sys.exit(main())
