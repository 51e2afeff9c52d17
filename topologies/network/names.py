"""Names this project gives to what it creates machine-wide.

Everything visible outside a run (network namespaces, root-namespace
interfaces, bridges) starts with PREFIX, so cleanup can remove exactly what
this project made and nothing else.
"""

from __future__ import annotations

import secrets

PREFIX = "sym"
IFNAMSIZ = 15  # Linux interface names hold at most 15 characters


def new_lab_id() -> str:
    """Short random id that keeps concurrent runs' names apart."""
    return secrets.token_hex(2)


def check_ifname(name: str) -> str:
    if not name.startswith(PREFIX):
        raise ValueError(f"interface name {name!r} lacks the project prefix {PREFIX!r}")
    if len(name) > IFNAMSIZ:
        raise ValueError(f"interface name {name!r} is longer than {IFNAMSIZ} characters")
    return name


def switch_ifname(net_id: str, switch: str, port: int) -> str:
    """Root-namespace name of a Mininet switch port: sym<id><switch>e<port>."""
    return check_ifname(f"{PREFIX}{net_id}{switch}e{port}")
