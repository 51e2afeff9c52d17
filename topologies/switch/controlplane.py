"""The control plane, one module for both targets (BMv2 and the twin).

The pure half (``plan``) computes what every switch needs from the topology,
its routes and the placed jobs: `forward` entries, the job flows it tracks
with their n_local, the per-port queue rate and depth.  The I/O half
(``install``, ``dump_switch``) pushes a plan through a client with
SimpleSwitchThriftAPI's methods (p4-utils' for bmv2, TwinClient for soft).
What n_local counts, the transport modes and the queue rate units (packets/s
on bmv2, bits/s on the twin): docs/topologies.md.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from contract import ecmp
from contract import p4names as pn
from contract.files import write_atomic
from contract.tags import DSCP_TAG_BITS, TAG_BITS, tag_half
from topologies.spec.placement import PlacedJob
from topologies.spec.routes import candidate_ports, hop_indices, next_ports, ring_flow, ring_switches, route
from topologies.spec.topo import TopoSpec
from topologies.switch import program
from topologies.switch.bmv2 import CTRL_FRAME_BYTES, CTRL_PRIORITY
from topologies.switch.params import TRACKS, EcnParams, SymphonyParams

# bmv2's packets/s queue rate assumes frames of one size: the jobs' data
# frames (the network passes their size: payload + headers), 1500 bytes when
# it names none
ASSUMED_PACKET_BYTES = 1500
RATE_UNITS = ("pps", "bps")


def rate_to_pps(rate_mbit: float | None, packet_bytes: int = ASSUMED_PACKET_BYTES) -> int | None:
    """Queue drain rate for a link rate, frames of packet_bytes assumed;
    None = unlimited."""
    if not rate_mbit:
        return None
    return max(1, round(rate_mbit * 1e6 / (8 * packet_bytes)))


def rate_to_ctrl_pps(rate_mbit: float | None) -> int | None:
    """bmv2's control-frame queue (ACKs, CNPs: topologies.switch.bmv2): its
    frames drain as if CTRL_FRAME_BYTES long; None = unlimited."""
    return rate_to_pps(rate_mbit, CTRL_FRAME_BYTES)


def rate_to_bps(rate_mbit: float | None) -> int | None:
    """A link rate in bits/s for the twin's byte-rate queues; None = unlimited."""
    if not rate_mbit:
        return None
    return max(1, round(rate_mbit * 1e6))


def rate_unit(target: str) -> str:
    """The queue rate unit a target gets: "bps" on the twin (soft), which can
    serialise by frame length; "pps" on bmv2, whose set_queue_rate has only
    that: the data queue in full-size frames, the control-frame queue
    (priority CTRL_PRIORITY) in CTRL_FRAME_BYTES frames.  "pps" is for bmv2
    only: the twin has one queue per port and takes no priority."""
    return "bps" if target == "soft" else "pps"


def _check_unit(unit: str) -> None:
    if unit not in RATE_UNITS:
        raise ValueError(f"queue rate unit must be 'pps' or 'bps', got {unit!r}")


def _set_pps(client, port: int, pps: int, ctrl_pps: int) -> None:
    """bmv2: both queues of a port.  p4-utils' set_queue_rate takes priority
    0 (falsy) as "every queue of the port", so the port first, then its
    control-frame queue."""
    client.set_queue_rate(pps, port)
    client.set_queue_rate(ctrl_pps, port, CTRL_PRIORITY)


def set_port_rate(client, port: int, rate_mbit: float, unit: str = "pps",
                  packet_bytes: int = ASSUMED_PACKET_BYTES) -> None:
    """One egress port's drain rate through the client, in the target's unit
    (packets/s: frames of packet_bytes)."""
    _check_unit(unit)
    if unit == "bps":
        client.set_queue_rate_bps(rate_to_bps(rate_mbit), port)
    else:
        _set_pps(client, port, rate_to_pps(rate_mbit, packet_bytes), rate_to_ctrl_pps(rate_mbit))


