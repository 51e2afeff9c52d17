"""How the flows that have bytes to send share the links at one instant.

Links and flows are plain indices here: `caps[l]` is what link l has left for
ring flows (cross traffic already taken off), `paths[f]` the links flow f
crosses.  Two allocations:

* `max_min`: max-min fairness by progressive filling: every flow that can
  still grow grows by the same amount until a link saturates; the flows on it
  freeze.
* `priority_max_min`: strict priority per link.  `low[f]` lists the links
  where flow f is outpacing (low priority); there it gets only what the other
  flows (high priority on that link) leave; within a class, max-min.

The priority rule (a flow's class is per link, so no global order exists):

1. Blocking fill.  Progressive filling in which a flow grows only while
   every link where it is low has no high flow left that can grow (all of
   them frozen).  If that blocks every flow still growing (low on one link
   behind a flow that is itself low on another link behind the first one:
   a cycle), they all grow together, as equals.  The result is feasible, and
   exact when a blocked flow's other links are not contended; otherwise a
   flow that shares a no-priority link (a NIC) with a blocked flow may take
   more than its fair share there while the blocked flow waits.
2. Refinement to the exact rule.  Given the high load h_l of every link,
   strict priority is plain max-min over virtual links: "l for its high
   flows" with capacity caps[l] and "l for its low flows" with capacity
   caps[l] - h_l.  Starting from the blocking fill's h, this is iterated; a
   fixed point (h unchanged) satisfies the strict-priority bottleneck
   condition on every link and is returned.  If none is reached within
   REFINE_ROUNDS, the blocking fill is returned (counted by the caller).
"""

from __future__ import annotations

from collections.abc import Sequence

# a link counts as saturated when less than this fraction of it is left:
# float sums of shares never hit zero exactly
SATURATED = 1e-9
REFINE_ROUNDS = 20


def _users(paths: Sequence[Sequence[int]]) -> dict[int, list[int]]:
    users: dict[int, list[int]] = {}
    for f, path in enumerate(paths):
        for link in path:
            users.setdefault(link, []).append(f)
    return users


def _blocking_fill(caps: Sequence[float], paths: Sequence[Sequence[int]],
                   low: Sequence[Sequence[int]]) -> list[float]:
    """Step 1 of the priority rule.  A water level rises; a flow that starts
    growing at level o has rate level - o.  Per link, `base` = capacity -
    frozen rates + the offsets o of its growing flows, so the link saturates
    at level base / (its growing flows); there its unfrozen flows freeze
    (blocked ones at 0), and a blocked flow starts growing once no link
    where it is low has an unfrozen high flow left."""
    users = _users(paths)
    n = len(paths)
    blocked, growing, frozen = 0, 1, 2
    state = [blocked] * n
    offset, rate = [0.0] * n, [0.0] * n
    base = {link: max(0.0, caps[link]) for link in users}
    count: dict[int, int] = {}          # growing flows per link, links without any left out
    high_left = dict.fromkeys(users, 0)     # unfrozen flows that are high on the link
    for f, path in enumerate(paths):
        for link in path:
            high_left[link] += link not in low[f]
    level = 0.0

    def start(f: int) -> None:
        state[f], offset[f] = growing, level
        for link in paths[f]:
            count[link] = count.get(link, 0) + 1
            base[link] += level

    def free(f: int) -> bool:
        return state[f] == blocked and all(high_left[link] == 0 for link in low[f])

    for f in range(n):
        if free(f):
            start(f)
    unfrozen = n
    while unfrozen:
        if not count:                   # every unfrozen flow waits for another: a cycle
            for f in range(n):
                if state[f] == blocked:
                    start(f)
        tight = min(count, key=lambda link: base[link] / count[link])
        level = max(level, base[tight] / count[tight])      # float rounding must not lower it
        released = []
        for f in users[tight]:
            if state[f] == frozen:
                continue
            was_growing = state[f] == growing
            rate[f] = level - offset[f] if was_growing else 0.0
            state[f] = frozen
            unfrozen -= 1
            for link in paths[f]:
                if was_growing:
                    base[link] -= level
                    count[link] -= 1
                    if not count[link]:
                        del count[link]
                if link not in low[f]:
                    high_left[link] -= 1
                    if not high_left[link]:
                        released.append(link)
        for link in released:
            for g in users[link]:
                if free(g):
                    start(g)
    return rate


