"""A link's netem impairment as data: delay, jitter with one of netem's
distributions and its delay correlation, loss, reordering.  tc-netem takes
it where the kernel has sch_netem (``topologies.network.links.netem``), the
twin's delay lines where it does not (``topologies.switch.twin.delayline``).
Pure; the meaning of every field is netem's (docs/topologies.md, "Delay,
jitter and loss").
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields

# "uniform" is what tc gives when no distribution is named: it loads a table
# only for `distribution NAME`, and without one the kernel draws uniformly
# in [delay - jitter, delay + jitter) (tc-netem(8) says "normal"; tc does not)
DISTRIBUTIONS = ("uniform", "normal", "pareto", "paretonormal")
DEFAULT_LIMIT = 1000            # netem's: frames held at most
MAX_JITTER_MS = 2147.0          # netem caps jitter at INT_MAX ns


@dataclass(frozen=True)
class NetemParams:
    """delay_ms and jitter_ms per direction of a link; loss_pct, reorder_pct
    and correlation_pct (the delay's, netem's third `delay` value, with
    netem's effect: none below 100 %, see twin/delayline.py) in percent.
    reorder_pct: that share of frames is sent at once, the rest delayed
    (netem's `reorder P%` with its default gap 1).  Raises ValueError with a
    one-line message naming the field."""

    delay_ms: float = 0.0
    jitter_ms: float = 0.0
    loss_pct: float = 0.0
    distribution: str = "uniform"
    correlation_pct: float = 0.0
    reorder_pct: float = 0.0
    limit: int = DEFAULT_LIMIT

    def __post_init__(self) -> None:
        for name, hi in (("delay_ms", None), ("jitter_ms", MAX_JITTER_MS), ("loss_pct", 100.0),
                         ("correlation_pct", 100.0), ("reorder_pct", 100.0)):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
                raise ValueError(f"netem {name} must be a finite number >= 0, got {v!r}")
            if hi is not None and v > hi:
                raise ValueError(f"netem {name} must be <= {hi:g}, got {v!r}")
        if self.distribution not in DISTRIBUTIONS:
            raise ValueError(f"netem distribution {self.distribution!r} is unknown "
                             f"(known: {', '.join(DISTRIBUTIONS)})")
        if self.reorder_pct and not self.delay_ms:
            raise ValueError("netem reorder_pct needs delay_ms > 0 (reordered frames overtake delayed ones)")
        if self.distribution != "uniform" and self.jitter_ms and not self.delay_ms:
            raise ValueError(f"netem distribution {self.distribution!r} needs delay_ms > 0 (as tc netem)")
        if isinstance(self.limit, bool) or not isinstance(self.limit, int) or self.limit < 1:
            raise ValueError(f"netem limit must be an integer >= 1, got {self.limit!r}")

    @property
    def active(self) -> bool:
        """False when it does nothing (all zero): no delay line, no qdisc."""
        return bool(self.delay_ms or self.jitter_ms or self.loss_pct or self.reorder_pct)

    @property
    def delay_only(self) -> bool:
        """Only a fixed delay: every frame gets exactly delay_ms, in order,
        nothing lost, no random draw (a propagation delay)."""
        return not (self.jitter_ms or self.loss_pct or self.reorder_pct)

    def as_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> NetemParams:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise ValueError(f"netem: unknown field {unknown[0]!r} (known: {', '.join(sorted(known))})")
        return cls(**d)


def delay_points(topo, link: str) -> list[tuple[str, int, str]]:
    """Where a switch holds a link's delay and netem (the twin's delay
    lines; the simulation's too): (switch, port, direction).  Each switch
    end delays what it sends over the link (after its egress queue); a
    switch end facing a host also holds what the host sends, before its
    pipeline, so both directions of a host link are covered (a fabric link
    by each switch's egress).  topo: a topologies.spec.topo.TopoSpec."""
    spec = topo.link(link)
    out = []
    for node, port, other in ((spec.node1, spec.port1, spec.node2), (spec.node2, spec.port2, spec.node1)):
        if topo.is_switch(node):
            out.append((node, port, "egress"))
            if not topo.is_switch(other):
                out.append((node, port, "ingress"))
    return out