@dataclass(frozen=True)
class ForwardEntry:
    prefix: str        # "10.0.0.1/32"
    port: int          # under ECMP with a choice: the per-destination port, for reference
    dst_mac: str
    group: int | None = None      # ECMP: the group among whose members the hash picks (ecmp_forward)
    sport_mask: int = 0xFFFF      # ECMP: the source-port bits the hash reads (contract.ecmp.SPORT_MASKS)


@dataclass(frozen=True)
class EcmpEntry:
    """ecmp_select: (group, bucket) -> egress port, candidates[bucket % n]."""
    group: int
    bucket: int
    port: int


@dataclass(frozen=True)
class FlowEntry:
    src_ip: str
    dst_ip: str
    dport: int
    flow_id: int       # index into the per-flow registers of this switch
    job_slot: int      # index of the job at this switch (step_count/frontier)
    job: int           # job id (informational)
    n_local: int
    threshold: int
    enabled: int       # 0: baseline, 1: Symphony
    tcp: int = 0       # 1: the job runs over TCP (step tag in the DSCP), 0: UDP


@dataclass(frozen=True)
class PortQueue:
    port: int
    link: str
    pps: int | None    # None: unlimited
    depth: int
    bps: int | None = None   # the same rate in bits/s (the twin's unit); None: unlimited
    ctrl_pps: int | None = None   # bmv2's control-frame queue at that port; None: unlimited
    ctrl_lane: bool = False       # the twin: control frames ahead of data (bmv2 always)


@dataclass
class SwitchPlan:
    name: str
    forward: list[ForwardEntry]
    flows: list[FlowEntry]
    queues: list[PortQueue]
    jobs: dict[int, int]            # job id -> job slot at this switch
    ecmp: list[EcmpEntry] = field(default_factory=list)   # routing ecmp*: the groups' buckets


# --- pure computations -----------------------------------------------------

def forward_entries(topo: TopoSpec, table: dict | None = None) -> dict[str, list[ForwardEntry]]:
    """Per switch, one /32 per host; under an ECMP routing a destination
    with several equal-cost next hops points at the group of those ports
    (ecmp_groups), per-destination routing keeps its entries as they were."""
    table = table if table is not None else next_ports(topo)
    groups = ecmp_groups(topo)
    mask = ecmp.SPORT_MASKS.get(topo.routing, 0xFFFF)
    cands = candidate_ports(topo)
    out: dict[str, list[ForwardEntry]] = {s.name: [] for s in topo.switches}
    for (sw, dst), port in sorted(table.items()):
        h = topo.host(dst)
        group = groups[sw].get(cands[(sw, dst)])
        out[sw].append(ForwardEntry(f"{h.ip}/32", port, h.mac, group, mask if group is not None else 0xFFFF))
    return out


def ecmp_groups(topo: TopoSpec) -> dict[str, dict[tuple[int, ...], int]]:
    """switch -> {candidate ports: group id}, one group per distinct set of
    two or more equal-cost ports (a leaf's uplinks: one group for every
    remote host), ids dense in the sets' order; empty for per-destination
    routing.  Groups by port set, not per destination, so a leaf holds
    BUCKETS entries, not BUCKETS per host."""
    out: dict[str, dict[tuple[int, ...], int]] = {s.name: {} for s in topo.switches}
    if not ecmp.is_ecmp(topo.routing):
        return out
    for (sw, _), ports in sorted(candidate_ports(topo).items()):
        if len(ports) > 1 and ports not in out[sw]:
            if len(out[sw]) >= ecmp.GROUPS_SIZE:
                raise ValueError(f"switch {sw}: more than {ecmp.GROUPS_SIZE} ECMP groups")
            out[sw][ports] = len(out[sw])
    return out


def ecmp_entries(topo: TopoSpec) -> dict[str, list[EcmpEntry]]:
    """switch -> ecmp_select's entries: every bucket of every group, bucket
    b -> the group's ports[b % n] (contract.ecmp.pick)."""
    return {sw: [EcmpEntry(g, b, ecmp.pick(ports, b)) for ports, g in groups.items() for b in range(ecmp.BUCKETS)]
            for sw, groups in ecmp_groups(topo).items()}


