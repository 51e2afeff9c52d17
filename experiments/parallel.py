"""A batch's runs on the simulation target, every point's at once, off the
runner's process: on local worker processes, one per core (`--jobs N`;
experiments.workers), or on the workers of a Dask scheduler (`--workers
ADDRESS`; experiments.remote).  The simulation is deterministic and each
run is its own, so the records, run directories, summary and report are a
serial batch's (wall times aside): each point's runs are handed back in
the order Runner.run_all makes them, and cli_run then finishes each point
as before.

- A local worker makes its run in the run directory under --out, as the
  runner would, and its lines (progress) reach the parent as they come.
  An interrupt stops the runs under way as in the runner's own process:
  SIGINT to the workers (experiments.workers.interrupt), each run marked
  interrupted with its records, then up to GRACE_S for them before the
  workers are killed; a run whose worker was killed is marked interrupted
  here.
- A Dask worker makes its run in a temporary directory of its own and
  returns the directory's files with its result; they are written here,
  into the run directory (no shared file system needed: the records
  travel in memory).  Its lines come with its result.  An interrupt
  cancels what has not run; the runs under way are dropped.
- A full disk stops the batch: no further run starts.  --fail-fast does
  not come here (cli_run): a batch that stops at its first failed run must
  not have made the runs after it.
"""

from __future__ import annotations

import concurrent.futures as cf
import json
import tempfile
import time
from collections.abc import Callable
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from contract.exits import is_disk_full
from experiments import rundir as R
from experiments import workers as W
from experiments.config import ExperimentSpec
from experiments.config.scale import Scaling
from experiments.plan import SIM
from experiments.runner import Runner, _write_failure
from experiments.signals import Signals
from experiments.supervise import RunResult

POLL_S = 0.2        # the parent says its workers' lines at least this often
GRACE_S = 1.0       # an interrupted run stops within this, or its worker is killed (issue 52: all gone in 2 s)
SHORT = ("experiment", "variant", "repeat", "status", "reason")     # a meta.json rewritten on a full disk


@dataclass(frozen=True, eq=False)      # a task is itself (its spec holds unhashable parts)
class RunTask:
    point: int                  # its runner's index in the batch
    repeat: int
    variant: str
    spec: ExperimentSpec
    exp_dir: Path
    stamp: str
    versions: dict
    scaling: Scaling | None

    @property
    def run_dir(self) -> Path:
        """Its run directory: the batch's stamp is its own (cli_run.claim),
        so make_run_dir takes the first name."""
        return self.exp_dir / f"{self.stamp}-{self.variant}-rep{self.repeat}"


def tasks(runners: list[Runner]) -> list[RunTask]:
    return [RunTask(i, rep, variant, r.spec, r.exp_dir, r.stamp, r.versions, r.scaling)
            for i, r in enumerate(runners) for rep, variant in r.runs()]


def _run(task: RunTask, exp_dir: Path, say: Callable[[str], None]) -> RunResult:
    return Runner(task.spec, exp_dir, target=SIM, stamp=task.stamp, versions=task.versions, say=say,
                  scaling=task.scaling).run_one(task.variant, task.repeat)


def run_here(task: RunTask) -> RunResult | None:
    """In a local worker: the run, into its directory (module docstring);
    None where it never began (the batch was stopping) or where the
    parent's SIGINT came as it ended (run_one's own handling is past)."""
    res = None
    try:
        with W.interruptible():
            if not W.stopping():
                res = _run(task, task.exp_dir, W.tell)
    except KeyboardInterrupt:
        pass
    return res


def run_away(task: RunTask) -> tuple[RunResult, dict[str, bytes | None], list[str]]:
    """On a Dask worker: the run in a temporary directory, and its files
    (None: a directory) and lines, for the parent to write and say."""
    lines: list[str] = []
    with tempfile.TemporaryDirectory(prefix="symrun-") as tmp:
        res = _run(task, Path(tmp), lines.append)
        # meta.json first, as the runner writes it: written back, it is there before the rest
        paths = sorted(res.run_dir.rglob("*"), key=lambda p: (p.name != "meta.json", str(p)))
        files = {p.relative_to(res.run_dir).as_posix(): p.read_bytes() if p.is_file() else None for p in paths}
    return res, files, lines


def mark(res: RunResult) -> None:
    """res's status and reason into its meta.json, which its worker wrote
    otherwise or left saying "running"."""
    path = res.run_dir / "meta.json"
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        meta = {"variant": res.variant, "repeat": res.repeat}
    meta.update(status=res.status, reason=res.reason)
    R.write_status(path, meta, {k: meta.get(k) for k in SHORT})


