"""The regime DCQCN runs in, and the emulation parameters that keep it.

DCQCN's effect on a ring AllReduce depends on dimensionless ratios: how many
timer periods a ring step spans, how much of a step a flow needs to recover
from a cut, what fraction of line rate a rate step adds in a step.  A real
deployment is declared once (DEPLOYMENT: line rate, message, ranks, base
RTT, the paper's DCQCN values, the ECN thresholds); `derive` gives the
parameters that keep its ratios at an emulated line rate and step time, as
far as the agent's timer resolution allows, and says which ratios it could
not keep; `regime_ratios` computes the ratios of any parameter set (the
recovery times on a virtual clock with the ReactionPoint itself) and
`regime_targets` the deployment's.  Pure: no I/O.  docs/hosts.md has the
rule, the table of ratios and the measured timer lateness.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

from hosts import ring
from hosts.dcqcn_core import INF, DcqcnParams, ReactionPoint, is_number

# The periods the derivation scales (all by one factor, so their mutual ratios stay).
PERIODS = ("alpha_period_s", "decrease_period_s", "increase_period_s", "cnp_interval_s")
# No derived period is shorter than this: one timer event in ten is served
# this late by the agent's loop with 16 agents and 2 busy loops on 2 cores
# (p90, experiments/bench/timers.py; 8 agents: 0.3-2 ms; docs/hosts.md).
TIMER_FLOOR_S = 2.5e-3
# No derived minimum rate is below this fraction of line rate: the pacer holds
# the packet after one sent at rate R for 1/R (0.47 s at the paper's 0.25 % of
# 10 Mbit/s), however fast the rate recovers meanwhile.
MIN_RATE_FLOOR = 0.01
# "Recovered": Rc back to this fraction of line rate.
RECOVERED_FRACTION = 0.95
# A derived ratio further than this (relative) from its target counts as drift.
DRIFT_TOLERANCE = 0.10
# Timer events a recovery may take on the virtual clock before it counts as never.
MAX_EVENTS = 1_000_000

# name -> what it is; every ratio is dimensionless
RATIO_LABELS: dict[str, str] = {
    "step_per_alpha_period": "step time / alpha period",
    "step_per_decrease_period": "step time / decrease period",
    "step_per_increase_period": "step time / increase period",
    "step_per_cnp_interval": "step time / CNP interval",
    "recovery_per_step": "recovery from a halving (Rc back to 95 % of line, Rt kept) / step time",
    "climb_per_step": "climb from Rc = Rt = line/2 to 95 % of line (AI, HAI) / step time",
    "r_ai_per_period": "R_AI / line rate, per increase period",
    "r_hai_per_period": "R_HAI / line rate, per increase period",
    "r_hai_per_step": "R_HAI / line rate x step / increase period (hyper increase in a step)",
    "alpha_memory_per_step": "alpha's time constant (alpha period / -ln(1-g)) / step time",
    "min_rate_fraction": "min rate / line rate",
    "rtt_per_step": "RTT / step time",
    "kmin_per_bdp": "Kmin / bandwidth-delay product",
    "kmax_per_bdp": "Kmax / bandwidth-delay product",
}
# the ratios a DCQCN parameter set fixes (the rest depend on the network)
DCQCN_RATIOS = tuple(RATIO_LABELS)[:11]


def _check(name: str, value, lo: float = 0.0, strict: bool = True) -> None:
    if not is_number(value) or (value <= lo if strict else value < lo):
        what = "a positive finite number" if strict and lo == 0 else f"a finite number >= {lo}"
        raise ValueError(f"dcqcn '{name}' must be {what}, got {value!r}")


@dataclass(frozen=True)
class Deployment:
    """A real deployment the emulation stands for: one ring AllReduce of
    `message_bytes` per rank over `ranks` ranks at `line_rate_bps`, its base
    RTT, the ECN thresholds of its switches, and its NICs' DCQCN parameters
    (at that line rate)."""

    line_rate_bps: float
    message_bytes: int
    ranks: int
    base_rtt_s: float
    packet_bytes: int
    kmin_bytes: float
    kmax_bytes: float
    dcqcn: DcqcnParams
    pmax: float = 0.2           # ECN's marking probability at Kmax
    queue_bytes: float = 3.2e6  # an egress queue's buffer: twice Kmax, so marking, not drops, holds it

    def __post_init__(self) -> None:
        for name in ("line_rate_bps", "message_bytes", "base_rtt_s", "packet_bytes",
                     "kmin_bytes", "kmax_bytes"):
            _check(name, getattr(self, name))
        if not isinstance(self.ranks, int) or isinstance(self.ranks, bool) or self.ranks < 2:
            raise ValueError(f"dcqcn 'ranks' must be an integer >= 2, got {self.ranks!r}")
        if self.kmax_bytes < self.kmin_bytes:
            raise ValueError(f"dcqcn 'kmax_bytes' must be >= kmin_bytes ({self.kmin_bytes}), "
                             f"got {self.kmax_bytes!r}")
        if self.dcqcn.line_rate_bps != self.line_rate_bps:
            raise ValueError(f"dcqcn 'line_rate_bps' of the deployment's DCQCN parameters must be "
                             f"its line rate ({self.line_rate_bps}), got {self.dcqcn.line_rate_bps!r}")

    @property
    def step_s(self) -> float:
        return step_time_s(self.message_bytes, self.ranks, self.line_rate_bps)

    @property
    def bdp_bytes(self) -> float:
        return self.line_rate_bps * self.base_rtt_s / 8


# 100 Gbit/s, a 1 GB AllReduce over 8 ranks: steps of 10 ms.  Base RTT 10 us
# (a few us per hop; HPCC's run.py derives its DCTCP step from 13 us).
# DCQCN: HPCC's run.py `dcqcn_paper` timers (50/50/55 us, g 1/256, no clamp),
# rdma-hw.cc's F = 5 and RateOnFirstCnp 1, the DCQCN paper's CNP interval
# (50 us), run.py's rate steps (R_AI 5, R_HAI 50 Mbit/s per 25 Gbit/s) and
# rdma-hw.cc's minimum rate (100 Mbit/s at 40 Gbit/s), at 100 Gbit/s; no byte
# counter.  ECN: run.py's Kmin 100 KB and Kmax 400 KB per 25 Gbit/s (Pmax
# 0.2), 3.2 and 12.8 bandwidth-delay products; 1000-byte packets (run.py).
DEPLOYMENT = Deployment(
    line_rate_bps=100e9, message_bytes=1_000_000_000, ranks=8, base_rtt_s=10e-6,
    packet_bytes=1000, kmin_bytes=400e3, kmax_bytes=1600e3,
    dcqcn=DcqcnParams(
        line_rate_bps=100e9, min_rate_bps=250e6, g=1 / 256, rate_on_first_cnp=1.0,
        alpha_period_s=50e-6, decrease_period_s=50e-6, increase_period_s=55e-6,
        byte_counter_bytes=None, fast_recovery_steps=5, r_ai_bps=20e6, r_hai_bps=200e6,
        cnp_interval_s=50e-6),
)


def step_time_s(message_bytes: int, ranks: int, line_rate_bps: float) -> float:
    """A ring step at line rate: the largest chunk's bits over the line rate
    (float32 elements split over the ranks as hosts.ring does)."""
    chunk = -(-(message_bytes // ring.ITEM) // ranks) * ring.ITEM
    return chunk * 8 / line_rate_bps


def scaled_to(params: DcqcnParams, line_rate_bps: float) -> DcqcnParams:
    """The same parameters at another line rate: rates keep their fraction of
    line rate, times stay."""
    _check("line_rate_bps", line_rate_bps)
    f = line_rate_bps / params.line_rate_bps
    return replace(params, line_rate_bps=line_rate_bps, min_rate_bps=params.min_rate_bps * f,
                   r_ai_bps=params.r_ai_bps * f, r_hai_bps=params.r_hai_bps * f)


# --- the ratios -------------------------------------------------------------------

def _run_until(rp: ReactionPoint, done: Callable[[], bool]) -> float:
    """Visit rp's timer events in time order until done(); the time it became
    true (INF if it never does)."""
    for _ in range(MAX_EVENTS):
        t = rp.next_event_time()
        if t == INF:
            return INF
        rp.advance(t)
        if done():
            return t
    return INF


def recovery_s(params: DcqcnParams, fraction: float = RECOVERED_FRACTION) -> float:
    """Time from a halving to Rc >= fraction x line rate, on a virtual clock:
    one CNP to a flow at line rate (alpha = 1), from the decrease that cuts
    Rc (to about half; Rt stays at line) until fast recovery brings it back."""
    line = params.line_rate_bps
    rp = ReactionPoint(params, 0.0)
    rp.on_cnp(0.0)
    t_cut = _run_until(rp, lambda: rp.rate_bps < line)
    return _run_until(rp, lambda: rp.rate_bps >= fraction * line) - t_cut


def climb_s(params: DcqcnParams, fraction: float = RECOVERED_FRACTION) -> float:
    """Time from Rc = Rt = line/2 right after a decrease (as a train of marks
    leaves a flow: its target cut too) to Rc >= fraction x line rate: F
    fast-recovery periods that gain nothing, one additive and then hyper
    increases.  On a virtual clock."""
    line = params.line_rate_bps
    rp = ReactionPoint(params, 0.0)
    rp.on_cnp(0.0)
    t_cut = _run_until(rp, lambda: rp.rate_bps < line)
    rp.rate_bps = rp.target_bps = max(line / 2, params.min_rate_bps)
    return _run_until(rp, lambda: rp.rate_bps >= fraction * line) - t_cut


def regime_ratios(params: DcqcnParams, step_s: float, *, rtt_s: float | None = None,
                  kmin_pkts: float | None = None, kmax_pkts: float | None = None,
                  packet_bytes: float | None = None) -> dict[str, float]:
    """The regime ratios (RATIO_LABELS) of a parameter set at a step time;
    rtt_per_step with an RTT, kmin/kmax_per_bdp with an RTT, the thresholds
    in packets and the packet size (bytes on the wire).  Pure."""
    _check("step_s", step_s)
    p = params
    line = p.line_rate_bps
    out = {
        "step_per_alpha_period": step_s / p.alpha_period_s,
        "step_per_decrease_period": step_s / p.decrease_period_s,
        "step_per_increase_period": step_s / p.increase_period_s,
        "step_per_cnp_interval": step_s / p.cnp_interval_s if p.cnp_interval_s else INF,
        "recovery_per_step": recovery_s(p) / step_s,
        "climb_per_step": climb_s(p) / step_s,
        "r_ai_per_period": p.r_ai_bps / line,
        "r_hai_per_period": p.r_hai_bps / line,
        "r_hai_per_step": p.r_hai_bps / line * step_s / p.increase_period_s,
        "alpha_memory_per_step": (p.alpha_period_s / -math.log1p(-p.g) if p.g < 1 else 0.0) / step_s,
        "min_rate_fraction": p.min_rate_bps / line,
    }
    if rtt_s is not None:
        _check("rtt_s", rtt_s)
        out["rtt_per_step"] = rtt_s / step_s
        if packet_bytes is not None:
            _check("packet_bytes", packet_bytes)
            bdp = line * rtt_s / 8
            for name, k in (("kmin", kmin_pkts), ("kmax", kmax_pkts)):
                if k is not None:
                    _check(f"{name}_pkts", k, strict=False)
                    out[f"{name}_per_bdp"] = k * packet_bytes / bdp
    return out


def regime_targets(deployment: Deployment = DEPLOYMENT, step_fraction: float = 1.0) -> dict[str, float]:
    """The declared deployment's ratios, every one of RATIO_LABELS: what the
    emulation aims at (the `target` column of a regime table).
    step_fraction: for a job whose step at line rate is that fraction of its
    scenario's (the largest step, which the deployment's step stands for:
    experiments/config/scale.py), its ratios in the deployment: the same
    timers, RTT and thresholds over a step that much shorter."""
    _check("step_fraction", step_fraction)
    d = deployment
    return regime_ratios(d.dcqcn, d.step_s * step_fraction, rtt_s=d.base_rtt_s, packet_bytes=d.packet_bytes,
                         kmin_pkts=d.kmin_bytes / d.packet_bytes,
                         kmax_pkts=d.kmax_bytes / d.packet_bytes)


def measured_ratios(step_s: float, *, rtt_s: float | None = None, recovery: float | None = None,
                    climb: float | None = None) -> dict[str, float]:
    """The ratios of measured figures (seconds), under the names of
    RATIO_LABELS, for the ones given."""
    _check("step_s", step_s)
    out = {}
    for name, value in (("rtt_per_step", rtt_s), ("recovery_per_step", recovery),
                        ("climb_per_step", climb)):
        if value is not None:
            _check(name.removesuffix("_per_step"), value, strict=False)
            out[name] = value / step_s
    return out


def ecn_thresholds_pkts(line_rate_bps: float, rtt_s: float, packet_bytes: float,
                        deployment: Deployment = DEPLOYMENT) -> tuple[float, float]:
    """(Kmin, Kmax) in packets that keep the deployment's thresholds over
    the bandwidth-delay product at this line rate and RTT."""
    for name, v in (("line_rate_bps", line_rate_bps), ("rtt_s", rtt_s),
                    ("packet_bytes", packet_bytes)):
        _check(name, v)
    bdp_pkts = line_rate_bps * rtt_s / 8 / packet_bytes
    d = deployment
    return d.kmin_bytes / d.bdp_bytes * bdp_pkts, d.kmax_bytes / d.bdp_bytes * bdp_pkts


# --- the derivation ----------------------------------------------------------------

@dataclass(frozen=True)
class Derivation:
    """Emulation parameters derived from a deployment, and how well they keep
    its regime: `scale` = emulated step / real step; `stretch` >= 1, how much
    the timer floor lengthened the periods beyond that; `drift` the ratios
    (names of RATIO_LABELS) further than DRIFT_TOLERANCE from their target."""

    params: DcqcnParams
    step_s: float
    scale: float
    stretch: float
    floor_s: float
    ratios: dict[str, float]
    targets: dict[str, float]
    drift: tuple[str, ...]

    def describe(self) -> str:
        """One line: the rule as applied, and the ratios not kept."""
        p = self.params
        head = (f"step {self.step_s * 1e3:g} ms at {p.line_rate_bps / 1e6:g} Mbit/s: periods "
                f"x{self.scale * self.stretch:g} of the deployment's")
        if self.stretch > 1:
            head += f" (the {self.floor_s * 1e3:g} ms timer floor binds: x{self.stretch:.3g} longer "\
                    f"than the step ratio)"
        if not self.drift:
            return head + "; every ratio kept"
        off = ", ".join(f"{n} {self.ratios[n]:.3g} (target {self.targets[n]:.3g})" for n in self.drift)
        return f"{head}; not kept: {off}"


def derive(line_rate_bps: float, step_s: float, *, floor_s: float = TIMER_FLOOR_S,
           deployment: Deployment = DEPLOYMENT) -> Derivation:
    """The deployment's DCQCN at an emulated line rate and step time.

    Time scales by step_s / the deployment's step: every period (alpha,
    decrease, increase, CNP interval) by that factor, so steps span as many
    periods as in the deployment; rates keep their fraction of line rate
    (R_AI, R_HAI per period, the minimum rate).  When the shortest period
    would fall below floor_s, all periods stretch by the same factor s to
    reach it, and what can still be kept is kept per step: R_AI and R_HAI
    grow by s (capped at line rate), g becomes 1 - (1-g)^s (alpha's time
    constant in steps); fast recovery (F halvings of the gap, one per
    period) cannot be, so the recovery from a halving takes s times its
    share of a step.  The minimum rate is at least MIN_RATE_FLOOR of line.
    g, F, RateOnFirstCnp, the clamp rule and the byte counter (none) stay."""
    _check("line_rate_bps", line_rate_bps)
    _check("step_s", step_s)
    _check("floor_s", floor_s, strict=False)
    real = deployment.dcqcn
    scale = step_s / deployment.step_s
    stretch = max(1.0, floor_s / (scale * min(getattr(real, n) for n in PERIODS)))
    base = scaled_to(real, line_rate_bps)
    params = replace(
        base,
        **{n: getattr(real, n) * scale * stretch for n in PERIODS},
        min_rate_bps=max(base.min_rate_bps, MIN_RATE_FLOOR * line_rate_bps),
        r_ai_bps=min(line_rate_bps, base.r_ai_bps * stretch),
        r_hai_bps=min(line_rate_bps, base.r_hai_bps * stretch),
        g=1 - (1 - real.g) ** stretch,
    )
    ratios = regime_ratios(params, step_s)
    targets = regime_targets(deployment)
    drift = tuple(n for n in DCQCN_RATIOS
                  if not math.isclose(ratios[n], targets[n], rel_tol=DRIFT_TOLERANCE))
    return Derivation(params=params, step_s=step_s, scale=scale, stretch=stretch, floor_s=floor_s,
                      ratios=ratios, targets=targets, drift=drift)
