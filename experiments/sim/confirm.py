"""Whether a ``--scale K`` answers for the deployment, as far as the
simulation can say (``experiments check --confirm``).

``--scale auto`` picks K from ratios (experiments.config.regime); a
scenario can have every ratio in its band and still give another answer at
K than at the deployment's scale: victim_squeeze8 at K = 30 gives -13.4 %
where the deployment gives -26.7 % (experiments/README.md, "In the
deployment's regime").  The emulation at K agrees with the simulation of
the same network at K (the same README, "Against the emulation", in
regime); so where the simulation at K agrees with the simulation at the
deployment's scale within AGREE_POINTS on every job's change, a run at K
answers for the deployment.  This climbs --scale auto's ladder from a K
until a rung agrees or the next would pass ``up_to``, on one repeat's
jitter schedule (the simulation is deterministic: one run per variant and
rung).  Each rung's runs go through the batch prediction's cache.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from analysis.simulation import AGREE_POINTS, DEPLOYMENT_SCALE
from experiments.config import ExperimentSpec
from experiments.config.regime import LADDER
from experiments.config.scale import at, scale
from experiments.sim.predict import PREDICTION_COARSE, Task, job_changes, run_all, tasks


@dataclass(frozen=True)
class Rung:
    """One K: each job's change there and how far it is from the deployment's."""

    k: float
    changes: dict[str, float | None]
    gaps: dict[str, float | None]
    errors: tuple[str, ...] = ()

    @property
    def agrees(self) -> bool:
        return not self.errors and bool(self.gaps) and all(g is not None and g <= AGREE_POINTS
                                                           for g in self.gaps.values())


@dataclass(frozen=True)
class Confirmation:
    deployment: dict[str, float | None]
    rungs: tuple[Rung, ...]
    errors: tuple[str, ...] = ()

    @property
    def k(self) -> float | None:
        """The first rung that agrees, if any did."""
        return next((r.k for r in self.rungs if r.agrees), None)

    @property
    def chosen(self) -> Rung | None:
        """The rung a batch runs at (`run --confirm`): the first that agrees,
        else the one closest to the deployment's (the smallest largest gap
        over the jobs); None where no rung has a gap on every job."""
        full = [r for r in self.rungs if not r.errors and r.gaps and None not in r.gaps.values()]
        return next((r for r in full if r.agrees), None) or min(full, key=_worst_gap, default=None)

    def as_dict(self, up_to: float) -> dict:
        """The record a batch keeps of it (its simulation file's "confirmation")."""
        chosen = self.chosen
        return {"up_to": up_to, "deployment": self.deployment, "errors": list(self.errors),
                "k": chosen.k if chosen else None, "agrees": bool(chosen and chosen.agrees),
                "rungs": [{"k": r.k, "changes": r.changes, "gaps": r.gaps, "errors": list(r.errors)}
                          for r in self.rungs]}


def _worst_gap(r: Rung) -> float:
    return max(r.gaps.values())


def rungs_from(start_k: float, up_to: float) -> list[float]:
    """start_k, then every rung of --scale auto's ladder above it, up to up_to."""
    return [start_k] + [float(k) for k in LADDER if start_k < k <= up_to]


def _changes(todo: list[Task], results: dict[Task, dict], name: str) -> dict[str, float | None]:
    return {job: row["cct_change_pct"] for job, row in job_changes(todo, results, name).items()}


def _errors(todo: list[Task], results: dict[Task, dict]) -> tuple[str, ...]:
    return tuple(f"{t.scale} {t.variant}: {results[t]['error']}" for t in todo if "error" in results.get(t, {}))


def at_k(spec: ExperimentSpec, k: float, repeat: int, via: str, rate: float = 1.0) -> list[Task]:
    """Both variants of one repeat, simulated on the network the emulation
    runs at --scale k --rate rate (times then in the config's units, as a
    batch's)."""
    sc = at(float(k), rate)
    return [Task(f"K={k:g}", repeat, v, scale(spec, sc), sc, via) for v in spec.variants]


def confirm(spec: ExperimentSpec, start_k: float, up_to: float, via: str, cache: Path, *, repeat: int = 1,
            coarse: int = PREDICTION_COARSE, progress: Callable[[Task, dict], None] = lambda t, r: None,
            on_rung: Callable[[Confirmation], None] = lambda c: None, rate: float = 1.0) -> Confirmation:
    """The deployment's changes, then each rung's, until one agrees (module
    docstring).  on_rung(the confirmation so far) once the deployment's
    changes are known and after each rung."""
    dep = tasks(spec, [repeat], via, coarse, (DEPLOYMENT_SCALE,))
    done = run_all(dep, cache, progress=progress)
    deployment = _changes(dep, done, DEPLOYMENT_SCALE)
    errors = _errors(dep, done)
    rungs: list[Rung] = []
    on_rung(Confirmation(deployment, (), errors))
    if errors:
        return Confirmation(deployment, (), errors)
    for k in rungs_from(start_k, up_to):
        todo = at_k(spec, k, repeat, via, rate)
        results = run_all(todo, cache, progress=progress)
        changes = _changes(todo, results, todo[0].scale)
        gaps = {job: abs(changes[job] - there) if changes.get(job) is not None and there is not None else None
                for job, there in deployment.items()}
        rung = Rung(k, changes, gaps, _errors(todo, results))
        rungs.append(rung)
        on_rung(Confirmation(deployment, tuple(rungs)))
        if rung.agrees:
            break
    return Confirmation(deployment, tuple(rungs))


def describe_rung(r: Rung) -> str:
    if r.errors:
        return f"at K = {r.k:g}: the simulation failed ({'; '.join(r.errors)})"
    jobs = ", ".join(f"job {job} {_pct(c)} ({_pts(r.gaps.get(job))} from the deployment's)"
                     for job, c in r.changes.items())
    verdict = (f"within {AGREE_POINTS:g} points on every job" if r.agrees
               else f"not within {AGREE_POINTS:g} points")
    return f"at K = {r.k:g}: {jobs}: {verdict}"


def describe(c: Confirmation, up_to: float) -> str:
    """The conclusion, one line."""
    if c.errors:
        return f"the simulation at the deployment's scale failed ({'; '.join(c.errors)}): nothing confirmed"
    if c.k is not None:
        return (f"K = {c.k:g} answers for the deployment as far as the simulation can say (the simulated network "
                f"at K within {AGREE_POINTS:g} points of the deployment's on every job): run with --scale {c.k:g}")
    return (f"no K up to {up_to:g} agrees with the deployment's within {AGREE_POINTS:g} points: a run there "
            f"answers for that K, not for a real cluster (try a larger --confirm-up-to, or the simulation "
            f"with --target sim --deployment)")


def describe_choice(c: Confirmation, up_to: float) -> str:
    """`run --confirm`'s conclusion, one line, where a rung was chosen: the
    K the batch runs at and why."""
    r = c.chosen
    if r.agrees:
        return (f"the batch runs at K = {r.k:g}, the first K whose simulated network agrees with the deployment's "
                f"within {AGREE_POINTS:g} points on every job")
    return (f"no K up to {up_to:g} agrees with the deployment's within {AGREE_POINTS:g} points: the batch runs at "
            f"K = {r.k:g}, the closest (up to {_worst_gap(r):.1f} points), and answers for that K, not for a real "
            "cluster")


def describe_last(c: Confirmation) -> str:
    """What the latest step of a confirmation found: the deployment's
    changes, or the last rung's."""
    if c.rungs:
        return describe_rung(c.rungs[-1])
    if c.errors:
        return f"at the deployment's scale: the simulation failed ({'; '.join(c.errors)})"
    return "at the deployment's scale: " + ", ".join(f"job {job} {_pct(v)}" for job, v in c.deployment.items())


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{v:+.1f} %"


def _pts(v: float | None) -> str:
    return "-" if v is None else f"{v:.1f} points"
