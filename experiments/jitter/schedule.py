"""The seeded jitter schedule (pure: no I/O, no clock).

``make_schedule(spec, repeat)`` turns the spec's [[jitter]] entries into
concrete events: every range drawn from a generator seeded by (config seed,
repeat, entry index), every target resolved to a link or a host of the
topology.  Same seed and repeat -> the same events, byte for byte, so the
baseline and the Symphony run of one repeat see the same jitter.  Times are
seconds after t0 of the run (every agent up); where rate changes overlap on a
link, the lowest rate holds.  The kinds: experiments/README.md, "Config".
"""

from __future__ import annotations

import hashlib
import json
import random
from typing import Any

from experiments.config import ExperimentSpec
from experiments.jitter.blaster import CROSS_SOURCE_PORT, DISCARD_PORT
from topologies.network.links import VIA_FALLBACK
from topologies.spec.routes import Flow, path_links
from topologies.spec.topo import FABRIC_LINK, HOST_LINK, TopoSpec

CROSS_FLOW = Flow(CROSS_SOURCE_PORT, DISCARD_PORT)     # the simulation's blaster's packets (ECMP hashes them)

NO_NETEM = "no sch_netem on this kernel"
NETEM_FALLBACK = ("{why}: netem delay/jitter/loss on {link} applied as a rate "
                  "squeeze to {fraction:g} of its rate ({rate:g} Mbit/s) for the same period")
# a netem event's magnitudes: drawn before the link is picked, then (added
# later, so configs without them keep their draws) after it
NETEM_DRAWN = ("delay_ms", "jitter_ms", "loss_pct")
NETEM_DRAWN_AFTER = ("correlation_pct", "reorder_pct")
NETEM_FIELDS = (*NETEM_DRAWN, "distribution", *NETEM_DRAWN_AFTER)


