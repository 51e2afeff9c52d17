"""python3 -m experiments check CONFIG [--sweep] [--confirm]: the config
resolved as `run` resolves it, with what a run asks of this machine, printed
as TOML (each point of the sweep with --sweep); exit 2 and one line on any
problem.  On stderr, per point: the targets it fits, and what `run --scale
auto` would pick (the K, the agents' memory at that K, the expected wall
time of the batch on the emulation).  --confirm: whether that K answers for
the deployment, as far as the simulation can say (experiments.sim.confirm)."""

from __future__ import annotations

import sys
from pathlib import Path

import tomli_w

from contract import exits
from experiments import config as C
from experiments.cli_common import Refused, load
from experiments.cli_model import MODEL_ERRORS, planned_schedules
from experiments.config.machine import agents_memory_bytes, emulation_refusal
from experiments.config.regime import AutoScale, auto_scale, budget_words, data_packets, wall_time_s
from experiments.config.scale import Scaling, scale
from experiments.oracle.scenario import predict_repeats
from experiments.sim import confirm as CF
from experiments.sim.predict import SIM_CACHE, progress_lines
from experiments.sim.run import refusal
from topologies.network.links import VIA_TWIN

NOTE = "note: "          # what check tells beside the resolved config (warnings say "warning: ")


def targets(spec: C.ExperimentSpec) -> str:
    """Which targets the config fits, and why not where it does not."""
    emu, sim = emulation_refusal(spec), refusal(spec)
    fits = [t for t, why in (("soft, bmv2", emu), ("sim", sim)) if not why]
    line = f"targets: {' and '.join(fits) if fits else 'none'}"
    for name, why in (("the emulation", emu), ("the simulation", sim)):
        if why:
            line += f"; not {name}: {why}"
    return line


def scale_advice(spec: C.ExperimentSpec, auto: AutoScale) -> list[str]:
    """`run --scale auto`'s K (auto), the agents' memory at that K and the
    batch's expected wall time (the oracle's timeline of the scaled
    scenario, every repeat and variant, plus each run's set-up)."""
    lines = [auto.describe()]
    scaled = scale(spec, Scaling(auto.k))
    load = ""
    try:
        pred = predict_repeats(scaled, planned_schedules(scaled, "soft")[0])
        end = sum(max(p.baseline.end_s, p.symphony.end_s) for p in pred.repeats.values()) / len(pred.repeats)
        wall = wall_time_s(end, spec.repeats * len(spec.variants))
        when = f"{wall / 60:.1f} min" if wall < 3600 else f"{wall / 3600:.1f} h"
        pps = data_packets(scaled) / end
        load = (f"; its agents send about {pps:,.0f} data packets/s: {budget_words(pps)} (this machine's "
                "budgets: the most the fidelity monitors find ok on 2 cores, experiments/README.md, "
                "\"Fidelity at scale\")")
    except MODEL_ERRORS as exc:
        when = f"unknown (the oracle: {exc})"
    lines.append(f"at K = {auto.k:g}: the agents hold {agents_memory_bytes(scaled) / 1e9:.2f} GB at once; a batch of "
                 f"{spec.repeats} repeat(s) x {len(spec.variants)} variant(s) takes about {when} on the emulation"
                 + load)
    return lines


def say(line: str) -> None:
    print(f"{NOTE}{line}", file=sys.stderr, flush=True)


def confirm_scale(spec: C.ExperimentSpec, k: float, up_to: float | None, out: Path) -> None:
    """--confirm: the simulation at --scale auto's K (k) and above against
    the deployment's, one line per K and the conclusion (experiments.sim.confirm)."""
    why = refusal(spec)
    if why:
        say(f"--confirm: no simulation: {why}")
        return
    top = up_to if up_to is not None else 3 * k
    if top < k:
        raise ValueError(f"--confirm-up-to {top:g} is below --scale auto's K = {k:g}")
    say(f"--confirm: the simulation on repeat 1's schedule at K = {k:g} and larger up to {top:g}, against the "
        "deployment's scale (one run per variant and K; cached under "
        f"{out / SIM_CACHE})")
    c = CF.confirm(spec, k, top, VIA_TWIN, out / SIM_CACHE, progress=progress_lines(0, say),
                   on_rung=lambda so_far: say(f"--confirm: {CF.describe_last(so_far)}"))
    print(f"{NOTE if c.k is not None else 'warning: '}--confirm: {CF.describe(c, top)}", file=sys.stderr)


def main(args) -> int:
    if args.confirm_up_to is not None and not args.confirm:
        raise Refused("--confirm-up-to needs --confirm")
    if args.confirm_up_to is not None and not args.confirm_up_to > 0:
        raise Refused(f"--confirm-up-to must be a positive K, got {args.confirm_up_to:g}")
    for _, spec in load(args, machine=True):
        print(tomli_w.dumps(spec.as_dict()), end="")
        auto = auto_scale(spec)
        for line in [targets(spec), *scale_advice(spec, auto)]:
            say(line)
        if args.confirm:
            try:
                confirm_scale(spec, auto.k, args.confirm_up_to, args.out)
            except ValueError as exc:
                raise Refused(str(exc)) from None
    return exits.OK