class Batch:
    """The parent's side: each run's result as it comes, its lines and
    progress said, the batch stopped by a full disk."""

    def __init__(self, say: Callable[[str], None], after: Callable[[RunResult], None], signals: Signals):
        self.say, self.after, self.signals = say, after, signals
        self.done: dict[RunTask, RunResult] = {}
        self.stopped = False

    def lines(self, lines: list[str]) -> None:
        for line in lines:
            self.say(line)

    def take(self, task: RunTask, res: RunResult | None) -> None:
        if res is None:
            res = self.orphan(task)
            if res is None:
                return
        elif res.status == "interrupted" and res.reason != self.signals.reason:
            # the worker had SIGINT from here whatever signal came: the run says which did
            res.reason = self.signals.reason
            mark(res)
        self.done[task] = res
        self.after(res)
        if res.disk_full and not self.stopped:
            self.say(f"disk full: stopping after {res.run_dir.name}; free space under {task.exp_dir} and run again")
            self.stopped = True

    def orphan(self, task: RunTask) -> RunResult | None:
        """A run its worker left unfinished (killed, or stopped as it
        ended), marked interrupted; None where it never began."""
        if not (task.run_dir / "meta.json").exists():
            return None
        res = RunResult(task.run_dir, task.variant, task.repeat, status="interrupted",
                        reason=f"{self.signals.reason}; its worker was stopped before it could end the run",
                        dir_id=R.identity(task.run_dir))
        mark(res)
        return res


def run_batch(runners: list[Runner], say: Callable[[str], None], after: Callable[[RunResult], None],
              signals: Signals) -> None:
    """Every run of every runner (module docstring): each runner's results
    as its run_all would list them, after(result) as each ends; an
    interrupt ends it early, counted in signals as run_all does."""
    todo = tasks(runners)
    batch = Batch(say, after, signals)
    remote = W.cluster()
    try:
        if remote is not None:
            _remote(todo, remote, batch)
        else:
            _local(todo, W.local_jobs(len(todo)), batch)
    except KeyboardInterrupt:
        signals.count = max(signals.count, 1)       # as run_all: between runs, nothing to tear down
    for t in todo:
        if t in batch.done:
            runners[t.point].results.append(batch.done[t])
    if batch.stopped:
        for r in runners:
            r.stopped = True


def _result(fut: cf.Future, task: RunTask) -> RunResult | None:
    if fut.cancelled():
        return None
    try:
        return fut.result()
    except Exception as exc:        # its worker died (the pool is broken) or could not run it
        return RunResult(task.run_dir, task.variant, task.repeat, status="failed",
                         reason=f"its worker failed: {type(exc).__name__}: {exc}")


def _local(todo: list[RunTask], jobs: int, batch: Batch) -> None:
    channel = W.Channel()
    unfinished: list[RunTask] = []
    try:
        with W.process_pool(jobs, channel) as pool:
            futures: dict[cf.Future, RunTask] = {}
            try:        # the submits inside: the first runs begin while the last are queued
                for t in todo:
                    futures[pool.submit(run_here, t)] = t
                _gather(futures, set(futures), batch, channel)
            except KeyboardInterrupt:
                W.interrupt(pool, channel)
                unfinished = _wind_down(futures, batch, channel)
                raise       # process_pool kills the workers
    finally:
        for t in unfinished:
            batch.take(t, None)


def _gather(futures: dict[cf.Future, RunTask], pending: set[cf.Future], batch: Batch, channel: W.Channel,
            until: float | None = None) -> set[cf.Future]:
    """Each result as it comes, the workers' lines first, until none is
    pending or (until) that monotonic time; what is still pending."""
    while pending and (until is None or time.monotonic() < until):
        wait = POLL_S if until is None else max(0.0, min(POLL_S, until - time.monotonic()))
        finished, pending = cf.wait(pending, timeout=wait, return_when=cf.FIRST_COMPLETED)
        batch.lines(channel.drain())
        for fut in finished:
            batch.take(futures[fut], _result(fut, futures[fut]))
        if batch.stopped:
            for fut in pending:
                fut.cancel()        # the queued ones; those under way end
    return pending


def _wind_down(futures: dict[cf.Future, RunTask], batch: Batch, channel: W.Channel) -> list[RunTask]:
    """After the interrupt: the queued runs dropped, the ones under way
    given GRACE_S to stop (a second signal: none); those still running."""
    for fut in futures:
        fut.cancel()
    pending = {f for f, t in futures.items() if t not in batch.done and not f.cancelled()}
    if not batch.signals.hurry:
        pending = _gather(futures, pending, batch, channel, until=time.monotonic() + GRACE_S)
    return [futures[f] for f in pending]


def _remote(todo: list[RunTask], cluster: Any, batch: Batch) -> None:
    with closing(cluster.each(run_away, todo)) as each:
        for task, fut in each:
            try:
                res, files, lines = fut.result()
            except Exception:       # the worker could not run it: _result says so
                res, files, lines = _result(fut, task), {}, []
            batch.lines(lines)
            batch.take(task, land(task, res, files))
            if batch.stopped:
                return          # closing cancels the rest


def land(task: RunTask, res: RunResult, files: dict[str, bytes | None]) -> RunResult:
    """A Dask worker's run, its files written into its run directory."""
    res.run_dir = task.run_dir
    if not files:           # it had no directory (run_one could not make one)
        return res
    try:
        res.run_dir = R.make_run_dir(task.exp_dir, task.stamp, task.variant, task.repeat)
        res.dir_id = R.identity(res.run_dir)
        for rel, data in files.items():
            path = res.run_dir / rel
            if data is None:
                path.mkdir(parents=True, exist_ok=True)
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(data)
    except OSError as exc:
        res.status, res.reason = "failed", _write_failure("the run's records could not be written", exc)
        res.disk_full = res.disk_full or is_disk_full(exc)
        mark(res)
    return res
