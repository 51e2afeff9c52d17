"""How the flows that have bytes to send share the links at one instant.

Links and flows are plain indices here: `caps[l]` is what link l has left for
ring flows (cross traffic already taken off), `paths[f]` the links flow f
crosses.  Two allocations:

* `max_min`: max-min fairness by progressive filling: the flows that can
  still grow rise together until a link saturates; the flows on it freeze.
* `priority_max_min`: strict priority per link.  `low[f]` lists the links
  where flow f is outpacing (low priority); there it gets only what the other
  flows (high priority on that link) leave; within a class, max-min.

The priority rule (a flow's class is per link, so no global order exists):

1. Blocking fill.  Progressive filling in which a flow starts to grow only
   once no link where it is low has a high flow left that can grow (all of
   them are frozen).  Flows that wait for each other in a closed cycle (A
   low on one link behind B, B low on another link behind A, and nothing
   else in the chain) start to grow together, as equals.  The result is feasible, and
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

# relative tolerance of the checks on a result: float sums of shares never
# hit a capacity exactly
TOLERANCE = 1e-9
REFINE_ROUNDS = 100     # the iteration converges geometrically where it converges; rare cases need many rounds


def _users(paths: Sequence[Sequence[int]]) -> dict[int, list[int]]:
    users: dict[int, list[int]] = {}
    for f, path in enumerate(paths):
        for link in path:
            users.setdefault(link, []).append(f)
    return users


def _waiting_in_a_cycle(blocked: list[int], waits_for: dict[int, set[int]]) -> list[int]:
    """The blocked flows that wait only, through any chain, on flows that wait
    for them back: a closed cycle that nothing but a saturated link ends."""
    reach: dict[int, set[int]] = {}
    for f in blocked:
        seen, todo = set(), list(waits_for[f])
        while todo:
            g = todo.pop()
            if g not in seen:
                seen.add(g)
                todo.extend(waits_for.get(g, ()))      # a growing flow waits for nobody
        reach[f] = seen
    return [f for f in blocked if f in reach[f] and all(f in reach.get(g, ()) for g in reach[f])]


def _blocking_fill(caps: Sequence[float], paths: Sequence[Sequence[int]],
                   low: Sequence[Sequence[int]]) -> list[float]:
    """Step 1 of the priority rule.  A water level rises; a flow that starts
    growing at level o has rate level - o.  Per link, `base` = capacity -
    frozen rates + the offsets o of its growing flows, so the link saturates
    at level base / (its growing flows); there its unfrozen flows freeze
    (blocked ones at 0).  A blocked flow starts growing once no link where it
    is low has an unfrozen high flow left, or when it waits in a cycle."""
    users = _users(paths)
    n = len(paths)
    blocked, growing, frozen = 0, 1, 2
    state = [blocked] * n
    offset, rate = [0.0] * n, [0.0] * n
    base = {link: max(0.0, caps[link]) for link in users}
    count: dict[int, int] = {}          # growing flows per link, links without any left out
    level = 0.0

    def start(f: int) -> None:
        state[f], offset[f] = growing, level
        for link in paths[f]:
            count[link] = count.get(link, 0) + 1
            base[link] += level

    def waits_for(f: int) -> set[int]:
        return {g for link in low[f] for g in users[link] if state[g] != frozen and link not in low[g]}

    def start_the_free() -> None:
        waiting = {f: waits_for(f) for f in range(n) if state[f] == blocked}
        for f, others in waiting.items():
            if not others:
                start(f)
        for f in _waiting_in_a_cycle([f for f, others in waiting.items() if others], waiting):
            start(f)

    start_the_free()
    unfrozen = n
    while unfrozen:
        tight = min(count, key=lambda link: base[link] / count[link])
        level = max(level, base[tight] / count[tight])      # float rounding must not lower it
        for f in users[tight]:
            if state[f] == frozen:
                continue
            if state[f] == growing:
                rate[f] = level - offset[f]
                for link in paths[f]:
                    base[link] -= level
                    count[link] -= 1
                    if not count[link]:
                        del count[link]
            state[f] = frozen
            unfrozen -= 1
        if unfrozen:
            start_the_free()
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
        full = caps[link] * (1 - TOLERANCE) - TOLERANCE
        tie = rate[f] * (1 + TOLERANCE) + TOLERANCE
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
        if all(abs(a - b) <= TOLERANCE * max(1.0, a) for a, b in zip(new, rate, strict=True)):
            return new if _is_strict_priority(caps, paths, low, new) else None
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
