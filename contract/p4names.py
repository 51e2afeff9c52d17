"""Names, widths and sizes of the Symphony P4 program, in one place.

The control plane (both targets) and the software twin take every table,
action, register, counter and constant from here.  tests/contract/test_p4names.py
parses the P4 declarations in p4/ and fails when they disagree with this
module; the step tag's widths and arithmetic are contract.tags', so there is
no second list kept by hand.

Control-plane conventions (the same calls on BMv2 and the twin):

- ``forward``: ``table_add("forward", "ipv4_forward", ["10.0.0.2/32"],
  ["00:00:0a:00:00:02", "2"])``.  As in p4lang/tutorials, the new source MAC
  is the destination MAC the sender used; the TTL is decremented; packets
  with TTL <= 1, IPv4 options (ihl != 5), a version other than 4, a parser
  error (truncated header) or no route are dropped, as is every non-IPv4
  frame (hosts use static ARP).
- ``forward`` under an ECMP routing, for a destination with several
  equal-cost next hops: ``ecmp_forward(dst_mac, group, sport_mask)`` (the
  MACs and TTL as ipv4_forward, then the 5-tuple's CRC-32 with the source
  port masked picks a bucket, contract.ecmp) and ``ecmp_select``:
  ``table_add("ecmp_select", "ecmp_port", ["0", "17"], ["3"])`` ((group,
  bucket) -> egress port).
- ``symphony_flows``: ``table_add("symphony_flows", "track",
  [src_ip, dst_ip, str(dport)], [flow_id, job_slot, n_local, threshold,
  enabled, tcp])``.  The key's port is the UDP or TCP destination port
  (``meta.l4_dport``, set by the parser).  Tagged UDP packets (source port
  0xC000 | tag, 14-bit tag) and TCP segments (tag in the DSCP, 6 bits) are
  looked up; ``tcp`` (the job's transport) says which one the flow is: a
  packet of the other protocol is forwarded but not tracked.  Serial
  arithmetic uses the mode's tag width (``tag_bits(tcp)``); register values
  are tags of that width held in 16 bits.
- ECN parameters live in two egress tables rather than registers:
  ``queue_ecn`` (range on the queue depth at enqueue -> ``queue_mark_prob(p)``)
  carries Kmin, Kmax and Pmax as ranges, and the keyless ``sym_ecn`` carries
  K_sym, P_sym and the gate in its default action ``set_sym_ecn(k_sym,
  p_sym, gate)`` (gate 0: off; else a flow ahead is marked only while fewer
  than ``gate`` ECT packets ahead have left its egress port in a row, counted
  per port in the register ``ahead_run``).
  Probabilities are integers in units of 2^-16 (PROB_ONE = always).
- The keyless ``sym_verdict``'s default action ``set_verdict(on)`` (0 by
  default) turns on the leaves' verdict (track ``verdict``): an ECT packet
  of a tracked flow leaves with the reserved IPv4 flag
  (contract.tags.VERDICT_FLAG) saying whether this switch would mark it (the
  flow enabled and outpacing); an ECT packet of a flow the switch does not
  track is a Symphony candidate when it carries that flag, its marks counted
  per egress port in ``verdict_marks``.
  topologies/switch/program.py turns (Kmin, Kmax, Pmax, K_sym, P_sym, gate)
  into these entries.
- Counters are indexed by flow id (``pkts``, ``step_jumps``, ``sym_marks``,
  ``flow_queue_marks``) or by egress port (``queue_marks``,
  ``verdict_marks``: PORT_COUNTERS); each counts
  packets and bytes.  ``step_jumps`` counts a flow's packets whose tag is
  more than the step window (``step_window``) from the flow's newest step.
"""

from __future__ import annotations

from dataclasses import dataclass

# The step tag is contract.tags'; its width and mask functions are re-exported
# here, beside the other names the control plane and the twin take.
from contract.ecmp import BUCKET_BITS as ECMP_BUCKET_BITS
from contract.ecmp import BUCKET_TABLE_SIZE as ECMP_SELECT_SIZE
from contract.ecmp import BUCKETS as ECMP_BUCKETS
from contract.ecmp import GROUPS_SIZE as ECMP_GROUPS
from contract.tags import DSCP_TAG_BITS, DSCP_TAG_MASK, TAG_BITS, TAG_MASK, VERDICT_BIT, tag_half
from contract.tags import TAG_PORT_BASE as TAG_BASE
from contract.tags import tag_bits as tag_bits
from contract.tags import tag_mask as tag_mask