def tracking_switches(topo: TopoSpec, src: str, dst: str, dport: int, track: str = "path",
                      table: dict | None = None) -> list[str]:
    """The switches that track a ring flow (symphony.track), in hop order:
    ``path`` and ``groups`` every switch its data may cross over all its
    steps (routes.ring_switches); ``leaves`` and ``verdict`` the access
    switches of its source and destination only (one if they share it),
    which see every step of the flow whatever the routing (docs/ecmp.md)."""
    if track in ("path", "groups"):
        return ring_switches(topo, src, dst, dport, table)
    if track in ("leaves", "verdict"):
        return list(dict.fromkeys((topo.access_switch(src)[0], topo.access_switch(dst)[0])))
    raise ValueError(f"symphony.track: unknown track {track!r} (known: {', '.join(TRACKS)})")


def flows_by_switch(topo: TopoSpec, jobs: Sequence[PlacedJob], table: dict | None = None, track: str = "path"
                    ) -> dict[str, list[tuple[int, str, str, int]]]:
    """switch -> [(job id, src host, dst host, data port)] of the ring flows
    it tracks (tracking_switches), in job then rank order.  Under ``ecmp``
    a flow's path changes with its step, so with track ``path`` a flow is
    listed at every switch any of its steps may cross, and n_local counts
    those: at a spine more flows than any one step brings, which is what
    the issue's Symphony-on-ECMP does (docs/ecmp.md); track ``groups``
    lists it where ``path`` does (flow_n_local gives its own n_local);
    track ``leaves`` lists it at its two access switches only."""
    table = table if table is not None else next_ports(topo)
    out: dict[str, list] = {s.name: [] for s in topo.switches}
    for job in jobs:
        for src, dst, dport in job.ring_flows():
            for sw in tracking_switches(topo, src, dst, dport, track, table):
                out[sw].append((job.job, src, dst, dport))
    return out


def n_local(topo: TopoSpec, jobs: Sequence[PlacedJob], table: dict | None = None, track: str = "path"
            ) -> dict[tuple[str, int], int]:
    """(switch, job id) -> number of the job's ring flows the switch tracks."""
    return _job_counts(flows_by_switch(topo, jobs, table, track))


def _job_counts(by_switch: dict[str, list[tuple[int, str, str, int]]]) -> dict[tuple[str, int], int]:
    counts: dict[tuple[str, int], int] = {}
    for sw, flows in by_switch.items():
        for job, *_ in flows:
            counts[(sw, job)] = counts.get((sw, job), 0) + 1
    return counts


def check_groups(topo: TopoSpec) -> None:
    """Refuse track ``groups`` where a job's spine groups change from step
    to step (ValueError, one line): CRC-32 is affine over XOR, so a step's
    tag shifts every flow's bucket by one XOR, which keeps the groups only
    when the buckets' candidates are a power of two (docs/ecmp.md)."""
    if topo.routing != "ecmp":
        return
    for (sw, _), ports in sorted(candidate_ports(topo).items()):
        if len(ports) & (len(ports) - 1):
            raise ValueError(f"symphony.track groups: switch {sw} spreads over {len(ports)} equal-cost ports, "
                             "and a job's flows keep their spine groups from step to step only over a "
                             "power-of-two count")


def group_n_local(topo: TopoSpec, job: PlacedJob, table: dict | None = None
                  ) -> dict[tuple[str, tuple[str, str, int]], int]:
    """track ``groups``: (switch, ring flow) -> how many of the job's flows
    cross, at any one step, the switch the flow crosses at that hop.  Since
    a job's flows keep their groups over steps (check_groups), the count at
    step 0 is the count at every step: wherever a group meets, its switch's
    step_count completes the step (docs/ecmp.md, "Tracking spine groups");
    the caller has refused a fabric that regroups them (check_groups)."""
    flows = job.ring_flows()
    step0 = [[hop.switch for hop in route(topo, src, dst, table, ring_flow(0, dport))] for src, dst, dport in flows]
    crossing: dict[str, int] = {}
    for path in step0:
        for sw in path:
            crossing[sw] = crossing.get(sw, 0) + 1
    out = {}
    for flow, path in zip(flows, step0, strict=True):
        hop = hop_indices(topo, flow[0])
        for sw in ring_switches(topo, *flow, table):
            out[(sw, flow)] = crossing[path[hop[sw]]]
    return out


