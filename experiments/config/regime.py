"""In the deployment's regime before a run: the ratios a scenario will run
at, predicted from its config, and the smallest ``--scale K`` that puts it
in the regime (``run --scale auto``; ``check`` says what it would pick).
Pure.

The ratios that decide Symphony's outcome under DCQCN (analysis.regime's
VERDICT_RATIOS: the RTT, DCQCN's periods and recovery per ring step at line
rate, the ECN thresholds per bandwidth-delay product) follow from the
config: the step at line rate is a job's largest chunk over its host link's
rate, DCQCN's parameters are what its agents will build (hosts.rank's
rate_control, through the job file), and the RTT is the base RTT of the
job's slowest ring edge as the network has it (experiments.config.derive:
every link's delay and a data frame's serialisation out, an ACK's back),
which the soft target's twin and the simulation both give (their queues
store and forward: topologies/switch/twin/queues.py).  The verdict after a
run (analysis.regime.verdict_rtt_s) counts the same RTT, or the floor the
runs measured where the emulator was slower than its network.

``--scale K`` multiplies the bytes and durations (experiments.config.scale):
the RTT stays, the step grows, and the emulation preset's DCQCN periods,
derived from the step, grow with it until the timer floor no longer binds.

Each job is held to its own ratios in the deployment: the scenario's step
(its largest) stands for the deployment's step, so a job whose steps are a
quarter as long runs them over a quarter as many of the same timers there,
with four times the RTTs per step (hosts.dcqcn.regime_targets'
step_fraction); its timers derive from the scenario's step here too
(experiments.config.spec.scenario_step_s, step_fraction).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from analysis.regime import VERDICT_RATIOS, describe, verdict
from experiments.config import derive
from experiments.config.budget import EMULATION_TARGETS, packet_budget
from experiments.config.scale import at, rate_words, scale
from experiments.config.spec import ExperimentSpec, job_specs, step_fraction
from hosts import dcqcn

# the values --scale auto tries, smallest first
LADDER = (1, 1.5, 2, 3, 5, 7, 10, 15, 20, 30, 50, 70, 100, 150, 200, 300, 500, 700, 1000)


@dataclass(frozen=True)
class JobRegime:
    job: int
    rtt_s: float                  # the estimate (module docstring)
    line_step_s: float
    ratios: dict[str, float]      # VERDICT_RATIOS the config gives
    verdict: dict                 # analysis.regime.verdict's


def predicted(spec: ExperimentSpec) -> list[JobRegime]:
    """Each job's ratios as its config makes them, and the verdict on them
    (a job without DCQCN has no DCQCN ratios: its RTT per step is judged
    alone; a TCP job's DCQCN paces its connections, summary.job_regime)."""
    out = []
    for cfg, js in zip(spec.jobs, job_specs(spec, {}), strict=True):
        step = js.line_step_s
        if not step:
            continue
        rtt = derive.job_rtt_s(spec.topo, cfg.placed, js.udp.frame_bytes)
        targets = dcqcn.regime_targets(step_fraction=step_fraction(spec, js))
        ratios = {"rtt_per_step": rtt / step}
        p = js.dcqcn_params
        if p is not None:
            ratios.update(dcqcn.regime_ratios(p, step, rtt_s=rtt, kmin_pkts=spec.ecn.kmin, kmax_pkts=spec.ecn.kmax,
                                              packet_bytes=js.udp.frame_bytes))
        ratios = {k: v for k, v in ratios.items() if k in VERDICT_RATIOS}
        out.append(JobRegime(js.job, rtt, step, ratios, verdict(ratios, targets)))
    return out


# Where a ratio no K moves comes from: the settings --scale leaves as they
# are (experiments/config/scale.py scales bytes and durations only).
_TIMERS = "[dcqcn] step_ms or timer_floor_ms"
FIXED_BY = {
    "kmin_per_bdp": "[ecn] kmin", "kmax_per_bdp": "[ecn] kmax", "recovery_per_step": _TIMERS,
    "step_per_alpha_period": _TIMERS, "step_per_decrease_period": _TIMERS, "step_per_increase_period": _TIMERS,
}


@dataclass(frozen=True)
class AutoScale:
    k: float
    in_regime: bool
    jobs: list[JobRegime]
    fixed: tuple[str, ...] = ()     # ratios off by the same factor at every K tried
    rate: float = 1.0               # the --rate it was found at

    def describe(self) -> str:
        head = f"--scale auto: K = {self.k:g}" + (f" at --rate {rate_words(self.rate)}" if self.rate != 1 else "")
        if self.in_regime:
            return head + (f", the smallest of {LADDER[0]:g}..{LADDER[-1]:g} that puts every job in the "
                           "deployment's regime")
        worst = "; ".join(f"job {j.job} {describe(j.verdict)}" for j in self.jobs if not j.verdict["in_regime"])
        return (head + f": no K up to {LADDER[-1]:g} puts every job in the deployment's regime; this one comes "
                f"closest ({worst})" + self._fixed_words())

    def _fixed_words(self) -> str:
        if not self.fixed:
            return ""
        keys = sorted({FIXED_BY.get(r, "settings") for r in self.fixed})
        return (f"; no K moves {', '.join(self.fixed)}: set by the config's {'; '.join(keys)}, which --scale "
                "keeps (leave them out for the values derived from the deployment: experiments/README.md, "
                "\"Config\")")


def _worst(jobs: list[JobRegime]) -> float:
    return max((o["factor"] for j in jobs for o in j.verdict["off"]), default=1.0)


def auto_scale(spec: ExperimentSpec, rate: float = 1.0) -> AutoScale:
    """The smallest K of LADDER whose scaled scenario (at `rate` times its
    link rates: experiments.config.scale.at) is predicted in regime; where
    none is, the K whose worst ratio is closest (ties: the smallest),
    naming the ratios no K moved."""
    best: tuple[float, float, list[JobRegime]] | None = None
    first: list[JobRegime] | None = None
    for k in LADDER:
        try:
            jobs = predicted(scale(spec, at(float(k), rate)))
        except ValueError:          # (a JobError: messages too large to scale further)
            if best is None:
                raise
            break
        if all(j.verdict["in_regime"] for j in jobs):
            return AutoScale(float(k), True, jobs, rate=rate)
        first = first or jobs
        worst = _worst(jobs)
        if best is None or worst < best[0] * (1 - 1e-9):
            best = (worst, float(k), jobs)
    return AutoScale(best[1], False, best[2], _fixed(first, jobs), rate)     # jobs: the last K that scaled


def _fixed(first: list[JobRegime], last: list[JobRegime]) -> tuple[str, ...]:
    """The ratios off at the last K tried with the value they had at the first."""
    names: list[str] = []
    for a, b in zip(first, last, strict=True):
        for off in b.verdict["off"]:
            was = a.ratios.get(off["ratio"])
            if was and math.isclose(was, off["value"], rel_tol=0.01) and off["ratio"] not in names:
                names.append(off["ratio"])
    return tuple(names)


def wall_time_s(oracle_end_s: float, runs: int, per_run_s: float = 10.0) -> float:
    """A batch's expected wall time: each run as long as the oracle's
    timeline of the scaled scenario (the emulation keeps real time), plus a
    per-run set-up and teardown."""
    return runs * (oracle_end_s + per_run_s) if math.isfinite(oracle_end_s) else math.inf


# What this machine carries with every fidelity check ok, per emulation
# target (experiments/README.md, "Fidelity at scale";
# experiments/bench/fidelity.py): data packets per second from all agents
# together, on 2 cores: experiments.config.budget.packet_budget, BMv2's per
# build.  Soft: 8 ranks at 10 Mbit/s with 1400-byte packets (7,100/s) were
# ok, 16 (14,300/s) were not; with 4 KB packets 16 ranks (4,900/s) were.
TARGET_NAMES = {"soft": "the soft target", "bmv2": "BMv2"}


# the rates --rate auto tries, fastest first: the first whose agents stay
# within the target's budget (budget.packet_budget)
RATE_LADDER = (1, 1 / 2, 1 / 3, 1 / 4, 1 / 5, 1 / 6, 1 / 8, 1 / 10, 1 / 15, 1 / 20)


def auto_rate(pps: float, budget: float, rate: float = 1.0) -> float:
    """--rate auto: the first of RATE_LADDER no faster than `rate` at which
    agents that send `pps` data packets/s at `rate` send no more than
    `budget`; the slowest where none does.  Their packets/s go as the rate
    (every duration scales by 1 / rate; the link delays, a small part of a
    run, do not, so this overestimates a little)."""
    return next((r for r in RATE_LADDER if r <= rate and pps * r / rate <= budget), RATE_LADDER[-1])


def budget_words(pps: float) -> str:
    """Where a run's data packets per second stand against each emulation
    target's budget, in words."""
    budgets = {t: packet_budget(t) for t in EMULATION_TARGETS}
    return ", ".join(f"{'within' if pps <= budget else 'over'} {TARGET_NAMES[t]}'s {budget:,}"
                     for t, budget in budgets.items())


def data_packets(spec: ExperimentSpec) -> int:
    """Every data packet a run's agents send once (no retransmission): each
    rank sends 2(N-1) chunks of S/N per iteration."""
    total = 0
    for js in job_specs(spec, {}):
        n = js.n_ranks
        chunk = -(-js.message_bytes // n)
        total += js.iterations * 2 * (n - 1) * n * -(-chunk // js.udp.payload_bytes)
    return total
