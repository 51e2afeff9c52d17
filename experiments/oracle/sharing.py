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


def _growing(unfrozen: set[int], low: Sequence[Sequence[int]] | None, high_left: dict[int, int]) -> list[int]:
    """The unfrozen flows free to grow: none of their low links still has a
    growing high flow.  All of them when that leaves none (a cycle)."""
    if low is None:
        return list(unfrozen)
    free = [f for f in unfrozen if all(high_left[link] == 0 for link in low[f])]
    return free or list(unfrozen)


def _fill(caps: Sequence[float], paths: Sequence[Sequence[int]],
          low: Sequence[Sequence[int]] | None = None) -> list[float]:
    rate = [0.0] * len(paths)
    users = _users(paths)
    left = {link: max(0.0, caps[link]) for link in users}
    unfrozen = set(range(len(paths)))
    # per link: unfrozen flows that are high there (low flows wait for 0)
    high_left = {link: 0 for link in users}
    for f, path in enumerate(paths):
        lows = low[f] if low is not None else ()
        for link in path:
            high_left[link] += link not in lows
    while unfrozen:
        grow = _growing(unfrozen, low, high_left)
        count: dict[int, int] = {}
        for f in grow:
            for link in paths[f]:
                count[link] = count.get(link, 0) + 1
        tight = min(count, key=lambda link: left[link] / count[link])
        step = left[tight] / count[tight]
        for f in grow:
            rate[f] += step
        full = [tight]
        for link, c in count.items():
            left[link] -= step * c
            if link != tight and left[link] <= SATURATED * caps[link]:
                full.append(link)
        left[tight] = 0.0
        for link in full:
            for f in users[link]:
                if f in unfrozen:
                    unfrozen.discard(f)
                    lows = low[f] if low is not None else ()
                    for other in paths[f]:
                        high_left[other] -= other not in lows
    return rate


def max_min(caps: Sequence[float], paths: Sequence[Sequence[int]]) -> list[float]:
    """Max-min fair rates of flows on links of capacity caps."""
    return _fill(caps, paths)


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
        new = _fill(vcaps, vpaths)
        if all(abs(a - b) <= SATURATED * max(1.0, a) for a, b in zip(new, rate, strict=True)):
            return new
        rate = new
    return None


def priority_max_min(caps: Sequence[float], paths: Sequence[Sequence[int]],
                     low: Sequence[Sequence[int]]) -> tuple[list[float], bool]:
    """Strict priority per link (see the module's docstring): the rates, and
    whether the exact rule was reached (False: the blocking fill's rates)."""
    if not any(low):
        return _fill(caps, paths), True
    blocking = _fill(caps, paths, low)
    exact = _refine(caps, paths, low, blocking)
    return (exact, True) if exact is not None else (blocking, False)
