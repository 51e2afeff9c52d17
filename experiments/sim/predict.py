"""What the simulation says of a batch's scenario, beside the oracle: per
job, the baseline and Symphony CCT and the change, from the simulation at
the config's own rates (unscaled, or at a confirmed batch's --scale K) and
at the declared deployment's scale, on each repeat's jitter schedule (as
the runs apply it: the same fallbacks).

Each (scale, repeat, variant) is one simulated run, its CCTs those of
analysis.metrics (as for every run), its records then dropped; its figures
are cached under a key of everything that decides them (the scaled spec,
the repeat, the variant, the schedule's fallbacks, the simulation's source),
so a second batch of the same scenario costs nothing.  Runs go to worker
processes, one per core (--jobs N), or to a Dask cluster (--workers).  Times are in the config's own units.
"""

from __future__ import annotations

import concurrent.futures as cf
import functools
import hashlib
import json
import os
import shutil
import tempfile
import warnings
from collections.abc import Callable, Iterable, Iterator
from contextlib import closing
from dataclasses import dataclass, replace
from pathlib import Path
from statistics import mean

from analysis.metrics import run_metrics
from analysis.records import load_run
from analysis.simulation import CONFIG_SCALE, DEPLOYMENT_SCALE, SCALES
from experiments.config import ExperimentSpec, job_specs
from experiments.config.scale import Scaling, at, deployment_scaling, scale
from experiments.jitter import schedule as J
from experiments.plan import run_plan, wall_deadline_s
from experiments.sim.run import run_sim
from experiments.supervise import RunFailed, RunResult
from experiments.workers import cluster, local_jobs, process_pool
from topologies.network import shield

SIM_CACHE = ".sim-cache"         # under the results root (--out): the figures, by what decides them
# the deployment's packets per simulated packet in a batch's prediction:
# full packets, now that the compiled engine carries them at over a million
# a CPU second (the demo's deployment in half a minute a variant); 32 as one
# overstated fam_threshold2's victim by 7-11 points (docs/results.md)
PREDICTION_COARSE = 1
SOURCE_DIRS = ("contract", "hosts", "topologies", "experiments/sim", "experiments/config", "experiments/jitter",
               "analysis", "engine/src")
SOURCE_SUFFIXES = (".py", ".cpp", ".hpp")
REPO = Path(__file__).resolve().parents[2]


@functools.cache
def source_digest() -> str:
    """A digest of the code a simulated run's figures depend on (the
    compiled engine's sources too): a change to any of it makes every
    cached figure stale."""
    h = hashlib.sha256()
    for d in SOURCE_DIRS:
        for p in sorted(p for p in (REPO / d).rglob("*") if p.suffix in SOURCE_SUFFIXES):
            h.update(str(p.relative_to(REPO)).encode())
            h.update(p.read_bytes())
    return h.hexdigest()[:16]


@dataclass(frozen=True, eq=False)      # a task is itself (its spec holds unhashable parts)
class Task:
    scale: str                  # CONFIG_SCALE | DEPLOYMENT_SCALE
    repeat: int
    variant: str
    spec: ExperimentSpec        # scaled
    scaling: Scaling | None
    via: str                    # how the runs applied netem (topologies.network.links.delay_via)

    def key(self) -> str:
        """Everything that decides the run's figures, and nothing else: not
        how many repeats the batch has (a bench's batch of 1 repeat and
        `check --confirm` on the config's 4 share their runs)."""
        spec = {k: v for k, v in self.spec.as_dict(keep_none=True).items() if k != "repeats"}
        doc = {"spec": spec, "repeat": self.repeat, "variant": self.variant,
               "scaling": self.scaling.as_dict() if self.scaling else None, "via": self.via,
               "source": source_digest()}
        return hashlib.sha256(json.dumps(doc, sort_keys=True, default=str).encode()).hexdigest()[:32]


def schedule(spec: ExperimentSpec, repeat: int, via: str) -> list[dict]:
    """A repeat's jitter as the runs apply it (plan.run_plan's rule, the
    runs' fallbacks): the scaled spec's own draws, which are the runs' draws
    scaled."""
    return J.apply_fallbacks(J.make_schedule(spec, repeat), via)[0]


