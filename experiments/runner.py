"""The experiment runner: for each repeat and variant, build the network,
start the agents, apply the jitter schedule, supervise, gather the records,
tear down; then a summary.

One run never costs more than itself: a switch or agent that dies, a deadline
that passes, a jitter action that fails all fail that run (meta.json says
why), its records stay, the network is torn down and the next run starts
(unless --fail-fast).  Ctrl-C (or SIGTERM) tears the current run down, marks
it interrupted and writes the summary of the runs that finished; a second
Ctrl-C skips everything but the cleanup.

Variants differ in one thing only: the Symphony flows are installed with
enabled=1 (symphony) or enabled=0 (baseline).  ``run_plan`` builds what each
run gets (network arguments, job files, jitter) in one place, so a test can
check that the two variants get the same DCQCN parameters, ECN thresholds and
jitter.
"""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from statistics import mean, stdev
from typing import Any

from contract.events import now_ns
from experiments import rundir as R
from experiments.jitter import schedule as J
from experiments.jitter.injector import Injector, InjectorError, netem_support, write_schedule
from topologies.spec.placement import place_jobs
from topologies.spec.topo import build

REPO = Path(__file__).resolve().parents[1]
POLL_S = 0.1                  # supervision period: deaths are noticed within ~0.1-0.3 s
AGENT_GRACE_S = 2.0           # after one agent failed, how long the others may still finish
STARTUP_S = 30.0              # every agent must log its first event within this
RUNNER_SLACK_S = 20.0         # runner's wall deadline = agents' run deadline + this

EXIT_OK, EXIT_WRONG, EXIT_USAGE, EXIT_FAILED, EXIT_INTERRUPTED = 0, 1, 2, 3, 130


# --------------------------------------------------------------------------
# what a run gets (pure)


@dataclass
class RunPlan:
    variant: str
    repeat: int
    topology: dict
    jobs_cfg: list[dict]              # for TestbedNetwork (placement keys and hosts)
    job_files: list[dict]             # job-file dicts (docs/hosts.md), one per job
    symphony: dict                    # with enabled
    ecn: dict
    schedule: list[dict]              # jitter events as applied here (fallbacks taken)
    notes: list[str] = field(default_factory=list)


def job_file_dicts(cfg: dict, topo, straggles: dict[int, list[dict]]) -> list[dict]:
    """The job files of a run: placement from the topology builder, DCQCN from
    [dcqcn] with the host link rate as line rate, the [[straggle]] entries
    of the schedule."""
    placed = place_jobs(topo, [{k: j[k] for k in ("job", "hosts", "data_port")} for j in cfg["jobs"]])
    out = []
    for job, spec in zip(cfg["jobs"], placed):
        d = {"job": job["job"], "data_port": job["data_port"], "message_bytes": job["message_bytes"],
             "iterations": job["iterations"], "transport": job["transport"], "seed": cfg["seed"],
             "ranks": spec["ranks"]}
        dcqcn = dict(cfg["dcqcn"])
        dcqcn.setdefault("line_rate_mbit", cfg["topology"]["host_rate_mbit"])
        d["dcqcn"] = dcqcn
        for key in ("udp", "deadlines"):
            if key in job:
                d[key] = dict(job[key])
        if straggles.get(job["job"]):
            d["straggle"] = [dict(s) for s in straggles[job["job"]]]
        out.append(d)
    return out


def run_plan(cfg: dict, variant: str, repeat: int, netem_ok: bool,
             netem_why: str = "no sch_netem on this kernel") -> RunPlan:
    topo = build(cfg["topology"])
    events = J.make_schedule(cfg, topo, repeat)
    events, notes = J.apply_fallbacks(events, netem_ok, netem_why)
    return RunPlan(
        variant=variant, repeat=repeat, topology=dict(cfg["topology"]),
        # transport too: the switches install a job's flows in its mode (step
        # tag in the UDP source port or, for TCP, the DSCP)
        jobs_cfg=[{k: j[k] for k in ("job", "hosts", "data_port", "transport")} for j in cfg["jobs"]],
        job_files=job_file_dicts(cfg, topo, J.straggles(events)),
        symphony={**cfg["symphony"], "enabled": variant == "symphony"},
        ecn=dict(cfg["ecn"]), schedule=events, notes=notes)


