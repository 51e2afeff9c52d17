"""The experiment runner: for each repeat and variant, build the network,
start the agents, apply the jitter schedule, supervise, gather the records,
tear down.

One run never costs more than itself: a switch or agent that dies, a deadline
that passes, a jitter action that fails all fail that run (meta.json says
why), its records stay, the network is torn down and the next run starts
(unless fail_fast).  A full disk fails the run ("disk full: ...", meta.json's
status still written where the file can hold it) and stops the batch: every
further run would fail the same way.  Ctrl-C (or SIGTERM) tears the current
run down and marks it interrupted; a second Ctrl-C skips everything but the
cleanup (experiments.signals).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from contract.events import now_ns
from contract.exits import is_disk_full
from experiments import rundir as R
from experiments.config import ExperimentSpec
from experiments.config.scale import Scaling
from experiments.fidelity import RunMonitor
from experiments.jitter.injector import Injector, netem_support, write_schedule
from experiments.jitter.schedule import NO_NETEM
from experiments.network import build_network
from experiments.plan import SIM, RunPlan, run_plan, wall_deadline_s
from experiments.signals import Signals
from experiments.sim.run import run_sim
from experiments.supervise import (
    REPO,
    START_FILE,
    START_MARGIN_S,
    RunFailed,
    RunResult,
    start_agents,
    start_figures,
    startup_s,
    supervise,
    write_start_file,
)
from hosts.job import dump_job
from topologies.network.testbed import TestbedNetwork


def _utc(t: float | None = None) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def _write_failure(what: str, exc: OSError) -> str:
    """A failed run's reason for a write that failed: "disk full: ..." when
    the file system had no room left."""
    where = f" ({exc.filename})" if exc.filename else ""
    return f"{'disk full: ' if is_disk_full(exc) else ''}{what}{where}: {exc.strerror or exc}"


def not_applied(injector: Injector) -> list[str]:
    """The jitter entries none of whose actions came due before the run
    ended (they start after it), as "<kind> on <link> at <start> s"."""
    def ids(act: dict) -> list[int]:
        return act["events"] if "events" in act else [act["event"]]
    done = {i for act in injector.actions[:injector.next_index] for i in ids(act)}
    planned = {i for act in injector.actions for i in ids(act)}
    return [f"{ev['kind']} on {ev.get('link') or ev.get('src')} at {ev['start_s']:g} s"
            for ev in (injector.events[i] for i in sorted(planned - done))]


class Runner:
    """Runs a spec's repeats x variants (one point of a sweep).
    network_factory(plan=, run_dir=, target=) replaces the real network in tests."""

    def __init__(self, spec: ExperimentSpec, exp_dir: Path, target: str = "auto", fail_fast: bool = False,
                 signals: Signals | None = None, stamp: str | None = None,
                 network_factory: Callable[..., Any] | None = None, netem_ok: bool | None = None,
                 python: str = sys.executable, say: Callable[[str], None] = print,
                 versions: dict | None = None, scaling: Scaling | None = None):
        self.spec = spec
        self.exp_dir = exp_dir
        self.target = target
        self.fail_fast = fail_fast
        self.signals = signals or Signals()
        self.stamp = stamp or R.stamp()
        self.network_factory = network_factory
        self.python = python
        self.say = say
        self.versions = versions if versions is not None else R.versions(REPO)
        self.netem_ok = netem_ok
        self.netem_why = NO_NETEM
        self.results: list[RunResult] = []
        self.stopped = False        # the batch stops here: fail_fast, a full disk
        self.scaling = scaling      # the spec is scaled so (experiments.config.scale); None: as configured

    def _network(self, plan: RunPlan, run_dir: Path):
        if self.network_factory is not None:
            return self.network_factory(plan=plan, run_dir=run_dir, target=self.target)
        return build_network(plan, target=self.target, run_dir=run_dir)

    def _netem(self) -> bool:
        """Whether netem jitter can run here (checked once, only when the
        config asks for netem); self.netem_why says why not.  The
        simulation has its delay lines whatever the kernel has."""
        if self.netem_ok is None and self.target == SIM:
            self.netem_ok = True
        if self.netem_ok is None:
            if any(e["kind"] == "netem" for e in self.spec.jitter):
                self.netem_ok, self.netem_why = netem_support(TestbedNetwork)
            else:
                self.netem_ok = False
        return self.netem_ok

    # --- all runs ---------------------------------------------------------------
    def runs(self) -> list[tuple[int, str]]:
        return [(rep, v) for rep in self.spec.repeat_numbers() for v in self.spec.variants]

    def run_all(self, before: Callable[[int, str], None] = lambda rep, variant: None,
                after: Callable[[RunResult], None] = lambda res: None) -> list[RunResult]:
        """Every run in order until the end, an interrupt or (fail_fast) a run
        that is not ok; before/after are called around each run."""
        try:
            for rep, variant in self.runs():
                if self.signals.interrupted:
                    break
                before(rep, variant)
                result = self.run_one(variant, rep)
                self.results.append(result)
                after(result)
                if self.signals.interrupted:
                    break
                if result.disk_full:
                    self.say(f"disk full: stopping after {result.run_dir.name}; free space under {self.exp_dir} "
                             "and run again")
                    self.stopped = True
                    break
                if self.fail_fast and result.status != "ok":
                    self.say(f"--fail-fast: stopping after {result.run_dir.name} ({result.status})")
                    self.stopped = True
                    break
        except KeyboardInterrupt:
            self.signals.count = max(self.signals.count, 1)     # between runs: nothing to tear down
        return self.results

    # --- one run ---------------------------------------------------------------
    def run_one(self, variant: str, repeat: int) -> RunResult:
        try:
            run_dir = R.make_run_dir(self.exp_dir, self.stamp, variant, repeat)
        except OSError as exc:
            return RunResult(self.exp_dir / f"{self.stamp}-{variant}-rep{repeat}", variant, repeat, status="failed",
                             reason=_write_failure("cannot make the run directory", exc),
                             disk_full=is_disk_full(exc))
        res = RunResult(run_dir, variant, repeat, dir_id=R.identity(run_dir))
        t_start = time.time()
        meta: dict[str, Any] = {
            "experiment": self.spec.name, "variant": variant, "repeat": repeat,
            "seed": self.spec.seed, "target_requested": self.target, "target": None,
            "status": "running", "reason": "", "versions": self.versions, **R.host_info(),
            "started": _utc(t_start), "jitter_fallbacks": [], "sweep_point": self.spec.sweep_point,
            **({"scaling": self.scaling.as_dict()} if self.scaling else {}),
        }
        try:
            R.write_json(run_dir / "meta.json", meta)      # first: on a full disk its status can still be set
            # inside the try: a job file that cannot run fails this run only
            plan = run_plan(self.spec, variant, repeat, self._netem(), self.netem_why, self.target)
            meta["jitter_fallbacks"] = list(plan.notes)
            R.write_config(run_dir, self.spec, {"variant": variant, "repeat": repeat, "seed": self.spec.seed,
                                                "target": self.target})
            R.write_json(run_dir / "meta.json", meta)
            for note in plan.notes:
                self.say(f"jitter: {note}")
            # the schedule is on disk before anything is applied
            write_schedule(run_dir / "jitter.jsonl", plan.schedule)
            self._run_network(plan, run_dir, res, meta)
            res.status = "ok"
            if res.jitter_not_applied:
                self.say(f"jitter: {run_dir.name} ended before these entries started, never applied: "
                         + ", ".join(res.jitter_not_applied))
        except KeyboardInterrupt:
            res.status, res.reason = "interrupted", self.signals.reason
        except RunFailed as exc:
            res.status, res.reason = "failed", str(exc)
        except OSError as exc:
            res.status, res.reason = "failed", _write_failure("a record could not be written", exc)
            res.disk_full = res.disk_full or is_disk_full(exc)
        except Exception as exc:
            res.status, res.reason = "failed", f"{type(exc).__name__}: {exc}"
        finally:
            if self.signals.interrupted and res.status != "interrupted":
                res.status, res.reason = "interrupted", self.signals.reason
            gone = R.lost(run_dir, res.dir_id) if res.status == "ok" else None
            if gone:        # never an ok without its records
                res.status, res.reason = "failed", gone
            self._write_meta(run_dir, res, meta, t_start)
        return res

    def _write_meta(self, run_dir: Path, res: RunResult, meta: dict, t_start: float) -> None:
        """meta.json's final state; a run whose meta.json cannot be written
        (a full disk) is failed, and its status is still set where the file
        can hold it (rundir.write_status)."""
        meta.update(status=res.status, reason=res.reason, wall_s=round(time.time() - t_start, 3),
                    ended=_utc(), agents_exit=res.agent_codes, wrong_result=res.wrong,
                    jitter_not_applied=res.jitter_not_applied)
        if res.status == "ok" and meta.get("disk_full"):
            res.status, res.reason, res.disk_full = "failed", "disk full: " + "; ".join(meta["problems"]), True
            meta.update(status=res.status, reason=res.reason)
        short = {k: meta.get(k) for k in ("experiment", "variant", "repeat", "target", "network_id", "status", "ended",
                                          "wrong_result")}
        problem = R.write_status(run_dir / "meta.json", meta, {**short, "reason": res.reason[:300]})
        if problem is None:
            return
        self.say(f"meta: {problem}")
        if res.status == "ok":
            full = problem.disk_full          # else the directory went away or stopped being writable
            why = "disk full: " if full else "a record could not be written: "
            res.status, res.reason, res.disk_full = "failed", f"{why}{problem}", full
            R.write_status(run_dir / "meta.json", meta, {**short, "status": "failed", "reason": res.reason[:300]})

    def _run_network(self, plan: RunPlan, run_dir: Path, res: RunResult, meta: dict) -> None:
        jobs_dir = run_dir / "jobs"
        jobs_dir.mkdir()
        job_paths = {spec.job: jobs_dir / f"job{spec.job}.toml" for spec in plan.jobs}
        for spec in plan.jobs:
            dump_job(spec, job_paths[spec.job])
        deadline_s = wall_deadline_s(self.spec, plan.jobs)
        meta["runner_deadline_s"] = round(deadline_s, 3)
        if self.target == SIM:
            # a deployment's messages are too large to hold: the protocol carries zeros, unchecked
            try:
                run_sim(plan, run_dir, res, meta, deadline_s, data=not (self.scaling and self.scaling.deployment),
                        progress=lambda line: self.say(f"{run_dir.name}: {line}"))
            finally:
                f = meta.get("sim") or {}
                if f:
                    self.say(f"{run_dir.name}: simulated {f['virtual_s']:.4g} s in {f['wall_s']:.1f} s: {f['frames']} "
                             f"frames ({f['frames_per_s']}/s), {f['events']} events ({f['events_per_s']}/s)")
            return
        net = self._network(plan, run_dir)
        with net:
            meta["target"] = net.target
            meta["network_id"] = getattr(net, "id", None)     # names sym-<id>-*, /run/symphony/<id>.json
            meta["network_warnings"] = list(getattr(net, "warnings", []))
            meta.update(getattr(net, "link_delays", dict)())     # link_delays_ms, link_delays_via
            R.write_json(run_dir / "meta.json", meta)
            agents_dir = run_dir / "agents"
            agents_dir.mkdir(exist_ok=True)
            injector = Injector(net, plan.schedule, run_dir / "jitter_applied.jsonl", python=self.python)
            monitor = RunMonitor()      # fidelity (experiments/fidelity.py): from every agent up to all gone
            start_file = agents_dir / START_FILE
            agents = []
            try:
                ready_s = startup_s(plan.jobs)
                agents = start_agents(net, plan.jobs, job_paths, agents_dir, self.python, start_file, ready_s)
                t_spawn = time.monotonic()
                meta["agents_spawned_ns"] = now_ns()

                def on_all_ready() -> None:
                    # the start barrier: the agents start one by one (interpreter
                    # start-up, binding, drawing inputs: a second or more for 16
                    # agents on 2 cores) and each then waits, ready, for the start
                    # file; every agent starts iteration 0 at the time it holds,
                    # which is t0 of the jitter clock and of the analysis
                    ready_mono, ready_ns = time.monotonic(), now_ns()
                    at_ns = ready_ns + round(START_MARGIN_S * 1e9)
                    write_start_file(start_file, at_ns)
                    injector.start(ready_mono + (at_ns - ready_ns) / 1e9)
                    meta.update(t0_ns=at_ns, agents_ready_ns=ready_ns, start_margin_s=START_MARGIN_S,
                                agents_startup_s=round(ready_mono - t_spawn, 3))
                    R.write_json(run_dir / "meta.json", meta)
                    monitor.start(net, agents)

                supervise(net, agents, injector, t_spawn, deadline_s, res, on_all_ready, ready_s)
                res.jitter_not_applied = not_applied(injector)
            finally:
                monitor.stop()
                if "t0_ns" in meta:
                    meta["start"] = start_figures(agents, meta["t0_ns"])
                    if meta["start"].get("headroom_min_ms", 0.0) < 0:
                        self.say(f"start: an agent of {run_dir.name} saw the start file "
                                 f"{-meta['start']['headroom_min_ms']:.1f} ms after the start time")
                for problem in injector.stop(restore=not self.signals.interrupted):
                    self.say(f"jitter cleanup: {problem}")
                if not self.signals.hurry:
                    self._dump_switches(net, run_dir, meta)
                    meta["fidelity"] = monitor.assess(run_dir, meta)
                    res.fidelity = meta["fidelity"]["verdict"]

    def _dump_switches(self, net, run_dir: Path, meta: dict) -> None:
        hung = net.hung_switches()
        if hung:        # a stopped switch answers nothing: each read would wait for the client's timeout
            meta.setdefault("problems", []).append("switch dump skipped: " + ", ".join(f"{n} hung" for n, _ in hung))
            return
        try:
            net.dump_switches(run_dir / "switches")
        except Exception as exc:
            meta.setdefault("problems", []).append(f"switch dump: {type(exc).__name__}: {exc}")
            # each dump is written whole or not at all (contract.files): none is left cut short
            meta["disk_full"] = meta.get("disk_full") or is_disk_full(exc)
        # the twins' port counters (rx, tx, queue drops, send errors): where
        # packets were lost, which the P4 counters cannot say
        ports = {}
        for name, client in sorted(getattr(net, "clients", {}).items()):
            stats = getattr(client, "stats", None)
            if callable(stats):
                try:
                    ports[name] = stats()
                except Exception as exc:
                    ports[name] = {"error": f"{type(exc).__name__}: {exc}"}
        if ports:
            meta["switch_ports"] = ports