def simulate(task: Task, workdir: Path | None = None) -> dict:
    """One simulated run: per job its mean CCT (config units), and the
    simulation's own figures; {"error": ...} when the run failed.  Its
    records go under workdir (default: the machine's temporary directory,
    as on a Dask worker) and are removed."""
    spec = task.spec
    events = schedule(spec, task.repeat, task.via)
    plan = run_plan(spec, task.variant, task.repeat, netem_ok=True, target="sim")
    plan = replace(plan, schedule=tuple(events), jobs=tuple(job_specs(spec, J.straggles(events))))
    run_dir = Path(tempfile.mkdtemp(prefix="symsim-", dir=workdir))
    try:
        meta = {"variant": task.variant, "repeat": task.repeat, "status": "running"}
        res = RunResult(run_dir, task.variant, task.repeat)
        try:
            run_sim(plan, run_dir, res, meta, wall_deadline_s(spec, plan.jobs),
                    data=not (task.scaling and task.scaling.deployment))
            meta["status"] = "ok"
        except RunFailed as exc:
            return {"error": str(exc)}
        (run_dir / "meta.json").write_text(json.dumps(meta), encoding="utf-8")
        return {"jobs": job_figures(run_dir, task.scaling), "sim": meta.get("sim", {})}
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)


def job_figures(run_dir: Path, scaling: Scaling | None) -> dict[str, dict]:
    """figures() of a run read from its directory (simulate's: no analysis has read it)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run = load_run(run_dir)
    return figures(run_metrics(run.events, run.switches, run.config, run.jitter), scaling)


def figures(metrics: dict, scaling: Scaling | None) -> dict[str, dict]:
    """Per job the run's mean CCT in the config's units, from its metrics
    (analysis.metrics.run_metrics)."""
    f = 1.0 / scaling.time if scaling else 1.0
    return {job: {"cct_mean_s": mean(j["cct_s"]) * f if j["cct_s"] else None} for job, j in metrics["jobs"].items()}


@dataclass(frozen=True, eq=False)
class Ran:
    """One of a batch's own runs on the simulation, as a prediction's task."""
    task: Task
    name: str                   # its directory's
    metrics: dict               # analysis.metrics.run_metrics of its records
    sim: dict                   # meta.json's "sim"


def seed(todo: list[Task], runs: Iterable[Ran], cache: Path) -> list[Task]:
    """Each task that one of a batch's own runs on the simulation already
    is (the same key: spec, repeat, variant, scaling, via) takes that run's
    figures into the cache, so the prediction does not simulate it again
    (a --target sim --deployment batch's deployment column is its runs).
    The tasks seeded."""
    wanted = {t.key(): t for t in todo}
    seeded = []
    for ran in runs:
        t = wanted.get(ran.task.key())
        if t is None or lookup(t, cache) is not None:
            continue
        cache.mkdir(parents=True, exist_ok=True)
        store(t, cache, {"jobs": figures(ran.metrics, ran.task.scaling), "sim": ran.sim, "run": ran.name})
        seeded.append(t)
    return seeded


def progress_lines(total: int, say: Callable[[str], None]) -> Callable[[Task, dict], None]:
    """A progress callback for predict: one line per simulated run, through
    say; total 0 where it is not known ahead."""
    done = [0]

    def progress(task: Task, result: dict) -> None:
        done[0] += 1
        how = (f"cached: run {result['run']}" if result.get("cached") and result.get("run") else
               "cached" if result.get("cached") else f"{(result.get('sim') or {}).get('wall_s', 0):.0f} s")
        say(f"simulation {done[0]}{f'/{total}' if total else ''}: {task.scale} rep {task.repeat} {task.variant} ({how}"
            + (f"; failed: {result['error']}" if "error" in result else "") + ")")
    return progress


def lookup(task: Task, cache: Path) -> dict | None:
    """The task's figures from the cache, None where it has none."""
    try:
        return {**json.loads((cache / f"{task.key()}.json").read_text(encoding="utf-8")), "cached": True}
    except (OSError, ValueError):
        return None


def store(task: Task, cache: Path, out: dict) -> None:
    """A simulated run's figures into the cache (whole or not at all); a
    failed run's are not kept."""
    if "error" in out:
        return
    path = cache / f"{task.key()}.json"
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(out), encoding="utf-8")
    os.replace(tmp, path)


def run_cached(task: Task, cache: Path, scratch: Path | None = None) -> dict:
    """The task's figures from the cache, else simulated (its run's records
    under scratch, default the cache) and cached."""
    hit = lookup(task, cache)
    if hit is not None:
        return hit
    out = simulate(task, scratch or cache)
    store(task, cache, out)
    return out


def tasks(spec: ExperimentSpec, repeats: list[int], via: str, coarse: int = PREDICTION_COARSE,
          scales: tuple[str, ...] = SCALES, k: float = 1.0, rate: float = 1.0) -> list[Task]:
    """Every (scale, repeat, variant) of a batch's prediction; the config's
    network at --scale k (a confirmed batch's K; else its own, unscaled) and
    --rate rate (the batch's)."""
    dep = deployment_scaling(spec, coarse)
    at_k = at(float(k), rate)
    scaled = {CONFIG_SCALE: (spec, None) if at_k.identity else (scale(spec, at_k), at_k),
              DEPLOYMENT_SCALE: (scale(spec, dep), dep)}
    return [Task(name, rep, v, *scaled[name], via) for name in scales for rep in repeats for v in spec.variants]


