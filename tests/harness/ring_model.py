"""The ring AllReduce run in lockstep in memory, from hosts.ring's RingRank:
what every rank ends with when nothing is lost."""

import numpy as np

from contract.tags import steps_per_iteration
from hosts.ring import RingRank


def simulate(inputs: list[np.ndarray]) -> list[np.ndarray]:
    """Run the ring in lockstep in memory: every rank's result."""
    n = len(inputs)
    ranks = [RingRank(r, n, x) for r, x in enumerate(inputs)]
    for k in range(steps_per_iteration(n)):
        sent = [rk.send_bytes(k) for rk in ranks]
        for r, rk in enumerate(ranks):
            rk.apply(k, sent[(r - 1) % n])
    return [rk.buf for rk in ranks]
