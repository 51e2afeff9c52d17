"""The agents of one run and the poll loop that watches them: switches
(dead, or hung: still running but stopped or not answering), agents,
deadlines and the jitter timeline, until every agent exited (or one failed
and the others had a grace period).  A failure raises ``RunFailed`` with a
one-line reason that names who failed, when, and what it logged.

The start barrier: every agent is started with ``--start-file``; once each
has logged ``ready`` (set up, waiting), the runner writes the start file
(``write_start_file``) with a start time START_MARGIN_S ahead, and every
agent starts iteration 0 then; ``start_figures`` reads back how well that
went."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from contract import exits
from contract.files import write_atomic
from experiments.jitter.injector import Injector, InjectorError
from hosts.agent import START_WAIT_S
from hosts.job import JobSpec, bytes_drawn_before_ready
from topologies.network import shield

REPO = Path(__file__).resolve().parents[1]
POLL_S = 0.1                  # supervision period: deaths are noticed within ~0.1-0.3 s
READY_POLL_S = 0.01           # the same until every agent is ready: each waits for the start file
AGENT_GRACE_S = 2.0           # after one agent failed, how long the others may still finish
STARTUP_S = 30.0              # every agent must log `ready` within this (they wait hosts.agent.START_WAIT_S)
# ... plus the time to draw their inputs (hosts.job.bytes_drawn_before_ready):
# 190 MB/s a core measured on 2 cores, counted at a quarter of both
DRAW_BYTES_PER_S = 100e6
# how far ahead of the moment every agent is ready the runner sets the start:
# every agent must have seen the start file by then (it looks every
# hosts.agent.START_POLL_S).  Measured at 16 ranks on 2 cores (the last agent
# to see the file, after it was written): (docs: experiments/README.md "Start")
START_MARGIN_S = 0.05
START_FILE = "start"          # in the run's agents/ directory
# what an agent's exit code says (hosts.agent; contract.exits)
EXIT_MEANINGS = {exits.WRONG: "a result was wrong", exits.USAGE: "bad job file or arguments",
                 exits.FAILED: "a deadline passed or a socket failed",
                 exits.DISK_FULL: "disk full: it could not write its records"}


class RunFailed(Exception):
    pass


@dataclass
class RunResult:
    run_dir: Path
    variant: str
    repeat: int
    status: str = "running"           # ok | failed | interrupted
    reason: str = ""
    wrong: bool = False               # an AllReduce result was wrong
    disk_full: bool = False           # a record could not be written: no space left
    fidelity: str | None = None       # ok | degraded (experiments/fidelity.py); None: not assessed
    agent_codes: dict[str, int | None] = field(default_factory=dict)
    jitter_not_applied: list[str] = field(default_factory=list)    # entries that start after the run ended
    dir_id: tuple[int, int] | None = None     # the run directory as made (rundir.identity): gone if it changes


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


def _lines(path: Path) -> list[str]:
    try:
        return path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []


def agent_error_reason(log_path: Path) -> str | None:
    """The reason of the last `error` event an agent wrote, if any."""
    for line in reversed(_lines(log_path)):
        try:
            ev = json.loads(line)
        except ValueError:
            continue
        if ev.get("kind") == "error":
            return str(ev.get("reason"))
    return None


def has_events(path: Path) -> bool:
    try:
        return path.stat().st_size > 0
    except OSError:
        return False


def tail(path: Path, n: int = 1) -> str:
    return " | ".join([x for x in _lines(path) if x.strip()][-n:])


def _events(path: Path):
    """An agent's events in order, as far as they parse; stops at the first
    line that does not (one being written)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                try:
                    yield json.loads(line)
                except ValueError:
                    return
    except OSError:
        return


def is_ready(path: Path) -> bool:
    """Whether an agent has logged `ready` (its first event)."""
    return has_events(path) and any(ev.get("kind") == "ready" for ev in _events(path))


def write_start_file(path: Path, at_ns: int) -> None:
    """The start file, atomically (contract.files), so an agent reads the
    whole start time or nothing."""
    write_atomic(path, f"{at_ns}\n")


def start_figures(agents: list[Agent], at_ns: int) -> dict:
    """How the start went, from the agents' records: per agent the time it
    saw the start file before the start (its headroom: negative when it saw
    it late), how late it woke, and its first step_start against the start.
    meta.json's ``start``."""
    seen, woke, first = [], [], []
    for a in agents:
        for ev in _events(a.jsonl):
            if ev.get("kind") == "iter_start" and ev.get("iter") == 0 and isinstance(ev.get("start"), dict):
                info = ev["start"]
                seen.append((at_ns - info.get("seen_ns", at_ns)) / 1e6)
                woke.append((info.get("woke_ns", at_ns) - at_ns) / 1e6)
            if ev.get("kind") == "step_start" and ev.get("step") == 0:
                first.append((ev["t"] - at_ns) / 1e6)
                break
    out: dict = {"agents": len(agents), "started": len(first)}
    if seen:
        out.update(headroom_min_ms=round(min(seen), 3), woke_late_max_ms=round(max(woke), 3))
    if first:
        out.update(first_step_ms=[round(min(first), 3), round(max(first), 3)],
                   first_step_spread_ms=round(max(first) - min(first), 3))
    return out


