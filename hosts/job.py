"""The job file: one ring AllReduce job, as every agent of the job reads it.

`parse_job(dict) -> JobSpec` is the one validation of a job: it checks every
field and raises `JobError` with a one-line message naming the field (the
agent calls it through `load_job(path)`, experiments when a config is
checked).  `dump_job(spec, path)` writes a file that `load_job` reads back to
the same spec.  The format is in docs/hosts.md.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import math
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomli_w

from contract.tags import TRANSPORTS
from hosts import dcqcn, ring
from hosts.udp.params import FaultParams, UdpParams

# deadlines derived from the bandwidth bound: this many times the bound plus slack
DEADLINE_FACTOR = 10.0
STEP_SLACK_S = 5.0      # covers peers that start a few seconds apart
RUN_SLACK_S = 15.0
START_SLACK_S = 10.0    # extra for the run's first step: every agent must have started
UNKNOWN_RATE_BPS = 10e6  # link rate assumed for deadlines when the job names none
MAX_STRAGGLE_S = 3600.0  # a [[straggle]] delay (of one rank and iteration) is at most this
# an agent's peak RSS with a tiny message: 36.7 MB measured; 4 MiB more than the
# 40 MiB first set, which another machine of the same kind exceeded by 1 MiB
AGENT_BASE_BYTES = 44 * 2**20
PRECOMPUTE_BYTES = 64 << 20    # inputs and references computed before the first step up to this size
# A message as large as a deployment's, scaled (the simulation carries no
# data then); its chunk must fit the wire's 32-bit offsets.  What an agent
# holding data can do is the machine's memory's to say (experiments.config.machine).
MAX_MESSAGE_BYTES = 2**40
MAX_CHUNK_BYTES = 2**32
DEFAULT_PRESET = "emulation"
# the [dcqcn] keys that are not overrides of a DcqcnParams field
DCQCN_KEYS = ("preset", "line_rate_mbit", "step_ms", "timer_floor_ms")
# the experiments layer hands every job its scenario's step (a chunk of a few bytes at
# 10 Tbit/s in the simulation is nanoseconds), so the floor only refuses nonsense
STEP_MS_MIN = 1e-9


class JobError(ValueError):
    """A job file that cannot run; the message is one line naming the field."""


@dataclass(frozen=True)
class RankSpec:
    rank: int
    ip: str
    host: str | None = None


@dataclass(frozen=True)
class Straggle:
    rank: int
    iter: int
    delay_s: float


@dataclass(frozen=True)
class Deadlines:
    step_s: float | None = None
    run_s: float | None = None
    rate_mbit: float | None = None     # the rate the derived ones assume; None: the line rate


@dataclass(frozen=True)
class JobSpec:
    job: int
    data_port: int
    message_bytes: int
    iterations: int
    ranks: tuple[RankSpec, ...]
    transport: str = "udp"
    seed: int = 1
    udp: UdpParams = field(default_factory=UdpParams)
    dcqcn: dict = field(default_factory=dict)      # DCQCN_KEYS, overrides by name
    deadlines: Deadlines = field(default_factory=Deadlines)
    straggle: tuple[Straggle, ...] = ()
    faults: FaultParams = field(default_factory=FaultParams)

    @property
    def n_ranks(self) -> int:
        return len(self.ranks)

    @property
    def ips(self) -> list[str]:
        return [r.ip for r in self.ranks]

    @property
    def n_elems(self) -> int:
        return self.message_bytes // ring.ITEM

    @property
    def line_rate_bps(self) -> float | None:
        mbit = self.dcqcn.get("line_rate_mbit")
        return None if mbit is None else float(mbit) * 1e6

    @property
    def line_step_s(self) -> float | None:
        """A ring step at line rate (the largest chunk's bits over the line
        rate): what the deployment's regime ratios count in; None without a
        line rate."""
        rate = self.line_rate_bps
        return None if rate is None else dcqcn.step_time_s(self.message_bytes, self.n_ranks, rate)

    @property
    def dcqcn_preset(self) -> str:
        return self.dcqcn.get("preset", DEFAULT_PRESET)

    @property
    def dcqcn_overrides(self) -> dict:
        """[dcqcn] overrides of DcqcnParams fields, by name."""
        return {k: v for k, v in self.dcqcn.items() if k not in DCQCN_KEYS}

    @property
    def regime_step_s(self) -> float:
        """The ring step time the emulation preset derives its timers from:
        [dcqcn] step_ms, else a step at line rate (the largest chunk's bits
        over the line rate; 10 Mbit/s when the job names none)."""
        return _regime_step_s(self.dcqcn, self.message_bytes, self.n_ranks)

    @property
    def timer_floor_s(self) -> float | None:
        """[dcqcn] timer_floor_ms in seconds; None: hosts.dcqcn's TIMER_FLOOR_S."""
        ms = self.dcqcn.get("timer_floor_ms")
        return None if ms is None else ms / 1000.0

    @property
    def dcqcn_params(self) -> dcqcn.DcqcnParams | None:
        """The DCQCN parameters the job's agents build (hosts.rank); None
        without rate control (preset off, or no line rate to start from)."""
        if self.dcqcn_preset == dcqcn.PRESET_OFF or self.line_rate_bps is None:
            return None
        return dcqcn.make_params(self.dcqcn_preset, self.line_rate_bps, self.regime_step_s, self.timer_floor_s,
                                 **self.dcqcn_overrides)

    def straggle_delay(self, rank: int, iteration: int) -> float:
        return sum(s.delay_s for s in self.straggle if s.rank == rank and s.iter == iteration)