def max_min(caps: Sequence[float], paths: Sequence[Sequence[int]]) -> list[float]:
    """Max-min fair rates of flows on links of capacity caps.  All flows not
    yet frozen sit at one water level; the next link to saturate is the one
    whose room over its unfrozen flows is least, and its flows freeze at that
    level (one pass per bottleneck level, no tolerance needed)."""
    users = _users(paths)
    count = {link: len(fs) for link, fs in users.items()}
    room = {link: max(0.0, caps[link]) for link in users}     # capacity minus the frozen flows' rates
    rate = [0.0] * len(paths)
    frozen = [False] * len(paths)
    level = 0.0
    while count:
        tight = min(count, key=lambda link: room[link] / count[link])
        # the level never falls: float rounding must not make it
        level = max(level, room[tight] / count[tight])
        for f in users[tight]:
            if frozen[f]:
                continue
            frozen[f], rate[f] = True, level
            for link in paths[f]:
                room[link] -= level
                count[link] -= 1
                if not count[link]:
                    del count[link]
    return rate


def _is_strict_priority(caps: Sequence[float], paths: Sequence[Sequence[int]], low: Sequence[Sequence[int]],
                        rate: Sequence[float]) -> bool:
    """Whether every flow has a bottleneck under strict priority: a link
    where it is high, the high flows fill the link and it is the largest of
    them; or where it is low, all flows fill the link and it is the largest
    low flow.  Then no flow can grow without taking from a flow of its class
    that is no larger, or from a higher class: the exact rule holds."""
    n_links = len(caps)
    high_sum, all_sum = [0.0] * n_links, [0.0] * n_links
    high_max, low_max = [0.0] * n_links, [0.0] * n_links
    for f, path in enumerate(paths):
        for link in path:
            all_sum[link] += rate[f]
            if link in low[f]:
                low_max[link] = max(low_max[link], rate[f])
            else:
                high_sum[link] += rate[f]
                high_max[link] = max(high_max[link], rate[f])

    def bottleneck(f: int, link: int) -> bool:
        full = caps[link] * (1 - SATURATED) - SATURATED
        tie = rate[f] * (1 + SATURATED) + SATURATED
        if link in low[f]:
            return all_sum[link] >= full and tie >= low_max[link]
        return high_sum[link] >= full and tie >= high_max[link]

    return all(any(bottleneck(f, link) for link in path) for f, path in enumerate(paths))


def _refine(caps: Sequence[float], paths: Sequence[Sequence[int]], low: Sequence[Sequence[int]],
            rate: list[float]) -> list[float] | None:
    """Iterate max-min over the virtual links of step 2 from `rate`; the
    fixed point, or None."""
    n_links = len(caps)
    # link l for its low flows is virtual link n_links + l
    vpaths = [[n_links + link if link in low[f] else link for link in path] for f, path in enumerate(paths)]
    for _ in range(REFINE_ROUNDS):
        high = [0.0] * n_links
        for f, path in enumerate(paths):
            for link in path:
                if link not in low[f]:
                    high[link] += rate[f]
        vcaps = list(caps) + [max(0.0, c - h) for c, h in zip(caps, high, strict=True)]
        new = max_min(vcaps, vpaths)
        if all(abs(a - b) <= SATURATED * max(1.0, a) for a, b in zip(new, rate, strict=True)):
            return new
        rate = new
    return None


def priority_max_min(caps: Sequence[float], paths: Sequence[Sequence[int]],
                     low: Sequence[Sequence[int]]) -> tuple[list[float], bool]:
    """Strict priority per link (see the module's docstring): the rates, and
    whether the exact rule was reached (False: the blocking fill's rates)."""
    if not any(low):
        return max_min(caps, paths), True
    blocking = _blocking_fill(caps, paths, low)
    if _is_strict_priority(caps, paths, low, blocking):
        return blocking, True
    exact = _refine(caps, paths, low, blocking)
    return (exact, True) if exact is not None else (blocking, False)
