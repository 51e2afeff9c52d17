"""What the commands of ``python3 -m experiments`` share: their config's
points, loaded the one way (experiments.config.load_points), the root and
target checks, and ``Refused``: a one-line refusal with its exit code, which
the dispatcher (experiments/cli.py) prints."""

from __future__ import annotations

import os

from contract import exits
from experiments import config as C
from topologies.switch.targets import TargetError, resolve_target


class Refused(Exception):
    """The command cannot go on: the message is one line for stderr."""

    def __init__(self, message: str, code: int = exits.USAGE):
        super().__init__(message)
        self.code = code


def load(args, *, machine: bool) -> list[tuple[str | None, C.ExperimentSpec]]:
    """The command's points; Refused on any problem of the config.
    machine: also check what a run asks of this machine (check, run)."""
    repeat = getattr(args, "repeat", None)
    if repeat is not None and repeat < 1:
        raise Refused("--repeat: must be >= 1")
    try:
        return C.load_points(args.config, repeat=repeat, seed=getattr(args, "seed", None),
                             sweep=getattr(args, "sweep", False), machine=machine)
    except C.ConfigError as exc:
        raise Refused(f"config error: {exc}") from None


def root_and_target(args) -> None:
    """Refused unless the command can build networks here (root, a target
    that can run)."""
    if os.geteuid() != 0:
        raise Refused(f"experiments {args.command}: needs root (Mininet and network namespaces): run it with sudo")
    try:
        resolve_target(args.target)
    except TargetError as exc:
        raise Refused(f"--target {args.target}: {exc}") from None