def predict(spec: ExperimentSpec, repeats: list[int], via: str, cache: Path, workers: int | None = None,
            progress: Callable[[Task, dict], None] = lambda t, r: None, coarse: int = PREDICTION_COARSE,
            scales: tuple[str, ...] = SCALES, k: float = 1.0, rate: float = 1.0,
            runs: Iterable[Ran] = ()) -> dict:
    """The simulation's figures for a batch (module docstring), as
    {"scales": {scale: {"jobs": {job: {baseline_cct_s, symphony_cct_s,
    cct_change_pct}}, "k", "rate" | "coarse"}}, "runs": [...]}; the
    config's network at --scale k --rate rate; progress(task, result) after
    each; runs: the batch's own simulated runs (seed), not simulated again."""
    todo = tasks(spec, repeats, via, coarse, scales, k, rate)
    seed(todo, runs, cache)
    out = summarise(spec, todo, run_all(todo, cache, workers, progress))
    out["scales"][CONFIG_SCALE].update(k=float(k), rate=float(rate))
    return out


def run_all(todo: list[Task], cache: Path, workers: int | None = None,
            progress: Callable[[Task, dict], None] = lambda t, r: None) -> dict[Task, dict]:
    """Each task's figures: from the cache, else simulated on worker
    processes, one per core (or `workers`, or the command's --jobs), or on
    the Dask cluster the command was pointed at (experiments.workers: an
    interrupt kills the local ones at once).  The cache is read and written
    here, in this process: a remote worker need not see it."""
    cache.mkdir(parents=True, exist_ok=True)
    results: dict[Task, dict] = {}
    misses = []
    for t in todo:
        hit = lookup(t, cache)
        if hit is None:
            misses.append(t)
        else:
            results[t] = hit
            progress(t, hit)
    if not misses:
        return results
    # the runs' records, removed whatever happens: a killed worker leaves its run's behind
    scratch = Path(tempfile.mkdtemp(prefix="symsim-", dir=cache))
    try:
        # closed on the way out, whatever ends it: a local pool's workers are killed before scratch goes
        with closing(_simulate_each(misses, scratch, workers or local_jobs(len(misses)))) as each:
            for t, out in each:
                store(t, cache, out)
                results[t] = out
                progress(t, out)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return results


def _simulate_each(todo: list[Task], scratch: Path, workers: int) -> Iterator[tuple[Task, dict]]:
    """(task, figures) as each simulated run ends: on the command's Dask
    cluster, else in this process (one worker) or on a local pool."""
    remote = cluster()
    if remote is not None:
        for t, fut in remote.each(simulate, todo, "prediction"):       # records in each worker's own temp dir
            yield t, fut.result()
        return
    if workers <= 1:
        with shield.during("prediction"):
            for t in todo:
                yield t, simulate(t, scratch)
        return
    with process_pool(workers) as pool:
        futures = {pool.submit(simulate, t, scratch): t for t in todo}
        with shield.during("prediction"):      # (a test signals here: every worker started)
            for fut in cf.as_completed(futures):
                yield futures[fut], fut.result()


def job_changes(todo: list[Task], results: dict[Task, dict], name: str) -> dict[str, dict]:
    """Per job, over the tasks of scale `name`: the mean baseline and
    Symphony CCT of the repeats and the change."""
    per: dict[str, dict[str, list[float]]] = {}
    for t in todo:
        for job, row in results.get(t, {}).get("jobs", {}).items():
            if t.scale == name and row["cct_mean_s"] is not None:
                per.setdefault(job, {}).setdefault(t.variant, []).append(row["cct_mean_s"])
    jobs = {}
    for job, variants in per.items():
        b = mean(variants["baseline"]) if variants.get("baseline") else None
        s = mean(variants["symphony"]) if variants.get("symphony") else None
        jobs[job] = {"baseline_cct_s": b, "symphony_cct_s": s,
                     "cct_change_pct": (s - b) / b * 100 if b and s is not None else None}
    return jobs


def summarise(spec: ExperimentSpec, todo: list[Task], results: dict[Task, dict]) -> dict:
    scales: dict[str, dict] = {name: {"jobs": job_changes(todo, results, name)} for name in SCALES}
    scales[DEPLOYMENT_SCALE]["coarse"] = next((t.scaling.coarse for t in todo if t.scaling), None)
    runs = [{"scale": t.scale, "repeat": t.repeat, "variant": t.variant, "cached": results[t].get("cached", False),
             **({"error": results[t]["error"]} if "error" in results[t] else {}),
             **({"from_run": results[t]["run"]} if results[t].get("run") else {}),
             **{k: results[t].get("sim", {}).get(k) for k in ("wall_s", "frames", "events")}} for t in todo
            if t in results]
    return {"scales": scales, "runs": runs}