def flow_n_local(topo: TopoSpec, jobs: Sequence[PlacedJob], table: dict | None = None, track: str = "path",
                 by_switch: dict | None = None) -> dict[tuple[str, int, str, str, int], int]:
    """(switch, job id, src, dst, data port) -> the n_local of that flow's
    entry: the job's flows the switch tracks (n_local), or under track
    ``groups`` the flow's spine group (group_n_local).  by_switch:
    flows_by_switch's answer for this track, where the caller has it."""
    table = table if table is not None else next_ports(topo)
    if track == "groups":
        check_groups(topo)
        return {(sw, job.job, *flow): n for job in jobs for (sw, flow), n in group_n_local(topo, job, table).items()}
    by_switch = by_switch if by_switch is not None else flows_by_switch(topo, jobs, table, track)
    counts = _job_counts(by_switch)
    return {(sw, job, src, dst, dport): counts[(sw, job)] for sw, flows in by_switch.items()
            for job, src, dst, dport in flows}


def check_job(job: int, n_ranks: int, tcp: bool, threshold: int) -> None:
    """Refuse a job the program cannot track (ValueError, one line): a ring
    spreads up to N-1 steps, which must stay below the mode's serial half
    range and W; the outpacing threshold must be below the half range too."""
    mode = (f"transport tcp carries the step in a {DSCP_TAG_BITS}-bit DSCP tag" if tcp else
            f"transport udp carries the step in a {TAG_BITS}-bit source-port tag")
    limit = pn.max_ranks(tcp)
    if n_ranks > limit:
        raise ValueError(f"job {job}: {mode} and a {pn.W}-slot window, so a ring of at most "
                         f"{limit} ranks, got {n_ranks}")
    if not 0 <= threshold < tag_half(tcp):
        raise ValueError(f"job {job}: {mode}, so symphony.threshold must be in "
                         f"0..{tag_half(tcp) - 1}, got {threshold}")


def check_jobs(jobs: Sequence[PlacedJob], threshold: int) -> None:
    for job in jobs:
        check_job(job.job, len(job.hosts), job.transport == "tcp", threshold)


def flow_entries(topo: TopoSpec, jobs: Sequence[PlacedJob], symphony: SymphonyParams,
                 max_flows: int = pn.MAX_FLOWS, max_jobs: int = pn.MAX_JOBS,
                 table: dict | None = None) -> dict[str, tuple[list[FlowEntry], dict[int, int]]]:
    """switch -> (flow entries, job id -> slot).  Flow ids and job slots are
    dense per switch, in job then rank order; raises ValueError for a job
    the program cannot track or a switch that would need more than its
    register sizes."""
    check_jobs(jobs, symphony.threshold)
    by_switch = flows_by_switch(topo, jobs, table, symphony.track)
    counts = flow_n_local(topo, jobs, table, symphony.track, by_switch)
    tcp = {job.job: int(job.transport == "tcp") for job in jobs}
    out = {}
    for sw, flows in by_switch.items():
        slots: dict[int, int] = {}
        entries = []
        for job, src, dst, dport in flows:
            slot = slots.setdefault(job, len(slots))
            entries.append(FlowEntry(topo.host(src).ip, topo.host(dst).ip, dport, len(entries), slot, job,
                                     counts[(sw, job, src, dst, dport)], symphony.threshold,
                                     int(symphony.enabled), tcp[job]))
        if len(entries) > max_flows:
            raise ValueError(f"switch {sw}: {len(entries)} job flows exceed the program's {max_flows} flow slots")
        if len(slots) > max_jobs:
            raise ValueError(f"switch {sw}: {len(slots)} jobs exceed the program's {max_jobs} job slots")
        out[sw] = (entries, slots)
    return out