# --- constants (p4/include/constants.p4) ----------------------------------
TAG_HALF = tag_half(False)
DSCP_TAG_HALF = tag_half(True)     # TCP mode: the tag in the DSCP
W = 64                     # step_count slots per job
W_BITS = 6
STEP_WINDOW = W                    # a flow's step window, UDP (step_window)
DSCP_STEP_WINDOW = DSCP_TAG_HALF - 1   # TCP: the 6-bit tag's half range less one
MAX_FLOWS = 1024
MAX_JOBS = 64
STEP_SLOTS = MAX_JOBS * W
NUM_PORTS = 512
PROB_ONE = 1 << 16
K_SYM_DEFAULT = 1
GATE_DEFAULT = 0           # sym_ecn's default gate: off
RUN_MAX = 0xFFFF           # ahead_run saturates at its width
FORWARD_SIZE = 4096         # one /32 route per host, up to the simulation's 4,096 hosts
FLOWS_SIZE = 1024
QUEUE_ECN_SIZE = 256
SYM_ECN_SIZE = 1           # keyless: the default entry only
SYM_VERDICT_SIZE = 1       # keyless: the default entry only
QDEPTH_BITS = 19           # enq_qdepth width on v1model and Tofino2
PORT_BITS = 9

# The names of the #define / const constants in constants.p4 and their values.
P4_CONSTANTS = {
    "SYM_TAG_BITS": TAG_BITS,
    "SYM_TAG_BASE": TAG_BASE,
    "SYM_TAG_MASK": TAG_MASK,
    "SYM_TAG_HALF": TAG_HALF,
    "SYM_DSCP_TAG_BITS": DSCP_TAG_BITS,
    "SYM_DSCP_TAG_MASK": DSCP_TAG_MASK,
    "SYM_DSCP_TAG_HALF": DSCP_TAG_HALF,
    "SYM_W": W,
    "SYM_W_BITS": W_BITS,
    "SYM_STEP_WINDOW": STEP_WINDOW,
    "SYM_DSCP_STEP_WINDOW": DSCP_STEP_WINDOW,
    "SYM_MAX_FLOWS": MAX_FLOWS,
    "SYM_MAX_JOBS": MAX_JOBS,
    "SYM_STEP_SLOTS": STEP_SLOTS,
    "SYM_NUM_PORTS": NUM_PORTS,
    "SYM_PROB_ONE": PROB_ONE,
    "SYM_K_SYM_DEFAULT": K_SYM_DEFAULT,
    "SYM_GATE_DEFAULT": GATE_DEFAULT,
    "SYM_RUN_MAX": RUN_MAX,
    "SYM_FORWARD_SIZE": FORWARD_SIZE,
    "SYM_FLOWS_SIZE": FLOWS_SIZE,
    "SYM_QUEUE_ECN_SIZE": QUEUE_ECN_SIZE,
    "SYM_SYM_ECN_SIZE": SYM_ECN_SIZE,
    "SYM_SYM_VERDICT_SIZE": SYM_VERDICT_SIZE,
    "SYM_VERDICT_BIT": VERDICT_BIT,
    "SYM_ECMP_BUCKET_BITS": ECMP_BUCKET_BITS,
    "SYM_ECMP_BUCKETS": ECMP_BUCKETS,
    "SYM_ECMP_GROUPS": ECMP_GROUPS,
    "SYM_ECMP_SELECT_SIZE": ECMP_SELECT_SIZE,
    "ETHERTYPE_IPV4": 0x0800,
    "IP_PROTO_TCP": 6,
    "IP_PROTO_UDP": 17,
}


@dataclass(frozen=True)
class Register:
    name: str
    width: int
    size: int


@dataclass(frozen=True)
class Counter:
    name: str
    size: int


@dataclass(frozen=True)
class Table:
    name: str
    keys: tuple[tuple[str, str, int], ...]   # (P4 field, match kind, width)
    actions: tuple[str, ...]
    default: str
    size: int | None


# registers: tags held in 16 bits (Tofino register widths are 8/16/32)
REGISTERS = {r.name: r for r in (
    Register("flow_step", 16, MAX_FLOWS),     # per flow: newest step tag seen
    Register("step_count", 16, STEP_SLOTS),   # per job x W: arrivals at a step
    Register("frontier", 16, MAX_JOBS),       # per job: newest step all local flows reached
    Register("ahead_run", 16, NUM_PORTS),     # per egress port: ECT packets ahead in a row (the gate)
)}

