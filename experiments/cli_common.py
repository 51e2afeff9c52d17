"""What the commands of ``python3 -m experiments`` share: their config's
points, loaded the one way (experiments.config.load_points), one-line
refusals with their exit code, the root and target checks."""

from __future__ import annotations

import os
import sys

from contract import exits
from experiments import config as C
from topologies.switch.targets import TargetError, resolve_target


def refuse(message: str, code: int = exits.USAGE) -> int:
    """One line to stderr; the exit code."""
    print(message, file=sys.stderr)
    return code


def load(args, *, machine: bool) -> list[tuple[str | None, C.ExperimentSpec]] | int:
    """The command's points, or the exit code of a one-line refusal.
    machine: also check what a run asks of this machine (check, run)."""
    repeat = getattr(args, "repeat", None)
    if repeat is not None and repeat < 1:
        return refuse("--repeat: must be >= 1")
    try:
        return C.load_points(args.config, repeat=repeat, seed=getattr(args, "seed", None),
                             sweep=getattr(args, "sweep", False), machine=machine)
    except C.ConfigError as exc:
        return refuse(f"config error: {exc}")


def root_and_target(args) -> int | None:
    """None when the command can build networks here, else the exit code of
    a one-line refusal (not root, a target that cannot run)."""
    if os.geteuid() != 0:
        return refuse(f"experiments {args.command}: needs root (Mininet and network namespaces): run it with sudo")
    try:
        resolve_target(args.target)
    except TargetError as exc:
        return refuse(f"--target {args.target}: {exc}")
    return None