def startup_s(jobs: tuple[JobSpec, ...]) -> float:
    """How long the agents of a run get to log `ready`: STARTUP_S and the
    time to draw every agent's inputs, which grows with the scale (the
    demo's large job at K = 50: 240 MB an agent)."""
    return STARTUP_S + sum(s.n_ranks * bytes_drawn_before_ready(s) for s in jobs) / DRAW_BYTES_PER_S


def start_agents(net, jobs: tuple[JobSpec, ...], job_paths: dict[int, Path], agents_dir: Path,
                 python: str, start_file: Path | None = None, ready_s: float = STARTUP_S) -> list[Agent]:
    """One agent per rank (hosts.agent), stdout and stderr to rank<r>.log;
    agents/job<id>/ per job when there are several.  start_file: every
    agent waits for it once ready (hosts.agent --start-file), as long past
    ready_s (the runner's limit, startup_s) as START_WAIT_S is past STARTUP_S."""
    agents = []
    multi = len(jobs) > 1
    wait_s = ready_s + START_WAIT_S - STARTUP_S
    for spec in jobs:
        log_dir = agents_dir / f"job{spec.job}" if multi else agents_dir
        log_dir.mkdir(exist_ok=True)
        for r in spec.ranks:
            out = log_dir / f"rank{r.rank}.log"
            with open(out, "ab") as fh:
                barrier = ["--start-file", str(start_file), "--start-timeout", f"{wait_s:g}"] \
                    if start_file is not None else []
                proc = net.popen(r.host, [python, "-m", "hosts.agent", "--job", str(job_paths[spec.job]),
                                          "--rank", str(r.rank), "--log-dir", str(log_dir), *barrier],
                                 stdout=fh, stderr=subprocess.STDOUT, cwd=str(REPO))
            agents.append(Agent(spec.job, r.rank, r.host, proc, log_dir / f"rank{r.rank}.jsonl", out))
            if len(agents) == 1:
                shield.phase("agents")      # (a test signals here: one agent started, the others not yet)
    return agents


def agent_failure(a: Agent, code: int, now: float) -> str:
    msg = f"{a.label} exited with code {code} at t={now:.1f}s"
    if code in EXIT_MEANINGS:
        msg += f" ({EXIT_MEANINGS[code]})"
    reason = agent_error_reason(a.jsonl) or (tail(a.log) if code in (exits.USAGE, exits.DISK_FULL) else None)
    if reason:
        msg += f": {reason}"
    return msg


def switch_failure(net, now: float) -> str | None:
    """A dead or hung switch (TestbedNetwork.dead_switches, hung_switches),
    as a run's reason; None while every switch serves."""
    dead = net.dead_switches()
    if dead:
        name, code = dead[0]
        return f"switch {name} exited with code {code} at t={now:.1f}s"
    hung = net.hung_switches()
    if hung:
        name, why = hung[0]
        return f"switch {name} hung at t={now:.1f}s: {why}"
    return None


def supervise(net, agents: list[Agent], injector: Injector, t0: float, deadline_s: float, res: RunResult,
              on_all_ready: Callable[[], None] = lambda: None, ready_s: float = STARTUP_S) -> None:
    """Poll until every agent exited (or one failed and the others had a
    grace period).  t0: time.monotonic() when the agents were spawned;
    ready_s: how long they get to log `ready` (startup_s).  on_all_ready is
    called once every agent has logged `ready`: it writes the start file and
    starts the injector's clock at the start time."""
    first_failure: str | None = None
    failed_at = 0.0
    started = False
    ready: set[int] = set()
    while True:
        now = time.monotonic() - t0
        if not started:
            ready.update(i for i, a in enumerate(agents) if i not in ready and is_ready(a.jsonl))
            if len(ready) == len(agents):
                started = True
                on_all_ready()
                shield.phase("running")
        if started:
            try:
                injector.tick()
            except InjectorError as exc:
                # a jitter action fails on a switch that hangs: the switch is the reason
                raise RunFailed(switch_failure(net, now) or str(exc)) from None
        elif now > ready_s:
            late = [a.label for i, a in enumerate(agents) if i not in ready]
            raise RunFailed(f"{late[0]} was not ready (set up, logged `ready`) within {ready_s:.0f}s of its start"
                            + (f" (and {len(late) - 1} more)" if len(late) > 1 else ""))
        failure = switch_failure(net, now)
        if failure:
            raise RunFailed(failure)
        running = 0
        for a in agents:
            code = a.proc.poll()
            res.agent_codes[f"{a.job}/{a.rank}"] = code
            if code is None:
                running += 1
            elif code != 0 and first_failure is None:
                first_failure = agent_failure(a, code, now)
                failed_at = now
                res.wrong = res.wrong or code == exits.WRONG
                res.disk_full = res.disk_full or code == exits.DISK_FULL
        if running == 0:
            break
        if first_failure is not None and now - failed_at > AGENT_GRACE_S:
            break
        if now > deadline_s:
            raise RunFailed(f"runner deadline of {deadline_s:.0f}s passed with {running} agent(s) still running")
        due = injector.next_due() if started else None
        poll = POLL_S if started else READY_POLL_S
        wait = poll if due is None else min(poll, max(0.0, due - injector.elapsed()))
        time.sleep(max(wait, 0.001))
    shield.phase("records")        # every agent gone: the runner reads back, dumps the switches, tears down
    res.wrong = res.wrong or any(a.proc.returncode == exits.WRONG for a in agents)
    res.disk_full = res.disk_full or any(a.proc.returncode == exits.DISK_FULL for a in agents)
    if first_failure is not None:
        raise RunFailed(first_failure)
