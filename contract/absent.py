"""The toolchain-absent switch: ``SYMPHONY_ABSENT=bmv2,tofino,netem`` (any
of them, or ``all``) makes the named tools look missing to every check
that asks for them, so a machine that has them runs the suite as CI's
machine, which may lack them, would (README, "Troubleshooting").

- ``bmv2``: simple_switch, p4c (its BMv2 backend and p4test) and p4-utils
  (topologies.switch.targets.missing_bmv2_parts, so every BMv2 skip and
  `--target auto`);
- ``tofino``: a Tofino compiler (scripts/tofino2.sh reads the same
  variable and exits 3, as it does where none is installed);
- ``netem``: the kernel's sch_netem (topologies.network.links.netem_available).
"""

from __future__ import annotations

import os

ENV = "SYMPHONY_ABSENT"
PARTS = ("bmv2", "tofino", "netem")


def _names(environ) -> set[str]:
    return {n.strip() for n in environ.get(ENV, "").split(",") if n.strip()}


def absent_parts(environ=os.environ) -> set[str]:
    """The parts the variable names; ValueError (one line) for a name it
    does not know (the suite refuses to start on one)."""
    names = _names(environ)
    if "all" in names:
        return set(PARTS)
    unknown = sorted(names - set(PARTS))
    if unknown:
        raise ValueError(f"{ENV}: unknown part(s) {', '.join(unknown)}: name any of {', '.join(PARTS)} or all")
    return names


def pretends_absent(part: str, environ=os.environ) -> bool:
    """Whether `part` (one of PARTS) is to look missing here."""
    names = _names(environ)
    return part in names or "all" in names


def reason(part: str) -> str:
    """What a skip or a refusal says of a part the variable hides."""
    return f"{ENV} names {part}: treated as not installed"