def port_queues(topo: TopoSpec, packet_bytes: int = ASSUMED_PACKET_BYTES) -> dict[str, list[PortQueue]]:
    """Every switch egress port drains at its link's rate (the twin and BMv2
    queue there, where the program sees the depth); packets/s for frames of
    packet_bytes."""
    out = {}
    for sw in topo.switches:
        out[sw.name] = [PortQueue(port, link.name, rate_to_pps(link.rate_mbit, packet_bytes), topo.queue_depth,
                                  rate_to_bps(link.rate_mbit), rate_to_ctrl_pps(link.rate_mbit),
                                  topo.control_priority)
                        for port, (_, _, link) in sorted(topo.ports(sw.name).items())]
    return out


def arp_entries(topo: TopoSpec) -> dict[str, list[tuple[str, str]]]:
    """host -> [(ip, mac)] of every other host (all hosts share one subnet,
    the switches route by IPv4 destination and rewrite the MACs)."""
    return {h.name: [(o.ip, o.mac) for o in topo.hosts if o.name != h.name] for h in topo.hosts}


def plan(topo: TopoSpec, jobs: Sequence[PlacedJob], symphony: SymphonyParams,
         packet_bytes: int = ASSUMED_PACKET_BYTES) -> dict[str, SwitchPlan]:
    """What every switch gets; ValueError before anything is installed for
    a job or a switch load the program cannot track.  packet_bytes: the
    frame size bmv2's packets/s queue rates assume."""
    table = next_ports(topo)
    fwd = forward_entries(topo, table)
    flows = flow_entries(topo, jobs, symphony, table=table)
    queues = port_queues(topo, packet_bytes)
    groups = ecmp_entries(topo)
    return {s.name: SwitchPlan(s.name, fwd[s.name], flows[s.name][0], queues[s.name], flows[s.name][1],
                               groups[s.name])
            for s in topo.switches}


# --- I/O: push a plan through a client, read the state back ------------------
#
# `client` has SimpleSwitchThriftAPI's methods (p4-utils for bmv2, TwinClient
# for soft).  Egress ports always count from 1 here: the Thrift API takes
# port 0 (falsy) as "all ports".

def install(client, plan: SwitchPlan, ecn: EcnParams, symphony: SymphonyParams, rate_unit: str = "pps") -> None:
    """Forwarding, job flows with their initial register state, ECN
    parameters, queue rate and depth per egress port.  The program-specific
    encodings are topologies.switch.program's.  rate_unit: "pps" (bmv2's
    set_queue_rate) or "bps" (the twin's set_queue_rate_bps)."""
    _check_unit(rate_unit)
    for e in plan.forward:
        if e.group is None:
            client.table_add(pn.FORWARD, "ipv4_forward", [e.prefix], [e.dst_mac, str(e.port)])
        else:
            client.table_add(pn.FORWARD, "ecmp_forward", [e.prefix], [e.dst_mac, str(e.group), str(e.sport_mask)])
    for g in plan.ecmp:
        client.table_add(pn.ECMP_SELECT, "ecmp_port", [str(g.group), str(g.bucket)], [str(g.port)])
    for f in plan.flows:
        program.add_flow(client, f.src_ip, f.dst_ip, f.dport, f.flow_id, f.job_slot, f.n_local, f.threshold,
                         f.enabled, f.tcp)
    for job, slot in plan.jobs.items():
        # flows and frontier start at the step before the first (0), in the
        # job's tag width (all its flows share the mode)
        flows = [f for f in plan.flows if f.job == job]
        program.install_job(client, slot, [f.flow_id for f in flows], first_step=0, tcp=flows[0].tcp)
    n_queue_ecn = program.install_queue_ecn(client, ecn.kmin, ecn.kmax, ecn.pmax, ecn.frame_packets)
    program.install_sym_ecn(client, symphony.k_sym, symphony.p_sym, symphony.gate_pkts)
    if symphony.track == "verdict":
        program.install_verdict(client, True)
    verify_entries(client, plan, n_queue_ecn)
    for q in plan.queues:
        if q.port < 1:
            raise ValueError(f"switch {plan.name}: egress port {q.port} (0 means 'all ports' to Thrift)")
        client.set_queue_depth(q.depth, q.port)
        if rate_unit == "bps" and q.ctrl_lane:
            client.set_ctrl_lane(True, q.port)
        if rate_unit == "bps" and q.bps:
            client.set_queue_rate_bps(q.bps, q.port)
        elif rate_unit == "pps" and q.pps:
            _set_pps(client, q.port, q.pps, q.ctrl_pps)


