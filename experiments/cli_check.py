"""python3 -m experiments check CONFIG [--sweep]: the config resolved as
`run` resolves it, with what a run asks of this machine, printed as TOML
(each point of the sweep with --sweep); exit 2 and one line on any problem."""

from __future__ import annotations

import tomli_w

from contract import exits
from experiments.cli_common import load


def main(args) -> int:
    for _, spec in load(args, machine=True):
        print(tomli_w.dumps(spec.as_dict()), end="")
    return exits.OK
