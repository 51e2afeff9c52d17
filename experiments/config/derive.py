"""What the experiments derive from the network a config describes, where
the config does not say: a UDP job's in-flight bound, the share of its
bottleneck its deadlines assume, and the switches' ECN thresholds and queue
depth.  Pure.

In flight (docs/hosts.md, "In flight"):

A RoCE NIC sends at its DCQCN rate; what else bounds it must not bind below
that rate.  Here that bound is the agent's window (hosts.udp.params'
window_packets: packets in flight past the first unacknowledged one, IRN's
BDP-FC in spirit), set to what the path can hold: its bandwidth-delay
product at the flow's line rate (the slowest ring edge's base RTT: every
link's delay and a data frame's serialisation out, an ACK's back) plus one
switch queue full.  A flow at any share of a bottleneck whose queue stays
within its depth needs less than that in flight, so the window never binds
below the DCQCN rate; more than that would be dropped at the queue anyway.
The ACK's SACK bitmap covers it (hosts.wire.MAX_SACK_BITS).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

from contract.p4names import RUN_MAX
from hosts import wire
from hosts.dcqcn import DEPLOYMENT, Deployment, ecn_thresholds_pkts
from hosts.udp.params import WIRE_OVERHEAD, UdpParams
from topologies.spec.placement import PlacedJob
from topologies.spec.routes import any_path_links, next_ports, ring_egresses
from topologies.spec.topo import HOST_LINK, TopoSpec

ACK_FRAME_BYTES = WIRE_OVERHEAD - wire.DATA.size + wire.ACK.size     # an ACK without a SACK bitmap


def link_time_s(rate_mbit: float | None, delay_ms: float, nbytes: int) -> float:
    """A frame of nbytes over one link: its serialisation and the link's delay."""
    return (nbytes * 8 / (rate_mbit * 1e6) if rate_mbit else 0.0) + delay_ms / 1e3


def base_rtt_s(topo: TopoSpec, src: str, dst: str, frame_bytes: int, table: dict | None = None,
               delays: bool = True) -> float:
    """A data frame from src to dst and an ACK back, on empty queues
    (delays=False: their serialisation alone); any equal-cost path has the
    same links' rates and delays (routes.any_path_links)."""
    out = any_path_links(topo, src, dst, table)
    back = any_path_links(topo, dst, src, table)

    def t(name, nbytes):
        link = topo.link(name)
        return link_time_s(link.rate_mbit, link.delay_ms if delays else 0.0, nbytes)
    return sum(t(n, frame_bytes) for n in out) + sum(t(n, ACK_FRAME_BYTES) for n in back)


def job_rtt_s(topo: TopoSpec, job: PlacedJob, frame_bytes: int) -> float:
    """The base RTT of the job's slowest ring edge."""
    table = next_ports(topo)
    return max(base_rtt_s(topo, src, dst, frame_bytes, table) for src, dst, _ in job.ring_flows())


def window_packets(topo: TopoSpec, job: PlacedJob, udp: UdpParams) -> int:
    """The job's in-flight bound (module docstring), in its packets, at most
    what the SACK bitmap covers."""
    (_, _, access), = topo.ports(job.hosts[0]).values()
    rate = access.rate_mbit
    if not rate:
        return udp.window_packets          # no line rate to derive from: the job file's default
    bdp = rate * 1e6 * job_rtt_s(topo, job, udp.frame_bytes) / 8
    queue = topo.queue_depth * udp.frame_bytes
    return min(wire.MAX_SACK_BITS, math.ceil((bdp + queue) / udp.payload_bytes) + 1)


# --- ECN and queues: the deployment's, per bandwidth-delay product ---------------

def base_rtt_max_s(topo: TopoSpec, jobs: list[PlacedJob], frame_bytes: int) -> float:
    """The longest base RTT of any job's ring edge (job_rtt_s)."""
    return max(job_rtt_s(topo, job, frame_bytes) for job in jobs)