COUNTERS = {c.name: c for c in (
    Counter("pkts", MAX_FLOWS),               # per flow
    Counter("step_jumps", MAX_FLOWS),         # per flow: tags beyond the step window (step_window)
    Counter("sym_marks", MAX_FLOWS),          # per flow: Symphony marks
    Counter("flow_queue_marks", MAX_FLOWS),   # per flow: queue marks
    Counter("queue_marks", NUM_PORTS),        # per egress port: queue marks
    Counter("verdict_marks", NUM_PORTS),      # per egress port: Symphony marks on a verdict carried in
)}

# action -> ((param, width), ...)
ACTIONS = {
    "ipv4_forward": (("dst_mac", 48), ("port", PORT_BITS)),
    "ecmp_forward": (("dst_mac", 48), ("group", 8), ("sport_mask", 16)),
    "ecmp_port": (("port", PORT_BITS),),
    "drop": (),
    "track": (("flow_id", 16), ("job_slot", 8), ("n_local", 8), ("threshold", 16), ("enabled", 1),
              ("tcp", 1)),
    "queue_mark_prob": (("prob", 17),),
    "set_sym_ecn": (("k", QDEPTH_BITS), ("p", 17), ("g", 16)),
    "set_verdict": (("on", 1),),
    "NoAction": (),
}

TABLES = {t.name: t for t in (
    Table("forward", (("hdr.ipv4.dst_addr", "lpm", 32),), ("ipv4_forward", "ecmp_forward", "drop"), "drop",
          FORWARD_SIZE),
    Table("ecmp_select", (("meta.ecmp_group", "exact", 8), ("meta.ecmp_bucket", "exact", ECMP_BUCKET_BITS)),
          ("ecmp_port", "drop"), "drop", ECMP_SELECT_SIZE),
    Table("symphony_flows", (("hdr.ipv4.src_addr", "exact", 32), ("hdr.ipv4.dst_addr", "exact", 32),
                             ("meta.l4_dport", "exact", 16)), ("track", "NoAction"), "NoAction", FLOWS_SIZE),
    Table("queue_ecn", (("meta.qdepth", "range", QDEPTH_BITS),), ("queue_mark_prob", "NoAction"), "NoAction",
          QUEUE_ECN_SIZE),
    Table("sym_ecn", (), ("set_sym_ecn",), "set_sym_ecn", SYM_ECN_SIZE),
    Table("sym_verdict", (), ("set_verdict",), "set_verdict", SYM_VERDICT_SIZE),
)}

# the parameters of the keyless tables' default actions as the program declares them
DEFAULT_PARAMS = {"sym_ecn": (K_SYM_DEFAULT, PROB_ONE, GATE_DEFAULT), "sym_verdict": (0,)}

# convenient names for callers
FORWARD, SYMPHONY_FLOWS, QUEUE_ECN, SYM_ECN = "forward", "symphony_flows", "queue_ecn", "sym_ecn"
SYM_VERDICT = "sym_verdict"
ECMP_SELECT = "ecmp_select"
FLOW_STEP, STEP_COUNT, FRONTIER, AHEAD_RUN = "flow_step", "step_count", "frontier", "ahead_run"
PKTS, SYM_MARKS, QUEUE_MARKS, FLOW_QUEUE_MARKS = "pkts", "sym_marks", "queue_marks", "flow_queue_marks"
STEP_JUMPS = "step_jumps"
VERDICT_MARKS = "verdict_marks"
PORT_COUNTERS = (QUEUE_MARKS, VERDICT_MARKS)     # indexed by egress port; the others by flow id


def max_ranks(tcp: bool | int) -> int:
    """Largest ring the program tracks in a mode.  A ring of N ranks spreads
    at most N-1 steps; that spread must stay below the serial half range of
    the tag (else a newer step reads as older) and below W (else a
    step_count slot is reused while the older step is still counting):
    N - 1 < min(W, 2^(w-1)).  UDP: 64 ranks (W); TCP: 32 ranks (the 6-bit tag)."""
    return min(W, tag_half(tcp))


def step_window(tcp: bool | int) -> int:
    """How far a flow's tag may be from its newest step: 1..window after it
    is a new step; more than the window away, either way, is a jump
    (counted in step_jumps, moving nothing).  A ring flow moves one step at a
    time and its ring spreads at most N-1 < W, so it never jumps.  UDP: W;
    TCP: 31, the 6-bit tag's half range less one (only a tag 32 away jumps)."""
    return DSCP_STEP_WINDOW if tcp else STEP_WINDOW


def step_slot(job_slot: int, step: int) -> int:
    """Index into step_count of a job's step (job_slot * W + step mod W)."""
    return (job_slot << W_BITS) | (step & (W - 1))
