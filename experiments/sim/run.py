"""One run on the simulation target: the plan's network (network.py), one
SimRank per rank (ranks.py), the jitter schedule performed by the
emulation's own Injector on the virtual clock, run until every agent has
exited; then the records an emulated run leaves (agents' jsonl, switch
dumps, jitter_applied.jsonl, meta.json's target, t0, switch_ports and
fidelity) and the simulation's own figures (events and packets, per second
of wall time).  The runner (experiments/runner.py) calls ``run_sim`` where it
would build a network.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from contract import exits
from experiments.jitter.injector import Injector
from experiments.plan import RunPlan
from experiments.sim.compiled import DEFAULT_ENGINE, make_engine, network_class
from experiments.sim.ranks import EPOCH_NS, SimRank, VirtualNs
from experiments.supervise import AGENT_GRACE_S, EXIT_MEANINGS, RunFailed, RunResult, agent_error_reason

PROGRESS_S = 10.0          # a long run says how far it got this often (wall seconds)
LOOK_EVENTS = 5000         # and looks at the wall clock about this many events apart

# meta.json's fidelity of a simulated run: nothing bends a virtual clock
FIDELITY = {"verdict": "ok", "reasons": [], "checks": [],
            "note": "simulated on a virtual clock: no timer, queue or CPU ran late"}


def refusal(spec) -> str | None:
    """Why the simulation cannot run a config (an ExperimentSpec), in one
    line; None when it can.  It runs the agents' own UDP transport: a TCP
    job's transport is the kernel's."""
    for i, job in enumerate(spec.jobs):
        if job.transport != "udp":
            return (f"--target sim: jobs[{i}] (job {job.job}) runs over TCP, which is the kernel's stack; "
                    "the simulation runs the agents' own UDP transport only")
    return None


def agents_dir_for(agents_dir: Path, job: int, multi: bool) -> Path:
    """Where a job's agents write (as experiments.supervise.start_agents lays it out)."""
    out = agents_dir / f"job{job}" if multi else agents_dir
    out.mkdir(parents=True, exist_ok=True)
    return out


class SimRun:
    """The parts of one simulated run, built and ready to go."""

    def __init__(self, plan: RunPlan, run_dir: Path, data: bool = True, engine: str = DEFAULT_ENGINE):
        tcp = [s.job for s in plan.jobs if s.transport != "udp"]
        if tcp:
            raise ValueError(f"job {tcp[0]} runs over TCP, the kernel's: the simulation runs UDP jobs only")
        self.engine = make_engine(engine)
        self.net = network_class(engine)(self.engine, plan)
        self.failed: list[SimRank] = []
        self.ranks: list[SimRank] = []
        multi = len(plan.jobs) > 1
        for spec in plan.jobs:
            log_dir = agents_dir_for(run_dir / "agents", spec.job, multi)
            for r in range(spec.n_ranks):
                self.ranks.append(SimRank(self.engine, self.net, spec, r, log_dir, data, self._exited))
        self.injector = Injector(self.net, list(plan.schedule), run_dir / "jitter_applied.jsonl",
                                 clock=self.engine.clock, wall_ns=VirtualNs(self.engine), cross=self.net.cross())
        self.running = len(self.ranks)

    def _exited(self, rank: SimRank) -> None:
        """As the runner's supervision: once every agent has exited the run
        is over; after the first failure the others get AGENT_GRACE_S."""
        self.running -= 1
        if rank.code != exits.OK:
            if not self.failed:
                self.engine.at(self.engine.now + AGENT_GRACE_S, self.engine.stop)
            self.failed.append(rank)
        if not self.running:
            self.engine.stop()

    def run(self, deadline_s: float, progress: Callable[[str], None] | None = None) -> None:
        """Everything until the agents are done, one failed and the others
        had their grace, or the runner's deadline (virtual seconds).
        progress: called with a line every PROGRESS_S of wall time."""
        engine = self.engine
        self.injector.start(0.0)
        for t in sorted({a["t"] for a in self.injector.actions}):
            engine.at(t, self.injector.tick)
        for r in self.ranks:
            r.start(0.0)
        if progress is not None:
            self._watch(progress, deadline_s)
        engine.run(until=deadline_s)

    def _watch(self, progress: Callable[[str], None], deadline_s: float) -> None:
        """Look at the wall clock every LOOK_EVENTS events' worth of virtual
        time (a guess refined as it goes) and report every PROGRESS_S."""
        engine = self.engine
        wall0 = last = time.perf_counter()
        step = [max(deadline_s * 1e-6, 1e-6)]

        def look(events_then: int) -> None:
            nonlocal last
            now = time.perf_counter()
            if now - last >= PROGRESS_S:
                last = now
                progress(f"simulated {engine.now:.4f} s in {now - wall0:.0f} s: {self.net.frames_sent()} frames, "
                         f"{self.running} agent(s) running")
            # aim at about LOOK_EVENTS events between two looks
            done = max(1, engine.events - events_then)
            step[0] = min(step[0] * LOOK_EVENTS / done, deadline_s) if done else step[0] * 2
            if self.running:
                engine.at(engine.now + step[0], look, engine.events)
        engine.at(0.0, look, 0)

    def close(self) -> list[str]:
        for r in self.ranks:
            r.close()
        return self.injector.stop()


def failure(rank: SimRank) -> str:
    """A failed rank as the runner says it (experiments.supervise.agent_failure)."""
    msg = f"{rank.label} exited with code {rank.code} at t={rank.rank.clock():.1f}s"
    if rank.code in EXIT_MEANINGS:
        msg += f" ({EXIT_MEANINGS[rank.code]})"
    reason = agent_error_reason(rank.jsonl)
    return f"{msg}: {reason}" if reason else msg


def run_sim(plan: RunPlan, run_dir: Path, res: RunResult, meta: dict, deadline_s: float,
            data: bool = True, progress: Callable[[str], None] | None = None, engine: str = DEFAULT_ENGINE) -> None:
    """Simulate the plan into run_dir (module docstring); RunFailed (one line)
    when an agent fails or the deadline passes with agents running;
    progress: SimRun.run's."""
    t_wall = time.perf_counter()
    sim = SimRun(plan, run_dir, data, engine)
    meta.update(target=sim.net.target, t0_ns=EPOCH_NS, start_margin_s=0.0)
    try:
        sim.run(deadline_s, progress)
    finally:
        problems = sim.close()
        wall = time.perf_counter() - t_wall
        res.agent_codes = {f"{r.spec.job}/{r.rank.rank}": r.code for r in sim.ranks}
        res.wrong = any(r.code == exits.WRONG for r in sim.ranks)
        sim.net.dump_switches(run_dir / "switches")
        frames = sim.net.frames_sent()
        meta.update(switch_ports=sim.net.port_stats(), host_nics=sim.net.host_stats(), fidelity=dict(FIDELITY),
                    sim={"virtual_s": round(sim.engine.now, 9), "wall_s": round(wall, 3),
                         "events": sim.engine.events, "frames": frames,
                         "events_per_s": round(sim.engine.events / wall) if wall > 0 else None,
                         "frames_per_s": round(frames / wall) if wall > 0 else None,
                         "with_data": data, "engine": engine, **({"injector_problems": problems} if problems else {})})
        res.fidelity = FIDELITY["verdict"]
    if sim.failed:
        raise RunFailed(failure(sim.failed[0]))
    running = [r for r in sim.ranks if not r.done]
    if running:
        raise RunFailed(f"runner deadline of {deadline_s:.0f}s passed with {len(running)} agent(s) still running")