def derived_deadlines(spec: JobSpec) -> tuple[float, float]:
    """(step_s, run_s): DEADLINE_FACTOR times the bandwidth bound of a step and
    of the whole run, plus slack and the straggle delays; [deadlines] step_s
    and run_s override.  The bound is at [deadlines] rate_mbit where given
    (the share of a bottleneck the job's flows can count on beside other
    jobs' flows, which the experiments derive), else at the line rate."""
    given = spec.deadlines.rate_mbit
    rate = given * 1e6 if given is not None else spec.line_rate_bps or UNKNOWN_RATE_BPS
    n = spec.n_ranks
    chunk = -(-spec.n_elems // n) * ring.ITEM
    step_bound = chunk * 8 / rate
    run_bound = ring.bandwidth_bound_s(spec.message_bytes, n, rate) * spec.iterations
    max_straggle = max((s.delay_s for s in spec.straggle), default=0.0)
    all_straggle = sum(s.delay_s for s in spec.straggle)
    step_s = DEADLINE_FACTOR * step_bound + STEP_SLACK_S + max_straggle
    run_s = DEADLINE_FACTOR * run_bound + RUN_SLACK_S + all_straggle
    d = spec.deadlines
    return (d.step_s if d.step_s is not None else step_s,
            d.run_s if d.run_s is not None else run_s)


def precomputed(iterations: int, message_bytes: int) -> bool:
    """Whether the agent draws every iteration's input and reference before
    the first step (they fit in PRECOMPUTE_BYTES)."""
    return 2 * iterations * message_bytes <= PRECOMPUTE_BYTES


def drawn_ahead(iterations: int, message_bytes: int) -> int:
    """How many iterations' inputs and references an agent draws before it
    logs `ready`: all when they fit in PRECOMPUTE_BYTES, else the first (it
    holds them from its first step on anyway, so drawing them early costs no
    memory; drawn after the start, a large job's first step waited for them:
    the demo's six 40 MB ranks at K = 50 started 4.2 s late, the victim alone
    on the spine meanwhile)."""
    return iterations if precomputed(iterations, message_bytes) else 1


def bytes_drawn_before_ready(spec: JobSpec) -> int:
    """What one agent of the job draws before `ready`: every rank's input of
    each iteration drawn ahead (the reference is their sum)."""
    return drawn_ahead(spec.iterations, spec.message_bytes) * spec.n_ranks * spec.message_bytes


def agent_memory_bytes(n_ranks: int, message_bytes: int, iterations: int = 1) -> int:
    """An agent's peak memory.  While it computes an iteration's reference
    it holds every rank's input (N x S), its own input, the result and two
    chunk-sized temporaries of the sum, (N + 2 + 2/N) x S, on top of the
    interpreter with numpy and the transport (AGENT_BASE_BYTES); beside that
    the iterations drawn ahead (2 S each, at most PRECOMPUTE_BYTES), or,
    drawing one iteration at a time, the last iteration's buffers and what
    the allocator keeps of them (5 S).  Measured as the peak RSS of agents
    on loopback (docs/hosts.md, "Memory"); a test keeps the two together."""
    if precomputed(iterations, message_bytes):
        held = 2 * (iterations - 1) * message_bytes
    else:
        held = 5 * message_bytes if iterations > 1 else 0
    return AGENT_BASE_BYTES + math.ceil((n_ranks + 2 + 2 / n_ranks) * message_bytes) + held


def first_step_slack(spec: JobSpec) -> float:
    """Extra time the run's first step gets on top of the derived step
    deadline (agents of a job start one by one); none when [deadlines] step_s
    is given."""
    return START_SLACK_S if spec.deadlines.step_s is None else 0.0


# --- reading -------------------------------------------------------------------

def _int(table: dict, key: str, where: str, lo: int, hi: int, default=None) -> int:
    name = f"{where}{key}"
    if key not in table:
        if default is None:
            raise JobError(f"{name}: missing")
        return default
    v = table[key]
    if isinstance(v, bool) or not isinstance(v, int):
        raise JobError(f"{name}: expected an integer, got {v!r}")
    if not lo <= v <= hi:
        raise JobError(f"{name}: {v} outside {lo}..{hi}")
    return v


def _num(table: dict, key: str, where: str, lo: float, hi: float, default=None) -> float | None:
    name = f"{where}{key}"
    if key not in table:
        return default
    v = table[key]
    if isinstance(v, bool) or not isinstance(v, (int, float)) or math.isnan(v):
        raise JobError(f"{name}: expected a number, got {v!r}")
    if not lo <= v <= hi:
        raise JobError(f"{name}: {v} outside {lo}..{hi}")
    return float(v)


def _table(doc: dict, key: str) -> dict:
    v = doc.get(key, {})
    if not isinstance(v, dict):
        raise JobError(f"{key}: expected a table")
    return v


def _array(doc: dict, key: str) -> list:
    v = doc.get(key, [])
    if not isinstance(v, list) or not all(isinstance(x, dict) for x in v):
        raise JobError(f"{key}: expected an array of tables ([[{key}]])")
    return v


def _no_unknown(table: dict, known, where: str) -> None:
    for k in table:
        if k not in known:
            raise JobError(f"{where}{k}: unknown field")


def _params(cls, table: dict, where: str):
    """Build UdpParams/FaultParams, turning their ValueError into a JobError."""
    known = {f.name for f in dataclasses.fields(cls)}
    _no_unknown(table, known, where)
    try:
        return cls(**table)
    except ValueError as e:
        raise JobError(f"{where}{e}") from None


def parse_job(doc: dict) -> JobSpec:
    top = ("job", "data_port", "message_bytes", "iterations", "transport", "seed", "ranks",
           "udp", "dcqcn", "deadlines", "straggle", "faults")
    _no_unknown(doc, top, "")
    job = _int(doc, "job", "", 0, 65535)
    data_port = _int(doc, "data_port", "", 1, 65534)
    if data_port + 1 >= 0xC000:
        raise JobError(f"data_port: {data_port} and its control port must lie below the "
                       f"step tag range 0xC000..0xFFFF")
    iterations = _int(doc, "iterations", "", 1, 1_000_000)
    transport = doc.get("transport", "udp")
    if transport not in TRANSPORTS:
        raise JobError(f"transport: {transport!r} is not one of {', '.join(TRANSPORTS)}")
    seed = _int(doc, "seed", "", 0, 2**63, default=1)

    ranks_doc = _array(doc, "ranks")
    if len(ranks_doc) < 2:
        raise JobError(f"ranks: a ring needs at least 2 ranks, got {len(ranks_doc)}")
    if len(ranks_doc) > 1024:
        raise JobError(f"ranks: at most 1024 ranks, got {len(ranks_doc)}")
    ranks, seen = [], set()
    for i, r in enumerate(ranks_doc):
        where = f"ranks[{i}]."
        _no_unknown(r, ("rank", "ip", "host"), where)
        rank = _int(r, "rank", where, 0, 65535)
        if rank != i:
            raise JobError(f"{where}rank: ring order is list order, expected {i}, got {rank}")
        ip = r.get("ip")
        try:
            ip = str(ipaddress.IPv4Address(ip))
        except (ipaddress.AddressValueError, ValueError, TypeError):
            raise JobError(f"{where}ip: {ip!r} is not an IPv4 address") from None
        if ip in seen:
            raise JobError(f"{where}ip: {ip} is used by another rank")
        seen.add(ip)
        host = r.get("host")
        if host is not None and not isinstance(host, str):
            raise JobError(f"{where}host: expected a string")
        ranks.append(RankSpec(rank, ip, host))
    n = len(ranks)

    message_bytes = _int(doc, "message_bytes", "", ring.ITEM * n, MAX_MESSAGE_BYTES)
    if message_bytes % ring.ITEM:
        raise JobError(f"message_bytes: {message_bytes} is not a multiple of {ring.ITEM} (float32)")
    if message_bytes // n >= MAX_CHUNK_BYTES:
        raise JobError(f"message_bytes: {message_bytes} over {n} ranks makes chunks of {message_bytes // n} bytes; "
                       f"a step's offsets are 32-bit, so a chunk must stay below {MAX_CHUNK_BYTES}")

    udp = _params(UdpParams, _table(doc, "udp"), "udp.")
    faults = _params(FaultParams, _table(doc, "faults"), "faults.")
    dcqcn = _dcqcn(_table(doc, "dcqcn"), message_bytes, n)

    dl = _table(doc, "deadlines")
    _no_unknown(dl, ("step_s", "run_s", "rate_mbit"), "deadlines.")
    deadlines = Deadlines(_num(dl, "step_s", "deadlines.", 0.001, 1e7),
                          _num(dl, "run_s", "deadlines.", 0.001, 1e8),
                          _num(dl, "rate_mbit", "deadlines.", 1e-12, 1e7))

    straggle = []
    for i, s in enumerate(_array(doc, "straggle")):
        where = f"straggle[{i}]."
        _no_unknown(s, ("rank", "iter", "delay_s"), where)
        rank = _int(s, "rank", where, 0, n - 1)
        it = _int(s, "iter", where, 0, iterations - 1)
        delay = _num(s, "delay_s", where, 0.0, MAX_STRAGGLE_S)
        if delay is None:
            raise JobError(f"{where}delay_s: missing")
        straggle.append(Straggle(rank, it, delay))

    return JobSpec(job=job, data_port=data_port, message_bytes=message_bytes,
                   iterations=iterations, ranks=tuple(ranks), transport=transport, seed=seed,
                   udp=udp, dcqcn=dcqcn, deadlines=deadlines, straggle=tuple(straggle),
                   faults=faults)


def _regime_step_s(table: dict, message_bytes: int, n_ranks: int) -> float:
    step_ms = table.get("step_ms")
    if step_ms is not None:
        return step_ms / 1000.0
    rate = table.get("line_rate_mbit")
    return dcqcn.step_time_s(message_bytes, n_ranks,
                             UNKNOWN_RATE_BPS if rate is None else rate * 1e6)


def _dcqcn(t: dict, message_bytes: int, n_ranks: int) -> dict:
    """The [dcqcn] table as given, checked: the preset, the line rate, the
    step time and timer floor, and the overrides by building the preset's
    parameters with them (hosts.dcqcn knows the names, units and ranges)."""
    out = dict(t)
    preset = t.get("preset", DEFAULT_PRESET)
    if preset not in dcqcn.PRESET_NAMES:
        raise JobError(f"dcqcn.preset: {preset!r} is not one of {', '.join(dcqcn.PRESET_NAMES)}")
    out["preset"] = preset
    for key, lo, hi in (("line_rate_mbit", 0.001, 1e7), ("step_ms", STEP_MS_MIN, 1e7),
                        ("timer_floor_ms", 0.0, 1e4)):
        value = _num(t, key, "dcqcn.", lo, hi)
        if value is not None:
            out[key] = value
    for k, v in t.items():
        if k in DCQCN_KEYS:
            continue
        if not isinstance(v, (bool, int, float)):
            raise JobError(f"dcqcn.{k}: expected a number or boolean, got {v!r}")
    # preset off ignores the overrides, but a misspelt or impossible one is
    # refused all the same: the emulation preset's parameters check them
    checked = DEFAULT_PRESET if preset == dcqcn.PRESET_OFF else preset
    rate = out.get("line_rate_mbit", UNKNOWN_RATE_BPS / 1e6) * 1e6
    overrides = {k: v for k, v in out.items() if k not in DCQCN_KEYS}
    try:
        floor = out.get("timer_floor_ms")
        dcqcn.make_params(checked, rate, _regime_step_s(out, message_bytes, n_ranks),
                          None if floor is None else floor / 1000.0, **overrides)
    except TypeError as e:
        raise JobError(f"dcqcn: {e}") from None
    except ValueError as e:
        raise JobError(str(e) if str(e).startswith("dcqcn") else f"dcqcn: {e}") from None
    return out


def load_job(path) -> JobSpec:
    p = Path(path)
    try:
        with open(p, "rb") as f:
            doc = tomllib.load(f)
    except OSError as e:
        raise JobError(f"{p}: cannot read: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise JobError(f"{p}: not UTF-8 text (byte 0x{e.object[e.start]:02x} at offset {e.start})") from None
    except tomllib.TOMLDecodeError as e:
        raise JobError(f"{p}: not valid TOML: {e}") from None
    try:
        return parse_job(doc)
    except JobError as e:
        raise JobError(f"{p}: {e}") from None


# --- writing -------------------------------------------------------------------

def _present(table: dict) -> dict:
    """TOML has no null: a field left at None is left out."""
    return {k: v for k, v in table.items() if v is not None}


def dump_job(spec: JobSpec, path) -> None:
    """Write the job file `load_job` reads back to the same spec."""
    doc: dict[str, Any] = {"job": spec.job, "data_port": spec.data_port,
                           "message_bytes": spec.message_bytes, "iterations": spec.iterations,
                           "transport": spec.transport, "seed": spec.seed,
                           "ranks": [_present(dataclasses.asdict(r)) for r in spec.ranks],
                           "udp": dataclasses.asdict(spec.udp)}
    if spec.dcqcn:
        doc["dcqcn"] = _present(spec.dcqcn)
    if spec.deadlines != Deadlines():
        doc["deadlines"] = _present(dataclasses.asdict(spec.deadlines))
    if spec.straggle:
        doc["straggle"] = [dataclasses.asdict(s) for s in spec.straggle]
    if spec.faults != FaultParams():
        doc["faults"] = dataclasses.asdict(spec.faults)
    Path(path).write_text(tomli_w.dumps(doc), encoding="utf-8")