def _rng(seed: int, repeat: int, entry: int) -> random.Random:
    # one generator per entry: adding an entry or changing one entry's range
    # leaves the draws of the others as they were
    digest = hashlib.sha256(f"symphony-jitter:{seed}:{repeat}:{entry}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def _draw(rng: random.Random, spec: Any) -> float:
    """Always consumes one draw, fixed values too, so the draws that follow
    do not shift when a value becomes a range."""
    u = rng.random()
    if isinstance(spec, list):
        lo, hi = spec
        return round(lo + u * (hi - lo), 6)
    return float(spec)


def _draw_int(rng: random.Random, spec: Any, n: int | None = None) -> int:
    u = rng.random()
    if spec == "random":
        return min(int(u * n), n - 1)
    if isinstance(spec, list):
        lo, hi = spec
        return min(lo + int(u * (hi - lo + 1)), hi)
    return int(spec)


def _link_rate(topo: TopoSpec, link: str) -> float:
    rate = topo.link(link).rate_mbit
    if not rate:
        raise ValueError(f"link {link} has no rate to squeeze (set topology.host_rate_mbit/fabric_rate_mbit)")
    return float(rate)


def _target_link(entry: dict, spec: ExperimentSpec, u: float) -> str:
    topo = spec.topo
    if "link" in entry:
        return entry["link"]
    if "host" in entry or "rank" in entry:
        host = entry.get("host") or spec.job(entry["job"]).hosts[entry["rank"]]
        (_, _, link), = topo.ports(host).values()
        return link.name
    classes = {"access": (HOST_LINK,), "fabric": (FABRIC_LINK,), "any": (HOST_LINK, FABRIC_LINK)}
    cands = sorted(link.name for link in topo.links if link.cls in classes[entry["pick"]])
    if not cands:
        raise ValueError(f"no {entry['pick']} link to pick from in this topology")
    return cands[min(int(u * len(cands)), len(cands) - 1)]


def make_schedule(spec: ExperimentSpec, repeat: int) -> list[dict]:
    """The concrete jitter events of one repeat, sorted by start (compute
    events, which have no start, first)."""
    events: list[dict] = []
    for index, entry in enumerate(spec.jitter):
        rng = _rng(spec.seed, repeat, index)
        for occ in range(entry["count"]):
            events.append(_event(entry, index, occ, rng, spec))
    events.sort(key=lambda e: (e["start_s"] if e["start_s"] is not None else -1.0, e["entry"], e["occurrence"]))
    for i, ev in enumerate(events):
        ev["id"] = i
    return events


def _event(entry: dict, index: int, occ: int, rng: random.Random, spec: ExperimentSpec) -> dict:
    topo = spec.topo
    kind = entry["kind"]
    ev: dict[str, Any] = {"id": None, "entry": index, "occurrence": occ, "kind": kind,
                          "link": None, "start_s": None, "end_s": None}
    if kind == "compute":
        job = spec.job(entry["job"])
        rank = _draw_int(rng, entry["rank"], job.ranks)
        it = _draw_int(rng, entry["iter"])
        delay = _draw(rng, entry["delay_s"])
        ev.update(job=job.job, rank=rank, host=job.hosts[rank],
                  params={"iter": it, "delay_s": delay}, applied_as="compute")
        return ev
    start = _draw(rng, entry["start_s"])
    duration = _draw(rng, entry["duration_s"])
    ev["start_s"] = start
    ev["end_s"] = round(start + duration, 6)
    if kind == "cross":
        rate = _draw(rng, entry["rate_mbit"])
        dst_ip = topo.host(entry["dst"]).ip
        links = path_links(topo, entry["src"], entry["dst"], flow=CROSS_FLOW)
        ev.update(src=entry["src"], dst=entry["dst"], links=links,
                  params={"rate_mbit": rate, "packet_bytes": entry["packet_bytes"], "ect": entry["ect"],
                          "dst_ip": dst_ip},
                  applied_as="cross")
        return ev
    magnitude = {}
    if kind == "rate":
        if "fraction" in entry:
            magnitude["fraction"] = _draw(rng, entry["fraction"])
        else:
            magnitude["rate_mbit"] = _draw(rng, entry["rate_mbit"])
    else:  # netem
        for key in NETEM_DRAWN:
            magnitude[key] = _draw(rng, entry[key])
    link = _target_link(entry, spec, rng.random())
    if kind == "netem":
        magnitude["distribution"] = entry["distribution"]
        for key in NETEM_DRAWN_AFTER:
            magnitude[key] = _draw(rng, entry[key])
    base = _link_rate(topo, link) if kind == "rate" or "fallback_fraction" in entry else None
    ev["link"] = link
    if kind == "rate":
        rate = magnitude.get("rate_mbit") or round(base * magnitude["fraction"], 6)
        ev.update(params={**magnitude, "rate_mbit": min(rate, base), "base_rate_mbit": base},
                  applied_as="rate")
    else:
        ev.update(params={**magnitude, "fallback_fraction": entry["fallback_fraction"], "base_rate_mbit": base},
                  applied_as="netem")
    return ev


def netem_kwargs(params: dict) -> dict:
    """A netem event's params as set_link_netem's keywords."""
    return {k: params[k] for k in NETEM_FIELDS if k in params}


def apply_fallbacks(events: list[dict], via: str, why: str = NO_NETEM) -> tuple[list[dict], list[str]]:
    """Events as they will be applied on this machine, and one line per
    fallback taken (the runner prints them).  via: how netem is applied
    here (topologies.network.links.delay_via): "netem" or "twin" keep the
    netem events and say so in their "via"; "fallback" makes each a rate
    squeeze of the same period."""
    out, notes = [], []
    for ev in events:
        ev = json.loads(json.dumps(ev))     # deep copy, stays JSON-clean
        if ev["kind"] == "netem":
            ev["via"] = via
        if ev["kind"] == "netem" and via == VIA_FALLBACK:
            p = ev["params"]
            rate = round(p["base_rate_mbit"] * p["fallback_fraction"], 6)
            p["rate_mbit"] = rate
            ev["applied_as"] = "rate"
            ev["fallback"] = NETEM_FALLBACK.format(why=why, link=ev["link"], fraction=p["fallback_fraction"],
                                                   rate=rate)
            notes.append(ev["fallback"])
        out.append(ev)
    return out, notes


def to_jsonl(events: list[dict]) -> str:
    return "".join(json.dumps(ev, sort_keys=True, separators=(",", ":")) + "\n" for ev in events)


def straggles(events: list[dict]) -> dict[int, list[dict]]:
    """job id -> the job file's [[straggle]] entries (delays of one rank and
    iteration added up)."""
    acc: dict[tuple[int, int, int], float] = {}
    for ev in events:
        if ev["applied_as"] == "compute":
            key = (ev["job"], ev["rank"], ev["params"]["iter"])
            acc[key] = round(acc.get(key, 0.0) + ev["params"]["delay_s"], 6)
    out: dict[int, list[dict]] = {}
    for (job, rank, it), delay in sorted(acc.items()):
        out.setdefault(job, []).append({"rank": rank, "iter": it, "delay_s": delay})
    return out


# --- the timeline of actions the injector performs -------------------------

def rate_changes(events: list[dict]) -> list[tuple[float, str, float, list[int]]]:
    """(time, link, rate_mbit, ids of the events in force) at every moment a
    link's effective rate changes.  The effective rate is the lowest of the
    squeezes in force, or the link's own rate when none is."""
    edges: list[tuple[float, int, int, dict]] = []
    for ev in events:
        if ev["applied_as"] == "rate":
            edges.append((ev["start_s"], 1, ev["id"], ev))
            edges.append((ev["end_s"], 0, ev["id"], ev))
    # at equal times, ends before starts: back-to-back squeezes do not stack
    edges.sort(key=lambda x: (x[0], x[1], x[2]))
    active: dict[str, dict[int, float]] = {}
    base: dict[str, float] = {}
    current: dict[str, float] = {}
    out: list[tuple[float, str, float, list[int]]] = []
    for t, is_start, ev_id, ev in edges:
        link = ev["link"]
        base[link] = ev["params"]["base_rate_mbit"]
        current.setdefault(link, base[link])
        if is_start:
            active.setdefault(link, {})[ev_id] = ev["params"]["rate_mbit"]
        else:
            active.get(link, {}).pop(ev_id, None)
        rates = active.get(link, {})
        eff = min(rates.values()) if rates else base[link]
        if eff != current[link]:
            current[link] = eff
            if out and out[-1][0] == t and out[-1][1] == link:
                out.pop()           # two edges at one instant: only the last rate is set
            out.append((t, link, eff, sorted(rates)))
    return out


def actions(events: list[dict]) -> list[dict]:
    """Everything the injector does, in time order: set_rate, cross_start,
    cross_stop, netem_start, netem_stop (the last two only where netem
    runs, tc netem or the twin).  Actions of a netem event carry its "via"
    (netem | twin | fallback: a set_rate that starts or ends a fallback
    squeeze), so jitter_applied.jsonl says how each entry was applied.
    Pure; the injector only performs them."""
    acts: list[dict] = []
    fallback_edges = {(t, ev["link"]) for ev in events if ev.get("via") == VIA_FALLBACK
                      for t in (ev["start_s"], ev["end_s"])}
    for t, link, rate, ids in rate_changes(events):
        act = {"t": t, "op": "set_rate", "link": link, "rate_mbit": rate, "events": ids}
        if (t, link) in fallback_edges:
            act["via"] = VIA_FALLBACK
        acts.append(act)
    for ev in events:
        if ev["applied_as"] in ("cross", "netem"):
            op = ev["applied_as"]
            via = {"via": ev.get("via", "netem")} if op == "netem" else {}
            acts.append({"t": ev["start_s"], "op": f"{op}_start", "event": ev["id"], **via})
            acts.append({"t": ev["end_s"], "op": f"{op}_stop", "event": ev["id"], **via})
    order = {"set_rate": 0, "netem_stop": 1, "cross_stop": 1, "netem_start": 2, "cross_start": 2}
    acts.sort(key=lambda a: (a["t"], order[a["op"]]))
    return acts
