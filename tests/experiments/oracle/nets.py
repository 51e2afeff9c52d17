"""Small networks for the oracle's tests: stars and a two-switch dumbbell,
every physical link full duplex (one directed Link each way)."""

from __future__ import annotations

from experiments.oracle import Link, RingJob


def duplex(a: str, b: str, rate_bps: float, delay_s: float = 0.0, switches: frozenset[str] = frozenset()) -> list[Link]:
    """Both directions of link a-b; a direction leaving a switch says so."""
    return [Link(f"{a}>{b}", rate_bps, delay_s, a if a in switches else None),
            Link(f"{b}>{a}", rate_bps, delay_s, b if b in switches else None)]


def star(hosts: list[str], rate_bps: float, delay_s: float = 0.0, switch: str = "s1") -> tuple[Link, ...]:
    return tuple(link for h in hosts for link in duplex(h, switch, rate_bps, delay_s, frozenset({switch})))


def star_path(a: str, b: str, switch: str = "s1") -> tuple[str, ...]:
    return (f"{a}>{switch}", f"{switch}>{b}")


def ring(job: int, hosts: list[str], message_bytes: int, iterations: int, path=star_path) -> RingJob:
    n = len(hosts)
    return RingJob(job, tuple(hosts), tuple(path(hosts[r], hosts[(r + 1) % n]) for r in range(n)),
                   message_bytes, iterations)


def hosts(n: int, first: int = 1) -> list[str]:
    return [f"h{i}" for i in range(first, first + n)]


def dumbbell(left: list[str], right: list[str], rate_bps: float, fabric_bps: float | None = None) -> tuple[Link, ...]:
    """Hosts `left` on switch s1, `right` on s2, one s1-s2 fabric link."""
    sw = frozenset({"s1", "s2"})
    links = [link for h in left for link in duplex(h, "s1", rate_bps, switches=sw)]
    links += [link for h in right for link in duplex(h, "s2", rate_bps, switches=sw)]
    return tuple(links + duplex("s1", "s2", fabric_bps or rate_bps, switches=sw))


def dumbbell_path(left: list[str]):
    """Path function for `ring` on a dumbbell whose s1 side holds `left`."""
    def path(a: str, b: str) -> tuple[str, ...]:
        sa, sb = ("s1" if a in left else "s2"), ("s1" if b in left else "s2")
        middle = () if sa == sb else (f"{sa}>{sb}",)
        return (f"{a}>{sa}", *middle, f"{sb}>{b}")
    return path
