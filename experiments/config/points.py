"""The specs a command works on: the config file read and resolved once
(each point of its sweep), with the command line's overrides, and, for the
commands that run agents (``check`` says what ``run`` would refuse), what
this machine must hold.  One path for every command, so ``check`` refuses
whatever would fail every run."""

from __future__ import annotations

from pathlib import Path

from experiments.config.machine import check_memory
from experiments.config.resolve import load_raw, resolve
from experiments.config.spec import ExperimentSpec
from experiments.config.sweep import sweep_points


def load_points(path: str | Path, *, repeat: int | None = None, seed: int | None = None, sweep: bool = False,
                machine: bool = True) -> list[tuple[str | None, ExperimentSpec]]:
    """(label, spec) per sweep point (sweep), else [(None, spec)];
    ConfigError (one line naming the key) on any problem.  machine: also
    check that this machine can hold a run's agents."""
    raw = load_raw(path)
    if repeat is not None:
        raw["repeats"] = repeat
    if seed is not None:
        raw["seed"] = seed
    points = sweep_points(raw, str(path)) if sweep else [(None, resolve(raw, str(path)))]
    if machine:
        for _, spec in points:
            check_memory(spec)
    return points
