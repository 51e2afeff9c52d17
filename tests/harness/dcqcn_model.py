"""What DCQCN's equations predict, from hosts.dcqcn's own state machines on a
virtual clock: a reaction point's trajectory under given CNPs, and a closed
loop of a paced sender, CE marks and a notification point."""

import heapq
import random
from collections.abc import Callable, Iterable

from hosts.dcqcn import INF, DcqcnParams, NotificationPoint, ReactionPoint


def trajectory(params: DcqcnParams, cnp_times: Iterable[float], t_end: float,
               t0: float = 0.0) -> list[tuple[float, float, float, float]]:
    """(t, Rc, Rt, alpha) at every reported change of a ReactionPoint that
    starts at t0 and receives CNPs at ``cnp_times``, up to t_end.  Timer
    events are visited at their own times, so the list is exact."""
    rp = ReactionPoint(params, t0)
    out = [(t0, rp.rate_bps, rp.target_bps, rp.alpha)]
    pending = sorted(t for t in cnp_times if t0 <= t <= t_end)
    i = 0
    while True:
        t_next = min(rp._t_alpha, rp._t_dec, rp._t_inc)   # every timer, reportable or not
        t_cnp = pending[i] if i < len(pending) else INF
        if min(t_next, t_cnp) > t_end:
            break
        if t_cnp <= t_next:
            changed = rp.on_cnp(t_cnp)
            i += 1
            t = t_cnp
        else:
            changed = rp.advance(t_next)
            t = t_next
        if changed:
            out.append((t, rp.rate_bps, rp.target_bps, rp.alpha))
        if i >= len(pending) and rp.next_event_time() == INF:
            break
    return out


def first_time(points: list[tuple[float, float, float, float]], pred: Callable[[float], bool],
               after: float = -INF) -> float | None:
    """First time t >= after at which Rc satisfies pred (None if never)."""
    for t, rc, _rt, _alpha in points:
        if t >= after and pred(rc):
            return t
    return None


def closed_loop(params: DcqcnParams, mark_p: float, t_on: float, t_off: float, t_end: float,
                one_way_s: float, packet_bytes: int = 1450, seed: int = 1,
                ) -> tuple[list[tuple[float, float, float, float]], list[float]]:
    """What the equations predict for a backlogged sender paced at Rc whose
    packets are CE-marked with probability ``mark_p`` when they reach the
    receiver in [t_on, t_off): the receiver's NotificationPoint answers with
    CNPs that take ``one_way_s`` back.  Returns the (t, Rc, Rt, alpha) points
    and the CNP arrival times at the sender."""
    rng = random.Random(seed)
    rp = ReactionPoint(params, 0.0)
    np_ = NotificationPoint(params.cnp_interval_s)
    points = [(0.0, rp.rate_bps, rp.target_bps, rp.alpha)]
    cnp_heap: list[float] = []
    cnp_times: list[float] = []
    next_send = 0.0
    bits = packet_bytes * 8
    while True:
        t_cnp = cnp_heap[0] if cnp_heap else INF
        t = min(next_send, t_cnp, rp.next_event_time())
        if t > t_end:
            return points, cnp_times
        if t == t_cnp:
            heapq.heappop(cnp_heap)
            cnp_times.append(t)
            changed = rp.on_cnp(t)
        elif t == next_send:
            changed = rp.advance(t)
            arrive = t + one_way_s
            ce = t_on <= arrive < t_off and rng.random() < mark_p
            if np_.on_data("flow", ce, arrive):
                heapq.heappush(cnp_heap, arrive + one_way_s)
            changed = rp.on_bytes_sent(packet_bytes, t) or changed
            next_send = t + bits / rp.rate_bps
        else:
            changed = rp.advance(t)
        if changed:
            points.append((t, rp.rate_bps, rp.target_bps, rp.alpha))
