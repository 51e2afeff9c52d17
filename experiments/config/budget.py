"""The packet budgets `check`, `run --rate auto` and the runner's warning use:
the data packets per second from all agents together that an emulation target
carries on this machine with every fidelity check ok.  For BMv2 the budget is
that of the simple_switch build on the PATH, which ``bmv2_build`` finds out.

A BMv2 build is one of
  performance  configured as BMv2's docs/performance.md says (logging macros and
               the event logger compiled out, -O3): scripts/build-p4-toolchain.sh's
               default;
  package      logging macros and event logger compiled in, as BMv2's debian/rules
               and the p4lang packages configure it (`--bmv2-flavour package`);
  unknown      none found, or one the probe cannot place.
and is known, first match wins, from
  1. SYMPHONY_BMV2_BUILD=performance|package|unknown in the environment, which
     the user sets to declare it;
  2. the record scripts/build-p4-toolchain.sh writes beside what it installs,
     PREFIX/share/symphony-toolchain/bmv2.build (``flavour=...``), PREFIX being
     the directory above the bin/ that holds simple_switch;
  3. a probe of the binary: simple_switch's option parser (behavioral-model
     src/bm_sim/options_parse.cpp) warns "... compiled without -DBMELOG ..." when
     --nanolog is given to a build without the event logger (--disable-elogger),
     and "You disabled logging macros ..." when console logging at the default
     level, trace, is asked of a build without the macros
     (--disable-logging-macros); both warnings come before its check of
     --max-port-count, so a negative count makes it exit there without starting
     a switch.  Both warnings: performance; neither: package; one: unknown.  The
     probe cannot see -O2 from -O3; the record can.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

ENV_VAR = "SYMPHONY_BMV2_BUILD"
FLAVOURS = ("performance", "package", "unknown")
RECORD = Path("share") / "symphony-toolchain" / "bmv2.build"   # under the build's prefix

SOFT_BUDGET_PPS = 10_000
# Measured on this machine, 2 cores (2026-11-27, simple_switch 1.15.5 built -O2):
# 4 ranks at 2.5 Mbit/s (839/s) were ok at 0.93 of the bandwidth bound, 8 ranks at
# 2.5 (1,154/s) were not (0.64), and at 10 Mbit/s 4 or 8 ranks got no more than
# 1,540-1,560/s through (0.21-0.43 of the bound).  Kept for the package build and
# for a build that cannot be placed.
BMV2_PACKAGE_BUDGET_PPS = 1_000
# Measured on this machine, 2 cores (2026-12-01, docs/log/2026-12-01-bmv2-builds-measured.md,
# simple_switch 1.15.5 built by scripts/build-p4-toolchain.sh, performance flavour):
# experiments.bench.fidelity --target bmv2, 8 ranks at 2.5 and 3.75 Mbit/s ok at 1,676/s and
# 2,493/s (0.94, 0.93 of the bandwidth bound), 4 ranks at 10 Mbit/s ok at 3,076-3,163/s;
# 8 ranks at 10 Mbit/s degraded at 2,456-2,503/s (pacing late, 0.35 of the bound).  The
# budget stays below the 8-rank edge, where a ring's agents and switches share 2 cores.
BMV2_PERFORMANCE_BUDGET_PPS = 2_000
BMV2_BUDGET_PPS = {"performance": BMV2_PERFORMANCE_BUDGET_PPS, "package": BMV2_PACKAGE_BUDGET_PPS,
                   "unknown": BMV2_PACKAGE_BUDGET_PPS}

PROBE_TIMEOUT_S = 10
ELOG_OFF = "compiled without -DBMELOG"
MACROS_OFF = "You disabled logging macros"


@dataclass(frozen=True)
class Bmv2Build:
    flavour: str          # one of FLAVOURS
    how: str              # where that came from, in words
    path: str | None      # the simple_switch it is about

    def describe(self) -> str:
        return f"{self.flavour} build of BMv2 ({self.how})"


def record_flavour(simple_switch: str) -> str | None:
    """The flavour scripts/build-p4-toolchain.sh recorded for the prefix holding
    this simple_switch, or None."""
    prefix = Path(os.path.realpath(simple_switch)).parent.parent
    try:
        lines = (prefix / RECORD).read_text().splitlines()
    except OSError:
        return None
    flavour = next((line.split("=", 1)[1] for line in lines if line.startswith("flavour=")), None)
    return flavour if flavour in FLAVOURS else None


def probe_command(simple_switch: str, ipc_dir: str) -> list[str]:
    """Asks for the event logger and trace-level console logging, then an invalid
    port count, at which simple_switch exits before it starts a switch."""
    return [simple_switch, "--no-p4", "--log-console", "--nanolog", f"ipc://{ipc_dir}/probe.ipc",
            "--max-port-count=-1"]


def probe_flavour(simple_switch: str) -> str:
    with tempfile.TemporaryDirectory(prefix="symphony-bmv2-probe-") as ipc_dir:
        try:
            out = subprocess.run(probe_command(simple_switch, ipc_dir), capture_output=True, text=True,
                                 timeout=PROBE_TIMEOUT_S, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired):
            return "unknown"
    text = out.stdout + out.stderr
    elog_off, macros_off = ELOG_OFF in text, MACROS_OFF in text
    if elog_off and macros_off:
        return "performance"
    return "package" if not (elog_off or macros_off) else "unknown"


def build_of(simple_switch: str) -> Bmv2Build:
    """The build of this simple_switch, from its prefix's record or the probe
    (steps 2 and 3 of the module docstring; experiments.bench.bmv2 names each
    build it measures with it)."""
    recorded = record_flavour(simple_switch)
    if recorded:
        return Bmv2Build(recorded, f"recorded in {Path(os.path.realpath(simple_switch)).parent.parent / RECORD}",
                         simple_switch)
    return Bmv2Build(probe_flavour(simple_switch), f"probed {simple_switch}", simple_switch)


@functools.cache
def _detect(declared: str | None, path_env: str | None) -> Bmv2Build:
    if declared:
        if declared not in FLAVOURS:
            raise ValueError(f"{ENV_VAR}={declared!r}: give one of {', '.join(FLAVOURS)}")
        return Bmv2Build(declared, f"declared by {ENV_VAR}", shutil.which("simple_switch", path=path_env))
    found = shutil.which("simple_switch", path=path_env)
    if found is None:
        return Bmv2Build("unknown", "no simple_switch on the PATH", None)
    return build_of(found)


def bmv2_build() -> Bmv2Build:
    """The build of the simple_switch on the PATH (module docstring); once per
    environment and PATH."""
    return _detect(os.environ.get(ENV_VAR) or None, os.environ.get("PATH"))


def packet_budget(target: str) -> int:
    """Data packets/s from all agents that `target` ("soft" or "bmv2") carries
    here with every fidelity check ok; BMv2's is that of the build on the PATH."""
    if target == "soft":
        return SOFT_BUDGET_PPS
    if target == "bmv2":
        return BMV2_BUDGET_PPS[bmv2_build().flavour]
    raise ValueError(f"no packet budget for target {target!r}")


EMULATION_TARGETS = ("soft", "bmv2")
