"""What the commands of ``python3 -m experiments`` share: their config's
points, loaded the one way (experiments.config.load_points, and for the
commands that run agents experiments.feasible), the root and target checks,
``Refused`` (a one-line refusal with its exit code, which the dispatcher,
experiments/cli.py, prints) and ``leave_nothing``, a command's last word on
the networks it started."""

from __future__ import annotations

import math
import os
import sys
import time
from fractions import Fraction
from pathlib import Path

from contract import exits
from contract.files import refusal_of_dir
from experiments import config as C
from experiments import feasible
from experiments.sim import confirm as CF
from experiments.sim.predict import SIM_CACHE, progress_lines
from experiments.sim.run import refusal
from topologies.network import shield
from topologies.network.state import leftovers
from topologies.switch.targets import TargetError, build_bmv2_program, resolve_target

LEFTOVER_GRACE_S = 2.0      # a torn-down network's last processes exit within this
NOTE = "note: "             # what check and run tell on stderr beside their output (warnings say "warning: ")
CONFIRM_SPAN = 3            # --confirm climbs to this many times --scale auto's K unless told


class Refused(Exception):
    """The command cannot go on: the message is one line for stderr."""

    def __init__(self, message: str, code: int = exits.USAGE):
        super().__init__(message)
        self.code = code


def load(args, *, machine: bool) -> list[tuple[str | None, C.ExperimentSpec]]:
    """The command's points; Refused on any problem of the config.
    machine: the commands that run agents (check, run) also check what a
    run asks of this machine, and refuse what every run is sure to fail
    (experiments.feasible); a run expected to take over an hour is warned
    about on stderr, and the command goes on.  A derived value that moved
    to fit what the config gives (ExperimentSpec.notes) is a note on
    stderr, once however many points share it."""
    repeat = getattr(args, "repeat", None)
    if repeat is not None and repeat < 1:
        raise Refused("--repeat: must be >= 1")
    try:
        points = C.load_points(args.config, repeat=repeat, seed=getattr(args, "seed", None),
                               sweep=getattr(args, "sweep", False), machine=machine)
        warnings = [w for _, spec in points for w in feasible.check(spec, _loss_applies(args))] if machine else []
    except C.ConfigError as exc:
        raise Refused(f"config error: {exc}") from None
    for line in dict.fromkeys(note for _, spec in points for note in spec.notes):
        say(line)
    for line in warnings:
        print(line, file=sys.stderr)
    return points


def own_dir(path: Path, flag: str) -> Path:
    """A directory argument (--out, --run-dir) with every symlink in it
    followed, the path the command then writes under; Refused (one line)
    where that is or lies in a system directory (contract.files), named or
    reached through a symlink, or cannot be resolved."""
    try:
        resolved = path.resolve()
    except (OSError, RuntimeError) as exc:        # a symlink loop
        raise Refused(f"{flag} {path}: cannot be resolved ({getattr(exc, 'strerror', None) or exc})") from None
    why = refusal_of_dir(resolved)
    if why is not None:
        via = "" if resolved == path.absolute() else f" (it resolves to {resolved})"
        raise Refused(f"{flag} {path}{via}: {why}")
    return resolved


def _loss_applies(args) -> bool:
    """Whether netem loss is applied as loss on the command's target: not
    on bmv2, which squeezes instead where the kernel lacks sch_netem (only
    root can tell)."""
    try:
        return resolve_target(getattr(args, "target", "auto")) != "bmv2"
    except TargetError:
        return True


def root_and_target(args) -> str:
    """The target the command's networks run on ("bmv2" | "soft"), resolved
    here once; Refused unless the command can build networks here (root, a
    target that can run).  On BMv2 the program is compiled first when it is
    missing or older than its P4 source, as the suite does: otherwise
    every run of a batch (a fresh clone, a pulled P4 change) fails alike
    on the network's stale-program check."""
    if os.geteuid() != 0:
        raise Refused(f"experiments {args.command}: needs root (Mininet and network namespaces): run it with sudo")
    try:
        target = resolve_target(args.target)
        if target == "bmv2":
            build_bmv2_program()
    except TargetError as exc:
        raise Refused(f"--target {args.target}: {exc}") from None
    return target


def _settled(look, within_s: float = LEFTOVER_GRACE_S) -> list:
    """look() until it finds nothing or within_s has passed (a process
    SIGKILLed a moment ago may not have exited yet)."""
    deadline = time.monotonic() + within_s
    found = look()
    while found and time.monotonic() < deadline:
        time.sleep(0.1)
        found = look()
    return found


def leave_nothing() -> bool:
    """A command's last word on its networks: each one whose teardown was
    cut short (a signal in the instant it began) is torn down now
    (shield.stop_live), and whatever of any is still there is named on
    stderr with the command that removes it.  True when nothing is left."""
    problems = shield.stop_live()
    for net in shield.started():
        left = _settled(lambda net=net: leftovers(net.id, net.state.data["pids"] if net.state else []))
        if left:
            problems.append(f"network {net.id} left {', '.join(left)}")
    for line in problems:
        print(f"teardown: {line}; `sudo make clean-net` removes it", file=sys.stderr)
    return not problems


def say(line: str) -> None:
    print(f"{NOTE}{line}", file=sys.stderr, flush=True)


def rate_arg(text: str | None) -> float:
    """--rate given as a number or a fraction (0.5, 1/3); 1 without it;
    Refused (one line) otherwise."""
    if text is None:
        return 1.0
    try:
        rate = float(Fraction(text))
    except (ValueError, ZeroDivisionError):
        rate = math.nan
    if not (math.isfinite(rate) and rate > 0):
        raise Refused(f"--rate: expected a positive number (0.5, 1/3) or 'auto', got {text!r}")
    return rate


def confirm_up_to(args) -> float | None:
    """--confirm-up-to, checked; Refused (one line) without --confirm or below 0."""
    top = getattr(args, "confirm_up_to", None)
    if top is not None and not getattr(args, "confirm", False):
        raise Refused("--confirm-up-to needs --confirm")
    if top is not None and not top > 0:
        raise Refused(f"--confirm-up-to must be a positive K, got {top:g}")
    return top


def confirm_scale(spec: C.ExperimentSpec, k: float, up_to: float | None, out: Path, via: str, rate: float = 1.0
                  ) -> tuple[CF.Confirmation, float] | None:
    """--confirm (check, run): the simulation at --scale auto's K (k) and
    above, up to up_to (default CONFIRM_SPAN x k), at --rate rate, against
    the deployment's, a line per K on stderr (experiments.sim.confirm); the
    confirmation and its bound, None where the scenario cannot be simulated
    (said why)."""
    why = refusal(spec)
    if why:
        say(f"--confirm: no simulation: {why}")
        return None
    top = up_to if up_to is not None else CONFIRM_SPAN * k
    if top < k:
        raise Refused(f"--confirm-up-to {top:g} is below --scale auto's K = {k:g}")
    say(f"--confirm: the simulation on repeat 1's schedule at K = {k:g} and larger up to {top:g}, against the "
        f"deployment's scale (one run per variant and K; cached under {out / SIM_CACHE})")
    c = CF.confirm(spec, k, top, via, out / SIM_CACHE, progress=progress_lines(0, say),
                   on_rung=lambda so_far: say(f"--confirm: {CF.describe_last(so_far)}"), rate=rate)
    return c, top
