"""What a simulated run will cost, before it runs: the frames it carries
(every hop of every data packet and its share of ACKs), the CPU time at
the compiled engine's measured rate, and the memory.  Pure.  `check`
prints it per scale (experiments/cli_check.py), so a researcher sees a
cluster's price before paying it.

The rates are measured (docs/results.md, "The simulation";
`python3 -m experiments.bench.sim_speed --sweep-hosts`): a frame costs
the engine the same at any size of network, its memory grows with the
hosts and with the ranks' records.
"""

from __future__ import annotations

from dataclasses import dataclass

from experiments.config import ExperimentSpec, job_specs
from experiments.config.regime import data_packets
from topologies.spec.routes import any_path_links, next_ports

# the compiled engine on one core, a round figure below the slowest it was
# measured at (2026-12-05: the busy 1,024-host cluster at 32 as one 1.16 M
# frames a CPU second, the 64-rank ring with full packets 2.0 M, the demo
# 3.3 M), so an estimate errs on the long side
FRAMES_PER_CPU_S = 1.0e6
# the simulating process before any network, and per host of it
BASE_BYTES = 60 << 20
HOST_BYTES = 64 << 10


@dataclass(frozen=True)
class Cost:
    frames: int
    cpu_s: float
    memory_bytes: int

    def describe(self) -> str:
        return (f"about {self.frames:,} frames, {_duration(self.cpu_s)} of one core, "
                f"{self.memory_bytes / 2**20:,.0f} MiB")


def _duration(s: float) -> str:
    if s < 90:
        return f"{s:.0f} s"
    return f"{s / 60:.0f} min" if s < 5400 else f"{s / 3600:.1f} h"


def hops_per_packet(spec: ExperimentSpec) -> float:
    """The mean number of links a ring flow's packet crosses (each one a
    frame the engine carries; every equal-cost path has as many)."""
    topo, table = spec.topo, next_ports(spec.topo)
    lengths = [len(any_path_links(topo, src, dst, table)) for job in spec.jobs
               for src, dst, _ in job.placed.ring_flows()]
    return sum(lengths) / len(lengths)


def cost(spec: ExperimentSpec) -> Cost:
    """A run's cost (module docstring) of a spec as it will run (scaled)."""
    acks = 1 + 1 / min(js.udp.ack_every for js in job_specs(spec, {}))
    frames = round(data_packets(spec) * hops_per_packet(spec) * acks)
    return Cost(frames, frames / FRAMES_PER_CPU_S, BASE_BYTES + HOST_BYTES * spec.topology.hosts)
