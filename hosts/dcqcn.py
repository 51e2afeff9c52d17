"""DCQCN rate control for the agents: the presets and the one place that
builds a rank's controllers.  The state machines are hosts.dcqcn_core's, the
regime and the derivation of the emulation preset hosts.dcqcn_regime's; this
module re-exports what callers use, so `hosts.dcqcn` is the interface.

Presets (PRESET_NAMES): "paper", the published values (the declared
deployment's, rates scaled to the line rate); "emulation", derived from the
declared deployment at the emulated line rate and step time so that the
regime ratios stay (hosts.dcqcn_regime.derive); "off", FixedRate.
docs/hosts.md states the rules, where each value comes from, and the
derivation.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields, replace
from typing import Any

from hosts.dcqcn_core import (
    ALPHA_REPORT_STEP,
    INF,
    RATE_EPSILON_BPS,
    DcqcnParams,
    FixedRate,
    NotificationPoint,
    ReactionPoint,
    is_number,
)
from hosts.dcqcn_regime import (
    DEPLOYMENT,
    RATIO_LABELS,
    TIMER_FLOOR_S,
    Deployment,
    Derivation,
    derive,
    ecn_thresholds_pkts,
    measured_ratios,
    regime_ratios,
    regime_targets,
    scaled_to,
    step_time_s,
)

__all__ = [
    "ALPHA_REPORT_STEP", "DEPLOYMENT", "FIELD_NAMES", "INF", "PRESETS", "PRESET_NAMES",
    "PRESET_OFF", "RATE_EPSILON_BPS", "RATIO_LABELS", "TIMER_FLOOR_S", "UNIT_ALIASES", "DcqcnParams",
    "Deployment", "Derivation", "FixedRate", "NotificationPoint", "ReactionPoint", "controllers",
    "derive", "ecn_thresholds_pkts", "emulation_params", "make_params", "measured_ratios", "normalize_overrides",
    "paper_params", "regime_ratios", "regime_targets", "step_time_s",
]

# --- presets -----------------------------------------------------------------

PAPER_LINE_RATE_BPS = 40e9    # paper_params' default: the DCQCN paper's links


def paper_params(line_rate_bps: float = PAPER_LINE_RATE_BPS, step_s: float | None = None,
                 floor_s: float | None = None) -> DcqcnParams:
    """The published microsecond-scale values (the declared deployment's,
    hosts.dcqcn_regime.DEPLOYMENT), no byte counter.  Rates keep their
    fraction of line rate, timers stay; step time and floor play no part."""
    return scaled_to(DEPLOYMENT.dcqcn, line_rate_bps)


def emulation_params(line_rate_bps: float, step_s: float | None,
                     floor_s: float | None = None) -> DcqcnParams:
    """The declared deployment's DCQCN at this line rate and ring step time,
    keeping its regime ratios (hosts.dcqcn_regime.derive: periods scaled by
    the step ratio, none below floor_s, default TIMER_FLOOR_S)."""
    if step_s is None:
        raise ValueError("dcqcn 'step_s' is needed by the emulation preset (it derives its "
                         "timers from the ring step time), got None")
    return derive(line_rate_bps, step_s,
                  floor_s=TIMER_FLOOR_S if floor_s is None else floor_s).params


PRESETS: dict[str, Callable[[float, float | None, float | None], DcqcnParams]] = {
    "emulation": emulation_params,
    "paper": paper_params,
}
# "off": no rate control; the transport paces at line rate.
PRESET_OFF = "off"
PRESET_NAMES = (*PRESETS, PRESET_OFF)
FIELD_NAMES = tuple(f.name for f in fields(DcqcnParams))


# Overrides may name a field in other units (job files say cnp_interval_us = 50):
# suffix -> (suffix of the field, factor to the field's unit)
UNIT_ALIASES = {"_us": ("_s", 1e-6), "_ms": ("_s", 1e-3),
                "_kbit": ("_bps", 1e3), "_mbit": ("_bps", 1e6), "_gbit": ("_bps", 1e9)}


def normalize_overrides(overrides: dict[str, Any]) -> dict[str, Any]:
    """Field names for overrides given in other units (``cnp_interval_us`` ->
    ``cnp_interval_s``); ValueError naming an unknown or doubly given one."""
    out: dict[str, Any] = {}
    for key, value in overrides.items():
        name, factor = key, None
        if key not in FIELD_NAMES:
            for suffix, (field_suffix, f) in UNIT_ALIASES.items():
                if key.endswith(suffix) and key[:-len(suffix)] + field_suffix in FIELD_NAMES:
                    name, factor = key[:-len(suffix)] + field_suffix, f
                    break
            else:
                raise ValueError(f"dcqcn parameter '{key}' is unknown (known: {', '.join(FIELD_NAMES)}; "
                                 f"times also in _us/_ms, rates in _kbit/_mbit/_gbit)")
        if name in out:
            raise ValueError(f"dcqcn parameter '{name}' is given twice (as '{key}' too)")
        if factor is not None:
            if not is_number(value):
                raise ValueError(f"dcqcn parameter '{key}' must be a number, got {value!r}")
            value = value * factor
        out[name] = value
    return out


def make_params(preset: str, line_rate_bps: float, step_s: float | None = None,
                floor_s: float | None = None, **overrides: Any) -> DcqcnParams:
    """Parameters of a preset at a line rate (for "emulation" also the ring
    step time it derives its timers from and, optionally, their floor), with
    fields overridden by name (or by a unit alias, see normalize_overrides).
    Raises ValueError naming the preset or field for bad input."""
    if preset not in PRESETS:
        raise ValueError(f"dcqcn preset must be one of {', '.join(PRESETS)} "
                         f"(or '{PRESET_OFF}' for no rate control), got {preset!r}")
    overrides = normalize_overrides(overrides)
    params = PRESETS[preset](line_rate_bps, step_s, floor_s)
    return replace(params, **overrides) if overrides else params


def controllers(preset: str, line_rate_bps: float | None, now: float,
                step_s: float | None = None, floor_s: float | None = None, **overrides: Any
                ) -> tuple[ReactionPoint, NotificationPoint] | None:
    """The (reaction point, notification point) pair of one rank, or None when
    there is no rate control: preset "off", or no line rate to start from."""
    if preset == PRESET_OFF or line_rate_bps is None:
        return None
    params = make_params(preset, line_rate_bps, step_s, floor_s, **overrides)
    return ReactionPoint(params, now), NotificationPoint(params.cnp_interval_s)
