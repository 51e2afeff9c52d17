"""Control-plane helpers for the Symphony program's state, target-neutral.

Every function talks to a client with SimpleSwitchThriftAPI's methods
(``table_add``, ``table_set_default``, ``table_clear``, ``register_write``):
p4-utils' SimpleSwitchThriftAPI for BMv2 or topologies.switch.twin.client.TwinClient
(or a twin Pipeline directly).  The pure halves (``*_entries``, ``*_params``,
``job_install_writes``) compute what to send and are unit-tested.

A job's transport sets its flows' mode (``tcp``): the step tag is 14 bits
(UDP source port) or 6 bits (DSCP of TCP segments), and the job's register
values are tags of that width.

Queue depths are in the target's unit: packets on BMv2 and the twin, 176-byte
cells on Tofino2; the caller converts Kmin, Kmax and K_sym.
"""

from __future__ import annotations

from contract import p4names as N
from contract.tags import tag_half, tag_mask

QDEPTH_MAX = (1 << N.QDEPTH_BITS) - 1


def prob_units(p: float, what: str = "probability") -> int:
    """A probability as the program's integer in units of 2^-16."""
    if not 0.0 <= float(p) <= 1.0:
        raise ValueError(f"{what} must be in [0, 1], got {p}")
    return round(float(p) * N.PROB_ONE)


# --- job install state ------------------------------------------------------

def job_install_writes(job_slot: int, flow_ids: list[int], first_step: int,
                       tcp: bool | int = False) -> list[tuple[str, int, int]]:
    """(register, index, value) writes that install a job: its flows'
    flow_step and its frontier at the step before the first step (so the
    first packet counts), in the mode's tag width, its W step_count slots
    at zero."""
    if not 0 <= job_slot < N.MAX_JOBS:
        raise ValueError(f"job_slot must be in 0..{N.MAX_JOBS - 1}, got {job_slot}")
    before = (first_step - 1) & tag_mask(tcp)
    writes = []
    for f in flow_ids:
        if not 0 <= f < N.MAX_FLOWS:
            raise ValueError(f"flow_id must be in 0..{N.MAX_FLOWS - 1}, got {f}")
        writes.append((N.FLOW_STEP, f, before))
    writes.append((N.FRONTIER, job_slot, before))
    writes += [(N.STEP_COUNT, N.step_slot(job_slot, k), 0) for k in range(N.W)]
    return writes


def install_job(client, job_slot: int, flow_ids: list[int], first_step: int = 0, tcp: bool | int = False) -> None:
    for name, index, value in job_install_writes(job_slot, flow_ids, first_step, tcp):
        client.register_write(name, index, value)


# --- symphony_flows ---------------------------------------------------------

def track_params(flow_id: int, job_slot: int, n_local: int, threshold: int, enabled: bool | int,
                 tcp: bool | int = False) -> list[str]:
    """Action parameters of symphony_flows' track(), checked against the
    program's sizes and widths (the threshold against the mode's tag: a
    distance of half the tag range or more is never 'ahead')."""
    if not 0 <= flow_id < N.MAX_FLOWS:
        raise ValueError(f"flow_id must be in 0..{N.MAX_FLOWS - 1}, got {flow_id}")
    if not 0 <= job_slot < N.MAX_JOBS:
        raise ValueError(f"job_slot must be in 0..{N.MAX_JOBS - 1}, got {job_slot}")
    if not 1 <= n_local <= 255:
        raise ValueError(f"n_local must be in 1..255, got {n_local}")
    half = tag_half(tcp)
    if not 0 <= threshold < half:
        mode = "TCP (6-bit DSCP tag)" if tcp else "UDP (14-bit tag)"
        raise ValueError(f"threshold must be in 0..{half - 1} for {mode}, got {threshold}")
    return [str(flow_id), str(job_slot), str(n_local), str(threshold), str(int(bool(enabled))),
            str(int(bool(tcp)))]


def add_flow(client, src_ip: str, dst_ip: str, dport: int, flow_id: int, job_slot: int, n_local: int,
             threshold: int, enabled: bool | int, tcp: bool | int = False):
    """One ring flow; tcp: the job runs over TCP (tag in the DSCP)."""
    return client.table_add(N.SYMPHONY_FLOWS, "track", [src_ip, dst_ip, str(dport)],
                            track_params(flow_id, job_slot, n_local, threshold, enabled, tcp))