def wall_deadline_s(cfg: dict, job_specs: list) -> float:
    """The runner's own deadline for the agents' phase of a run: the config's,
    or the longest agent run deadline plus slack."""
    if cfg["runner"]["run_deadline_s"]:
        return cfg["runner"]["run_deadline_s"]
    from hosts.job import derived_deadlines  # noqa: PLC0415
    return max(derived_deadlines(s)[1] for s in job_specs) + RUNNER_SLACK_S


# --------------------------------------------------------------------------
# signals


class Signals:
    """First SIGINT/SIGTERM: KeyboardInterrupt in the main thread (the run in
    progress unwinds through its teardown).  Later ones: only noted, so the
    cleanup in progress finishes; the runner then exits at once."""

    def __init__(self):
        self.count = 0
        self.old: dict[int, Any] = {}

    def install(self) -> None:
        for sig in (signal.SIGINT, signal.SIGTERM):
            self.old[sig] = signal.signal(sig, self._handle)

    def restore(self) -> None:
        for sig, handler in self.old.items():
            signal.signal(sig, handler)

    def _handle(self, signum, frame) -> None:
        self.count += 1
        if self.count == 1:
            raise KeyboardInterrupt
        print("\nsecond interrupt: cleaning up and exiting", file=sys.stderr, flush=True)

    @property
    def interrupted(self) -> bool:
        return self.count > 0

    @property
    def hurry(self) -> bool:
        return self.count > 1


# --------------------------------------------------------------------------
# one run


@dataclass
class RunResult:
    run_dir: Path
    variant: str
    repeat: int
    status: str = "running"           # ok | failed | interrupted
    reason: str = ""
    wrong: bool = False               # an AllReduce result was wrong
    agent_codes: dict[str, int | None] = field(default_factory=dict)
    cct_s: list[float] = field(default_factory=list)


class RunFailed(Exception):
    pass


def _agent_error_reason(log_path: Path) -> str | None:
    """The reason of the last `error` event an agent wrote, if any."""
    import json  # noqa: PLC0415
    try:
        lines = log_path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    for line in reversed(lines):
        try:
            ev = json.loads(line)
        except ValueError:
            continue
        if ev.get("kind") == "error":
            return str(ev.get("reason"))
    return None


def _has_events(path: Path) -> bool:
    try:
        return path.stat().st_size > 0
    except OSError:
        return False


def _tail(path: Path, n: int = 1) -> str:
    try:
        lines = [x for x in path.read_text(encoding="utf-8", errors="replace").splitlines() if x.strip()]
    except OSError:
        return ""
    return " | ".join(lines[-n:])


@dataclass
class Agent:
    job: int
    rank: int
    host: str
    proc: subprocess.Popen
    jsonl: Path
    log: Path

    @property
    def label(self) -> str:
        return f"agent job {self.job} rank {self.rank} on {self.host}"