@dataclass(frozen=True)
class EcnDerived:
    """The switches' ECN thresholds and queue depth for a config that names
    none (ecn_and_queue), and what they come from: the deployment's
    thresholds per bandwidth-delay product (``kmin_exact``, ``kmax_exact``
    before rounding to packets) at the host line rate and the longest base
    RTT of the jobs' ring edges; None for both where no link has a rate
    (then EcnParams' and TopoParams' own)."""
    kmin: int
    kmax: int
    depth: int
    line_rate_mbit: float | None = None
    rtt_s: float | None = None
    kmin_exact: float | None = None
    kmax_exact: float | None = None

    def kmax_words(self, deployment: Deployment = DEPLOYMENT) -> str:
        """Where the Kmax comes from, in words."""
        if self.line_rate_mbit is None or self.rtt_s is None:
            return f"{self.kmax} packets, the switches' default (no line rate to derive one from)"
        return (f"{self.kmax} packets, the deployment's {deployment.kmax_bytes / deployment.bdp_bytes:g} "
                f"bandwidth-delay products at {self.line_rate_mbit:g} Mbit/s and a {self.rtt_s * 1e3:.3g} ms "
                "base RTT, the longest of a ring edge")

    def off_deployment(self, name: str, pkts: int) -> float | None:
        """How many times the deployment's ratio ``<name>_per_bdp`` (kmin,
        kmax) a threshold of pkts packets makes; None without a line rate."""
        exact = self.kmin_exact if name == "kmin" else self.kmax_exact
        return pkts / exact if exact else None


def queue_depth(kmax: int, deployment: Deployment = DEPLOYMENT) -> int:
    """The queue depth in frames for a Kmax of kmax frames: the
    deployment's queue per Kmax (twice: marking, not drops, holds a
    queue), at least one frame above Kmax."""
    return max(kmax + 1, math.ceil(kmax * deployment.queue_bytes / deployment.kmax_bytes))


def ecn_and_queue(topo: TopoSpec, jobs: list[PlacedJob], frame_bytes: int,
                  deployment: Deployment = DEPLOYMENT) -> EcnDerived:
    """Kmin, Kmax and the queue depth in frames of frame_bytes: the
    deployment's thresholds per bandwidth-delay product (3.2 and 12.8 BDP,
    hosts.dcqcn.ecn_thresholds_pkts) at the host line rate and the longest
    base RTT of the jobs' ring edges, and its queue per Kmax (queue_depth).
    What a config that names none gets, so a scenario keeps the
    deployment's marking whatever its rates."""
    host_rate = next(link.rate_mbit for link in topo.links if link.cls == HOST_LINK)
    if not host_rate:
        return EcnDerived(5, 20, 64)     # no line rate to derive from: EcnParams' and TopoParams' own
    rtt = base_rtt_max_s(topo, jobs, frame_bytes)
    kmin_exact, kmax_exact = ecn_thresholds_pkts(host_rate * 1e6, rtt, frame_bytes, deployment)
    kmin, kmax = max(1, round(kmin_exact)), max(2, round(kmax_exact))
    return EcnDerived(kmin, kmax, queue_depth(kmax, deployment), host_rate, rtt, kmin_exact, kmax_exact)


def _egresses(topo: TopoSpec, src: str, dst: str, dport: int, table: dict) -> list[tuple[str, int]]:
    """(node, port) of every queue a ring flow's data from src to dst may
    leave by: the host's own, then each switch's (under ``ecmp`` every
    equal-cost one, routes.ring_egresses, so its share is a lower bound)."""
    (port, _), = topo.ports(src).items()
    return [(src, port)] + ring_egresses(topo, src, dst, dport, table)


def least_shares_mbit(topo: TopoSpec, jobs: list[PlacedJob]) -> dict[int, float | None]:
    """Per job id, the least rate any of its ring flows can count on with
    every job's ring flows sending: over the queues the flow leaves by, a
    queue's link rate split evenly among the ring flows that leave by it
    (max-min fairness gives each flow at least that).  None where no link
    names a rate."""
    table = next_ports(topo)
    flows = {j.job: [_egresses(topo, s, d, dport, table) for s, d, dport in j.ring_flows()] for j in jobs}
    crossing = Counter(e for paths in flows.values() for path in paths for e in path)
    rates = {e: topo.ports(e[0])[e[1]][2].rate_mbit for e in crossing}
    return {job: min((rates[e] / crossing[e] for path in paths for e in path if rates[e]), default=None)
            for job, paths in flows.items()}


def gate_pkts(share: float, step_s: float, rate_mbit: float, payload_bytes: int) -> int:
    """The gate (docs/design.md, "The gate") in data packets: `share` of a
    step of step_s at rate_mbit, in packets of payload_bytes; at least 1
    where the share is not 0.  A share of the step, not a count of packets,
    so the gate lingers the same part of a step after the last flow that is
    not ahead left the port at any scale: 2,048 packets are 1.6 % of the
    deployment's step, 15 % of fam_sizes' at K = 15 (experiments/README.md,
    "The gate").  ValueError past what the gate's register counts."""
    if share == 0:
        return 0
    n = max(1, round(share * step_s * rate_mbit * 1e6 / 8 / payload_bytes))
    if n > RUN_MAX:
        raise ValueError(f"symphony.gate_step: {share:g} of the scenario's step is {n} packets, "
                         f"more than the gate's register counts ({RUN_MAX})")
    return n
