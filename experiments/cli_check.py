"""python3 -m experiments check CONFIG [--sweep] [--confirm]: the config
resolved as `run` resolves it, with what a run asks of this machine, printed
as TOML (each point of the sweep with --sweep); exit 2 and one line on any
problem.  On stderr, per point: the targets it fits, and what `run --scale
auto` would pick (the K, the agents' memory at that K, the expected wall
time of the batch on the emulation).  --confirm: whether that K answers for
the deployment, as far as the simulation can say (experiments.sim.confirm)."""

from __future__ import annotations

import sys

import tomli_w

from contract import exits
from experiments import config as C
from experiments.cli_common import NOTE, confirm_scale, confirm_up_to, load, rate_arg, say
from experiments.cli_model import MODEL_ERRORS, expected_load
from experiments.config.budget import EMULATION_TARGETS, bmv2_build, packet_budget
from experiments.config.machine import agents_memory_bytes, emulation_refusal
from experiments.config.regime import (
    TARGET_NAMES,
    AutoScale,
    auto_rate,
    auto_scale,
    budget_words,
    wall_time_s,
)
from experiments.config.scale import at, deployment_scaling, rate_words, scale
from experiments.sim import confirm as CF
from experiments.sim.cost import cost
from experiments.sim.run import refusal
from topologies.network.links import VIA_TWIN


def targets(spec: C.ExperimentSpec) -> str:
    """Which targets the config fits, and why not where it does not."""
    emu, sim = emulation_refusal(spec), refusal(spec)
    fits = [t for t, why in (("soft, bmv2", emu), ("sim", sim)) if not why]
    line = f"targets: {' and '.join(fits) if fits else 'none'}"
    for name, why in (("the emulation", emu), ("the simulation", sim)):
        if why:
            line += f"; not {name}: {why}"
    return line


def simulation_cost(spec: C.ExperimentSpec) -> str:
    """What one simulated run costs (experiments/sim/cost.py), at the
    config's rates and at the deployment's scale with full packets."""
    dep = scale(spec, deployment_scaling(spec))
    return (f"the simulation, a run: at the config's rates {cost(spec).describe()}; at the deployment's "
            f"scale {cost(dep).describe()}")


def scale_advice(spec: C.ExperimentSpec, auto: AutoScale) -> list[str]:
    """`run --scale auto`'s K (auto, at its --rate), the agents' memory at
    that K and the batch's expected wall time (the oracle's timeline of the
    scaled scenario, every repeat and variant, plus each run's set-up); and
    per target whose packet budget it passes, what `run --rate auto` picks."""
    lines = [auto.describe()]
    scaled = scale(spec, at(auto.k, auto.rate))
    load, over = "", []
    try:
        end, pps = expected_load(scaled)
        wall = wall_time_s(end, spec.repeats * len(spec.variants))
        when = f"{wall / 60:.1f} min" if wall < 3600 else f"{wall / 3600:.1f} h"
        load = (f"; its agents send about {pps:,.0f} data packets/s: {budget_words(pps)} (this machine's "
                "budgets: the most the fidelity monitors find ok on 2 cores, experiments/README.md, "
                "\"Fidelity at scale\")")
        over = [t for t in EMULATION_TARGETS if pps > packet_budget(t)]
    except MODEL_ERRORS as exc:
        when = f"unknown (the oracle: {exc})"
    lines.append(f"at K = {auto.k:g}: the agents hold {agents_memory_bytes(scaled) / 1e9:.2f} GB at once; a batch of "
                 f"{spec.repeats} repeat(s) x {len(spec.variants)} variant(s) takes about {when} on the emulation"
                 + load)
    lines += [rate_advice(spec, auto, pps, t) for t in over]
    if spec.symphony.gate_step:
        lines.append(f"Symphony's gate at K = {auto.k:g}: {scaled.symphony.gate_pkts} packets "
                     f"({spec.symphony.gate_step:g} of the step; {spec.symphony.gate_pkts} unscaled)")
    return lines


def rate_advice(spec: C.ExperimentSpec, auto: AutoScale, pps: float, target: str) -> str:
    """What `run --scale auto --rate auto` would pick on `target`, from the
    agents' packets/s at auto's K and rate."""
    budget = packet_budget(target)
    rate = auto_rate(pps, budget, auto.rate)
    try:
        k = f"K = {auto_scale(spec, rate).k:g}"
    except ValueError as exc:
        k = f"no K ({exc})"
    slower = pps * rate / auto.rate
    build = f" (the budget of the {bmv2_build().describe()})" if target == "bmv2" else ""
    return (f"on {TARGET_NAMES[target]}, `run --scale auto --rate auto` runs it at {rate_words(rate)} of the "
            f"config's link rates, {k}, about {slower:,.0f} data packets/s"
            + ("" if slower <= budget else " (the slowest it tries, still over)") + build)


def main(args) -> int:
    up_to = confirm_up_to(args)
    rate = 1.0 if args.rate == "auto" else rate_arg(args.rate)     # auto: the advice lines say what run picks
    for _, spec in load(args, machine=True):
        print(tomli_w.dumps(spec.as_dict()), end="")
        auto = auto_scale(spec, rate)
        lines = [targets(spec), *([simulation_cost(spec)] if refusal(spec) is None else []),
                 *scale_advice(spec, auto)]
        for line in lines:
            say(line)
        confirmed = confirm_scale(spec, auto.k, up_to, args.out, VIA_TWIN, rate) if args.confirm else None
        if confirmed:
            c, top = confirmed
            print(f"{NOTE if c.k is not None else 'warning: '}--confirm: {CF.describe(c, top)}", file=sys.stderr)
    return exits.OK