# --- ECN parameters ---------------------------------------------------------

def queue_ecn_entries(kmin: int, kmax: int, pmax: float, max_entries: int = N.QUEUE_ECN_SIZE,
                      frame_packets: int = 1) -> list[tuple[str, int, int]]:
    """queue_ecn entries (range key, probability units, priority) for
    DCQCN/RED marking: p = Pmax (q - Kmin)/(Kmax - Kmin) when Kmin < q <=
    Kmax, always when q > Kmax; a frame of frame_packets packets at
    1 - (1 - p)^frame_packets (params.EcnParams).  One entry per depth while
    they fit in the table; beyond that the ramp is cut into equal bins,
    each with its mean."""
    if not isinstance(frame_packets, int) or frame_packets < 1:
        raise ValueError(f"need frame_packets >= 1, got {frame_packets!r}")
    if not 0 <= kmin <= kmax:
        raise ValueError(f"need 0 <= Kmin <= Kmax, got Kmin={kmin} Kmax={kmax}")
    pmax_units = prob_units(pmax, "Pmax")
    entries: list[tuple[int, int, int]] = []
    span = kmax - kmin
    if span > 0 and pmax_units > 0:
        bins = min(span, max_entries - 1)
        for b in range(bins):
            lo = kmin + 1 + (span * b) // bins
            hi = kmin + (span * (b + 1)) // bins
            mean = sum(_frame_units(pmax_units * (q - kmin) / span, frame_packets)
                       for q in range(lo, hi + 1)) / (hi - lo + 1)
            p = min(N.PROB_ONE, round(mean))
            if p > 0 and lo <= min(hi, QDEPTH_MAX):
                entries.append((lo, min(hi, QDEPTH_MAX), p))
    if kmax < QDEPTH_MAX:
        entries.append((kmax + 1, QDEPTH_MAX, N.PROB_ONE))
    return [(f"{lo}->{hi}", p, i + 1) for i, (lo, hi, p) in enumerate(entries)]


def _frame_units(units: float, frame_packets: int) -> float:
    """A packet's marking probability (units of 2^-16) as a frame's of that many packets."""
    if frame_packets == 1:          # the packet's own, not 1 - (1 - p) in floats: full packets install as before
        return units
    return N.PROB_ONE * (1 - (1 - units / N.PROB_ONE) ** frame_packets)


def install_queue_ecn(client, kmin: int, kmax: int, pmax: float, frame_packets: int = 1) -> int:
    client.table_clear(N.QUEUE_ECN)
    entries = queue_ecn_entries(kmin, kmax, pmax, frame_packets=frame_packets)
    for key, p, prio in entries:
        client.table_add(N.QUEUE_ECN, "queue_mark_prob", [key], [str(p)], prio)
    return len(entries)


def sym_ecn_params(k_sym: int = N.K_SYM_DEFAULT, p_sym: float = 1.0, gate: int = N.GATE_DEFAULT) -> list[str]:
    if not 0 <= k_sym <= QDEPTH_MAX:
        raise ValueError(f"K_sym must be in 0..{QDEPTH_MAX}, got {k_sym}")
    if not 0 <= gate <= N.RUN_MAX:
        raise ValueError(f"the gate must be in 0..{N.RUN_MAX} packets, got {gate}")
    return [str(k_sym), str(prob_units(p_sym, "P_sym")), str(gate)]


def install_sym_ecn(client, k_sym: int = N.K_SYM_DEFAULT, p_sym: float = 1.0, gate: int = N.GATE_DEFAULT) -> None:
    client.table_set_default(N.SYM_ECN, "set_sym_ecn", sym_ecn_params(k_sym, p_sym, gate))


def install_verdict(client, on: bool | int) -> None:
    """sym_verdict: the leaves' verdict carried onward and marked on (track
    "verdict"), or not (the program's default)."""
    client.table_set_default(N.SYM_VERDICT, "set_verdict", [str(int(bool(on)))])
