"""What a config asks of this machine, checked before anything starts
(``check`` and ``run`` alike, through ``experiments.config.load_points``):
the memory every agent of a run holds at once; and what the emulation can
carry at all (``emulation_refusal``: the simulation has no such limit)."""

from __future__ import annotations

import os
from pathlib import Path

from experiments.config.schema import (
    LEAFSPINE_KEYS,
    MAX_EMULATED_FABRIC_SWITCHES,
    MAX_EMULATED_HOSTS,
    MAX_LINK_RATE_MBIT,
    ConfigError,
)
from experiments.config.spec import ExperimentSpec
from hosts.job import agent_memory_bytes

MEMINFO = Path("/proc/meminfo")


def available_memory_bytes(meminfo: Path = MEMINFO) -> int:
    """MemAvailable (what can be allocated without swapping); the physical
    memory where the kernel does not say."""
    try:
        for line in meminfo.read_text(encoding="ascii").splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def agents_memory_bytes(spec: ExperimentSpec) -> int:
    """The peak memory of a run's agents, all running at once on this machine."""
    return sum(j.ranks * agent_memory_bytes(j.ranks, j.message_bytes, j.iterations) for j in spec.jobs)


def _gb(n: int) -> str:
    return f"{n / 1e9:.2f} GB"


def check_memory(spec: ExperimentSpec, available: int | None = None) -> None:
    """ConfigError when the agents of a run would need more memory than the
    machine has available (``available``: bytes; None: read it)."""
    need = agents_memory_bytes(spec)
    have = available_memory_bytes() if available is None else available
    if need <= have:
        return
    i, job = max(enumerate(spec.jobs), key=lambda ij: ij[1].ranks * ij[1].message_bytes)
    each = agent_memory_bytes(job.ranks, job.message_bytes, job.iterations)
    raise ConfigError(f"jobs[{i}].message_bytes: the run's agents would need {_gb(need)} of memory at once "
                      f"({job.ranks} agents of {_gb(each)} in job {job.job}: an agent holds every rank's input to "
                      f"check the result, about (N + 2 + 2/N) x message_bytes), and this machine has {_gb(have)} "
                      "available")


def emulation_refusal(spec: ExperimentSpec) -> str | None:
    """Why the emulation (soft, bmv2) cannot run a config, in one line (as a
    config error names its key); None when it can.  Its switches forward in
    software: a link faster than MAX_LINK_RATE_MBIT would run at what the
    machine manages, not at its rate, and the deadlines derived from the
    rate would not hold; a host is a network namespace and a switch a
    process here, so a network past MAX_EMULATED_HOSTS hosts or
    MAX_EMULATED_FABRIC_SWITCHES leaves or spines is the simulation's."""
    t = spec.topology
    if t.hosts > MAX_EMULATED_HOSTS:
        return (f"topology.hosts: at most {MAX_EMULATED_HOSTS} for the emulation (a network namespace each), "
                f"got {t.hosts}; --target sim can")
    for key in LEAFSPINE_KEYS:
        n = getattr(t, key, None)
        if t.kind == "leafspine" and n and n > MAX_EMULATED_FABRIC_SWITCHES:
            return (f"topology.{key}: at most {MAX_EMULATED_FABRIC_SWITCHES} for the emulation (a switch process "
                    f"each), got {n}; --target sim can")
    for key in ("host_rate_mbit", "fabric_rate_mbit"):
        rate = getattr(t, key)
        if rate and rate > MAX_LINK_RATE_MBIT:
            return (f"topology.{key}: at most {MAX_LINK_RATE_MBIT:g} Mbit/s, got {rate!r}: the emulation cannot "
                    "carry more (its switches forward in software, the twin about 1.2 Gbit/s per core); "
                    "--target sim can")
    return None
