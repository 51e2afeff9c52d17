"""What the control plane installs besides routes and flows: the [ecn] and
[symphony] tables, typed.  Defaults here are THE defaults (the experiment
config reads them); their ranges are the config's to check."""

from __future__ import annotations

from dataclasses import dataclass

from contract.p4names import GATE_DEFAULT, K_SYM_DEFAULT

# where the control plane installs a ring flow (SymphonyParams.track)
TRACKS = ("path", "leaves", "groups", "verdict")


@dataclass(frozen=True)
class EcnParams:
    """DCQCN/RED marking on every egress queue: probability ramps from 0 at
    kmin to pmax at kmax (packets), always past kmax.  frame_packets: the
    packets one frame stands for (the deployment simulation's coarse
    packets, set by experiments.config.scale, not a config key): a frame is
    marked as any of its packets would be, 1 - (1 - p)^frame_packets, since
    a receiver's CNP answers any marked packet of its interval."""

    kmin: int = 5
    kmax: int = 20
    pmax: float = 0.2
    frame_packets: int = 1


@dataclass(frozen=True)
class SymphonyParams:
    """threshold: steps ahead of the job's frontier a flow may run before it
    is marked; k_sym/p_sym: the queue depth and probability of that mark;
    gate_step: the gate's size as a share of the scenario's ring step (0:
    off), the config's key; gate_pkts: that share in the scenario's data
    packets, what the switch installs (derived by experiments.config: 0
    off, else mark a flow ahead only while fewer than this many ECT packets
    ahead have left its egress port since one that is not; docs/design.md,
    "The gate");
    track: where a ring flow is installed and counted in n_local, one of
    TRACKS: "path" at every switch its steps may cross, "leaves" at its
    source's and destination's access switches only, "groups" where "path"
    puts it but with n_local per flow, the size of its spine group
    (controlplane.group_n_local; docs/ecmp.md), "verdict" where "leaves"
    puts it, with every switch marking the flows an earlier switch found
    ahead (the leaves' verdict carried in the packet; docs/ecmp.md);
    enabled False installs the flows as the baseline (tracked, never marked)."""

    threshold: int = 1
    k_sym: int = K_SYM_DEFAULT
    p_sym: float = 1.0
    gate_step: float = 0.0
    gate_pkts: int = GATE_DEFAULT
    enabled: bool = True
    track: str = "path"
