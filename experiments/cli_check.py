"""python3 -m experiments check CONFIG [--sweep]: the config resolved as
`run` resolves it, with what a run asks of this machine, printed as TOML
(each point of the sweep with --sweep); exit 2 and one line on any problem.
On stderr, per point: the targets it fits, and what `run --scale auto`
would pick (the K, the agents' memory at that K, the expected wall time of
the batch on the emulation)."""

from __future__ import annotations

import sys

import tomli_w

from contract import exits
from experiments import config as C
from experiments.cli_common import load
from experiments.cli_model import MODEL_ERRORS, planned_schedules
from experiments.config.machine import agents_memory_bytes, emulation_refusal
from experiments.config.regime import PACKET_BUDGET_PPS, auto_scale, data_packets, wall_time_s
from experiments.config.scale import Scaling, scale
from experiments.oracle.scenario import predict_repeats
from experiments.sim.run import refusal

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


def scale_advice(spec: C.ExperimentSpec) -> list[str]:
    """`run --scale auto`'s K, the agents' memory at that K and the batch's
    expected wall time (the oracle's timeline of the scaled scenario, every
    repeat and variant, plus each run's set-up)."""
    auto = auto_scale(spec)
    lines = [auto.describe()]
    scaled = scale(spec, Scaling(auto.k))
    load = ""
    try:
        pred = predict_repeats(scaled, planned_schedules(scaled, "soft")[0])
        end = sum(max(p.baseline.end_s, p.symphony.end_s) for p in pred.repeats.values()) / len(pred.repeats)
        wall = wall_time_s(end, spec.repeats * len(spec.variants))
        when = f"{wall / 60:.1f} min" if wall < 3600 else f"{wall / 3600:.1f} h"
        pps = data_packets(scaled) / end
        load = (f"; its agents send about {pps:,.0f} data packets/s, "
                + ("within" if pps <= PACKET_BUDGET_PPS else "over")
                + f" this machine's budget of {PACKET_BUDGET_PPS:,} on the soft target (the most the fidelity "
                "monitors find ok on 2 cores; BMv2 carries less: experiments/README.md, \"Fidelity at scale\")")
    except MODEL_ERRORS as exc:
        when = f"unknown (the oracle: {exc})"
    lines.append(f"at K = {auto.k:g}: the agents hold {agents_memory_bytes(scaled) / 1e9:.2f} GB at once; a batch of "
                 f"{spec.repeats} repeat(s) x {len(spec.variants)} variant(s) takes about {when} on the emulation"
                 + load)
    return lines


def main(args) -> int:
    for _, spec in load(args, machine=True):
        print(tomli_w.dumps(spec.as_dict()), end="")
        for line in [targets(spec), *scale_advice(spec)]:
            print(f"{NOTE}{line}", file=sys.stderr)
    return exits.OK