class Runner:
    """Runs a resolved config's repeats x variants (one point of a sweep)."""

    def __init__(self, cfg: dict, exp_dir: Path, target: str = "auto", fail_fast: bool = False,
                 signals: Signals | None = None, stamp: str | None = None,
                 network_factory: Callable[..., Any] | None = None, netem_ok: bool | None = None,
                 python: str = sys.executable, say: Callable[[str], None] = print,
                 versions: dict | None = None):
        self.cfg = cfg
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
        self.netem_why = "no sch_netem on this kernel"
        self.results: list[RunResult] = []

    # --- the network ----------------------------------------------------------
    def _network(self, plan: RunPlan, run_dir: Path):
        if self.network_factory is not None:
            return self.network_factory(plan=plan, run_dir=run_dir, target=self.target)
        from topologies.network.testbed import TestbedNetwork  # noqa: PLC0415
        return TestbedNetwork(plan.topology, plan.jobs_cfg, target=self.target, run_dir=run_dir,
                              symphony=plan.symphony, ecn=plan.ecn)

    def _netem(self) -> bool:
        """Whether netem jitter can run here (checked once, only when the
        config asks for netem); self.netem_why says why not."""
        if self.netem_ok is None:
            needs = any(e["kind"] == "netem" for e in self.cfg["jitter"])
            if not needs:
                self.netem_ok = False
            else:
                from topologies.network import testbed as network  # noqa: PLC0415
                self.netem_ok, self.netem_why = netem_support(network.TestbedNetwork,
                                                              probe=network.netem_available)
        return self.netem_ok

    # --- all runs ---------------------------------------------------------------
    def runs(self) -> list[tuple[int, str]]:
        return [(rep, v) for rep in range(1, self.cfg["repeats"] + 1) for v in self.cfg["variants"]]

    def run_all(self, progress=None) -> list[RunResult]:
        for rep, variant in self.runs():
            if self.signals.interrupted:
                break
            result = self.run_one(variant, rep)
            self.results.append(result)
            if progress is not None:
                progress.update(1)
            if self.signals.interrupted:
                break
            if self.fail_fast and result.status != "ok":
                self.say(f"--fail-fast: stopping after {result.run_dir.name} ({result.status})")
                break
        return self.results

    # --- one run ---------------------------------------------------------------
    def run_one(self, variant: str, repeat: int) -> RunResult:
        plan = run_plan(self.cfg, variant, repeat, self._netem(), self.netem_why)
        run_dir = R.make_run_dir(self.exp_dir, self.stamp, variant, repeat)
        res = RunResult(run_dir, variant, repeat)
        t_start = time.time()
        meta: dict[str, Any] = {
            "experiment": self.cfg["name"], "variant": variant, "repeat": repeat,
            "seed": self.cfg["seed"], "target_requested": self.target, "target": None,
            "status": "running", "reason": "", "versions": self.versions, **R.host_info(),
            "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t_start)),
            "jitter_fallbacks": plan.notes, "sweep_point": self.cfg.get("sweep_point"),
        }
        try:
            R.write_config(run_dir, self.cfg, {"variant": variant, "repeat": repeat, "seed": self.cfg["seed"],
                                               "target": self.target})
            R.write_json(run_dir / "meta.json", meta)
            for note in plan.notes:
                self.say(f"jitter: {note}")
            # the schedule is on disk before anything is applied
            write_schedule(run_dir / "jitter.jsonl", plan.schedule)
            self._run_network(plan, run_dir, res, meta)
            res.status = "ok"
        except KeyboardInterrupt:
            res.status, res.reason = "interrupted", "interrupted by the user (SIGINT/SIGTERM)"
        except RunFailed as exc:
            res.status, res.reason = "failed", str(exc)
        except Exception as exc:
            res.status, res.reason = "failed", f"{type(exc).__name__}: {exc}"
        finally:
            if self.signals.interrupted and res.status != "interrupted":
                res.status, res.reason = "interrupted", "interrupted by the user (SIGINT/SIGTERM)"
            meta.update(status=res.status, reason=res.reason, wall_s=round(time.time() - t_start, 3),
                        ended=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                        agents_exit=res.agent_codes, wrong_result=res.wrong)
            R.write_json(run_dir / "meta.json", meta)
        return res

    def _run_network(self, plan: RunPlan, run_dir: Path, res: RunResult, meta: dict) -> None:
        from hosts.job import dump_job, parse_job  # noqa: PLC0415
        specs = [parse_job(d) for d in plan.job_files]       # JobError: a bad job never reaches a network
        jobs_dir = run_dir / "jobs"
        jobs_dir.mkdir()
        job_paths = {}
        for spec in specs:
            job_paths[spec.job] = jobs_dir / f"job{spec.job}.toml"
            dump_job(spec, job_paths[spec.job])
        deadline_s = wall_deadline_s(self.cfg, specs)
        meta["runner_deadline_s"] = round(deadline_s, 3)
        net = self._network(plan, run_dir)
        injector = None
        with net:
            meta["target"] = net.target
            meta["network_id"] = getattr(net, "id", None)     # names sym-<id>-*, /run/symphony/<id>.json
            meta["network_warnings"] = list(getattr(net, "warnings", []))
            R.write_json(run_dir / "meta.json", meta)
            agents_dir = run_dir / "agents"
            agents_dir.mkdir(exist_ok=True)
            injector = Injector(net, plan.schedule, run_dir / "jitter_applied.jsonl", python=self.python)
            try:
                agents = self._start_agents(net, specs, job_paths, agents_dir)
                t_spawn = time.monotonic()
                meta["agents_spawned_ns"] = now_ns()

                def on_all_started() -> None:
                    # the jitter clock starts when every agent is up (has logged
                    # its first event), not when the processes were spawned:
                    # interpreter start-up takes a second or more for 8 agents
                    # on 2 cores, and would eat the schedule's first second
                    meta["t0_ns"] = now_ns()
                    meta["agents_startup_s"] = round(time.monotonic() - t_spawn, 3)
                    R.write_json(run_dir / "meta.json", meta)
                    injector.start()

                self._supervise(net, agents, injector, t_spawn, deadline_s, res, on_all_started)
            finally:
                for problem in injector.stop(restore=not self.signals.interrupted):
                    self.say(f"jitter cleanup: {problem}")
                if not self.signals.hurry:
                    self._dump_switches(net, run_dir, meta)

    def _dump_switches(self, net, run_dir: Path, meta: dict) -> None:
        try:
            net.dump_switches(run_dir / "switches")
        except Exception as exc:
            meta.setdefault("problems", []).append(f"switch dump: {type(exc).__name__}: {exc}")
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

    def _start_agents(self, net, specs, job_paths, agents_dir: Path) -> list[Agent]:
        agents = []
        multi = len(specs) > 1
        for spec in specs:
            log_dir = agents_dir / f"job{spec.job}" if multi else agents_dir
            log_dir.mkdir(exist_ok=True)
            for r in spec.ranks:
                out = log_dir / f"rank{r.rank}.log"
                with open(out, "ab") as fh:
                    proc = net.popen(r.host, [self.python, "-m", "hosts.agent", "--job", str(job_paths[spec.job]),
                                              "--rank", str(r.rank), "--log-dir", str(log_dir)],
                                     stdout=fh, stderr=subprocess.STDOUT, cwd=str(REPO))
                agents.append(Agent(spec.job, r.rank, r.host, proc, log_dir / f"rank{r.rank}.jsonl", out))
        return agents

    def _supervise(self, net, agents: list[Agent], injector: Injector, t0: float, deadline_s: float,
                   res: RunResult, on_all_started: Callable[[], None] = lambda: None) -> None:
        """Poll until every agent exited (or one failed and the others had a
        grace period): switches, agents, deadlines, and the jitter timeline.
        t: seconds since the agents were spawned."""
        first_failure: str | None = None
        failed_at: float | None = None
        started = False
        while True:
            now = time.monotonic() - t0
            if not started and all(_has_events(a.jsonl) for a in agents):
                started = True
                on_all_started()
            if started:
                try:
                    injector.tick()
                except InjectorError as exc:
                    raise RunFailed(str(exc)) from None
            elif now > STARTUP_S:
                late = [a.label for a in agents if not _has_events(a.jsonl)]
                raise RunFailed(f"{late[0]} logged nothing within {STARTUP_S:.0f}s of its start"
                                + (f" (and {len(late) - 1} more)" if len(late) > 1 else ""))
            dead = net.dead_switches()
            if dead:
                name, code = dead[0]
                raise RunFailed(f"switch {name} exited with code {code} at t={now:.1f}s")
            running = 0
            for a in agents:
                code = a.proc.poll()
                res.agent_codes[f"{a.job}/{a.rank}"] = code
                if code is None:
                    running += 1
                elif code != 0 and first_failure is None:
                    first_failure = self._agent_failure(a, code, now)
                    failed_at = now
                    if code == 1:
                        res.wrong = True
            if running == 0:
                break
            if first_failure is not None and now - failed_at > AGENT_GRACE_S:
                break
            if now > deadline_s:
                raise RunFailed(f"runner deadline of {deadline_s:.0f}s passed with {running} agent(s) "
                                f"still running")
            due = injector.next_due() if started else None
            wait = POLL_S if due is None else min(POLL_S, max(0.0, due - injector.elapsed()))
            time.sleep(max(wait, 0.001))
        for a in agents:
            if a.proc.returncode == 1:
                res.wrong = True
        if first_failure is not None:
            raise RunFailed(first_failure)

    def _agent_failure(self, a: Agent, code: int, now: float) -> str:
        what = {1: "a result was wrong", 2: "bad job file or arguments", 3: "a deadline passed"}.get(code)
        msg = f"{a.label} exited with code {code} at t={now:.1f}s"
        if what:
            msg += f" ({what})"
        reason = _agent_error_reason(a.jsonl) or (_tail(a.log) if code == 2 else None)
        if reason:
            msg += f": {reason}"
        return msg