def verify_entries(client, plan: SwitchPlan, n_queue_ecn: int | None = None) -> None:
    """Count the installed entries back where the client can: p4-utils'
    Thrift API, used bare, prints an error and carries on when an entry is
    refused (topologies.switch.bmv2.Bmv2Client raises instead; this also
    catches a switch that held entries from before)."""
    count = getattr(client, "table_num_entries", None)
    if count is None:
        return
    want_counts = [(pn.FORWARD, len(plan.forward)), (pn.SYMPHONY_FLOWS, len(plan.flows))]
    if plan.ecmp:
        want_counts.append((pn.ECMP_SELECT, len(plan.ecmp)))
    if n_queue_ecn is not None:
        want_counts.append((pn.QUEUE_ECN, n_queue_ecn))
    for table, want in want_counts:
        got = count(table)
        if got != want:
            raise RuntimeError(f"switch {plan.name}: table {table} holds {got} entries, {want} installed")


def _cell(v) -> dict:
    """A counter cell as {"packets", "bytes"} whatever the client returns:
    a CounterValue (the twin's client, Bmv2Client), a dict, or a bare
    p4-utils SimpleSwitchThriftAPI's (bytes, packets) tuple."""
    if hasattr(v, "packets"):
        return {"packets": int(v.packets), "bytes": int(v.bytes)}
    if isinstance(v, dict):
        return {"packets": int(v.get("packets", 0)), "bytes": int(v.get("bytes", 0))}
    if isinstance(v, (list, tuple)):
        return {"packets": int(v[1]), "bytes": int(v[0])}
    return {"packets": int(v), "bytes": 0}


def dump_switch(client, plan: SwitchPlan) -> dict:
    """Every register (whole arrays) and every counter cell the plan uses
    (flow counters at its flow ids, port counters at its ports; cells no
    flow or port maps to stay zero), with the flow table for reference."""
    registers = {name: [int(x) for x in client.register_read(name)] for name in pn.REGISTERS}
    flow_ids = [f.flow_id for f in plan.flows]
    ports = [q.port for q in plan.queues]
    counters = {}
    for name in pn.COUNTERS:
        idx = ports if name in pn.PORT_COUNTERS else flow_ids
        counters[name] = {str(i): _cell(client.counter_read(name, i)) for i in idx}
    out = {"registers": registers, "counters": counters,
           "flows": [dict(f.__dict__) for f in plan.flows],
           "jobs": {str(job): slot for job, slot in plan.jobs.items()},
           "queues": [dict(q.__dict__) for q in plan.queues]}
    if plan.ecmp:           # per-destination routing's dumps stay as they were
        out["ecmp"] = [dict(g.__dict__) for g in plan.ecmp]
    return out


def write_dumps(clients: dict, plans: dict[str, SwitchPlan], target: str, out_dir: Path | str) -> dict[str, Path]:
    """switches/<name>.json: every counter and register of every switch
    (dump_switch), each file whole or not at all (contract.files.write_atomic:
    a full disk leaves no file, nor a cut one).  An OSError names the switch
    and the file and keeps its errno; files already written stay."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = {}
    for name, client in clients.items():
        data = dump_switch(client, plans[name])
        data.update(switch=name, target=target)
        path = out_dir / f"{name}.json"
        write_atomic(path, json.dumps(data, indent=1, sort_keys=True), f"switch {name}'s registers and counters")
        written[name] = path
    return written