# --------------------------------------------------------------------------
# summaries


def analyse(results: list[RunResult]) -> list[dict]:
    """analysis' per-run metrics (its definitions of CCT and misalignment)."""
    import warnings  # noqa: PLC0415

    from analysis.records import load_run  # noqa: PLC0415
    from analysis.report import analyse_run  # noqa: PLC0415
    out = []
    for r in results:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out.append(analyse_run(load_run(r.run_dir)))
    return out


def _stats(xs: list[float]) -> tuple[float | None, float | None]:
    xs = [x for x in xs if x is not None and math.isfinite(x)]
    if not xs:
        return None, None
    return mean(xs), (stdev(xs) if len(xs) > 1 else 0.0)


def summary(cfg: dict, results: list[RunResult], analysed: list[dict], interrupted: bool) -> dict:
    """summary.json: analysis' per-variant figures (pooled per-iteration CCT,
    change against baseline) plus the spread of the per-run means."""
    from analysis.report import summarise  # noqa: PLC0415
    s = summarise(analysed) if analysed else {"variants": {}}
    for v, row in s["variants"].items():
        means = [a["summary"]["cct_mean_s"] for a, r in zip(analysed, results)
                 if r.variant == v and r.status == "ok"]
        row["run_cct_mean_s"], row["run_cct_std_s"] = _stats(means)
        row["wrong_results"] = sorted(set(row.get("wrong_results", []))
                                      | {r.run_dir.name for r in results if r.variant == v and r.wrong})
    return {
        "experiment": cfg["name"],
        "sweep_point": cfg.get("sweep_point"),
        "interrupted": interrupted,
        "runs": [{"run": r.run_dir.name, "variant": r.variant, "repeat": r.repeat, "status": r.status,
                  "reason": r.reason, "wrong_result": r.wrong,
                  "cct_mean_s": a["summary"]["cct_mean_s"] if a else None,
                  "misalignment_mean": a["summary"]["misalignment_mean"] if a else None}
                 for r, a in zip(results, analysed)],
        "cct_change_pct": s["variants"].get("symphony", {}).get("cct_change_pct"),
        **s,
    }


def _f(x, fmt="{:.3f}") -> str:
    return "-" if x is None else fmt.format(x)


def table(summ: dict) -> str:
    rows = [("variant", "runs ok", "CCT mean s", "CCT std s", "run-mean std s", "change %", "misalign",
             "sym marks/run")]
    for v, row in summ["variants"].items():
        rows.append((v, f"{row['runs_ok']}/{row['runs']}", _f(row["cct_mean_s"]), _f(row["cct_std_s"]),
                     _f(row.get("run_cct_std_s")), _f(row.get("cct_change_pct"), "{:+.1f}"),
                     _f(row.get("misalignment_mean"), "{:.2f}"), _f(row.get("sym_marks_per_run"), "{:.0f}")))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in rows)


def exit_code(results: list[RunResult], interrupted: bool) -> int:
    if any(r.wrong for r in results):
        return EXIT_WRONG
    if interrupted:
        return EXIT_INTERRUPTED
    if any(r.status != "ok" for r in results):
        return EXIT_FAILED
    return EXIT_OK


def os_is_root() -> bool:
    return os.geteuid() == 0
