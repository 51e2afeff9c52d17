"""The config's keys, defaults and typed validators: the one place they live.

Defaults owned by a typed spec (TopoParams, EcnParams, SymphonyParams) are
read from its dataclass fields; the names a key may take come from their
owners (topology kinds, placements, transports, DCQCN presets).  Every
validator names the key in its ``ConfigError``, a one-line message.
"""

from __future__ import annotations

import math
from dataclasses import MISSING, fields
from typing import Any

from topologies.spec.topo import TopoParams
from topologies.switch.params import EcnParams, SymphonyParams

VARIANTS = ("baseline", "symphony")
DEFAULT_SEED = 1
DEFAULT_REPEATS = 1
DEFAULT_PRESET = "emulation"
DEFAULT_TRANSPORT = "udp"
DEFAULT_PLACEMENT = "interleave"
DATA_PORT_BASE = 5000          # job i's data port: DATA_PORT_BASE + DATA_PORT_STRIDE * i
DATA_PORT_STRIDE = 10
DATA_PORT_MAX = 0xC000 - 2     # a job's data and control ports lie below the step-tag ports
# What the emulation can carry on a link: the switches forward in software
# (the twin about 101k 1500-byte packets/s per core, 1.2 Gbit/s; BMv2 less,
# docs/topologies.md) and Mininet's own TCIntf shapes up to 1000 Mbit/s.  A
# faster link would run at what the machine manages, not at its rate, and the
# deadlines derived from the rate would not hold.
MAX_LINK_RATE_MBIT = 1000.0
# hosts and leaves or spines a topology may have: the simulation's (the P4
# program's forward table holds one entry per host: SYM_FORWARD_SIZE), and
# the emulation's, whose every host is a network namespace and every
# switch a process on this machine (experiments.config.machine)
MAX_HOSTS = 4096
MAX_FABRIC_SWITCHES = 128
MAX_EMULATED_HOSTS = 250
MAX_EMULATED_FABRIC_SWITCHES = 16
# How deep a config's tables and arrays may nest: the deepest key a config
# has is three levels down (jobs[i].udp.window_packets, a [sweep] value's
# array); past this, a document is no config, and the checks that walk it
# (copies, TOML output) would run out of Python's recursion.
MAX_NESTING = 16
# The config's name and a sweep point's label are directory names of their
# own (results/<name>/<label>/): at most NAME_MAX bytes on Linux file systems.
NAME_MAX_BYTES = 255

TOP_KEYS = {"name", "seed", "repeats", "variants", "topology", "jobs", "dcqcn", "ecn",
            "symphony", "jitter", "runner", "sweep"}
TOPO_KEYS = {f.name for f in fields(TopoParams)}
LEAFSPINE_KEYS = ("leaves", "spines")       # only meaningful for kind "leafspine"
JOB_KEYS = {"job", "ranks", "hosts", "placement", "message_bytes", "iterations", "transport", "data_port",
            "udp", "deadlines"}
ECN_KEYS = {f.name for f in fields(EcnParams)} - {"frame_packets"}     # the deployment simulation's (scale)
# enabled: the variant's; gate_pkts: derived from gate_step (experiments.config.spec.gate_pkts)
SYMPHONY_KEYS = {f.name for f in fields(SymphonyParams)} - {"enabled", "gate_pkts"}
RUNNER_KEYS = {"run_deadline_s"}

JITTER_KINDS = ("netem", "rate", "cross", "compute")
PICKS = ("access", "fabric", "any")
LINK_TARGETS = ("link", "host", "rank", "pick")
TIMED_KEYS = {"kind", "start_s", "duration_s", "count", "job", *LINK_TARGETS}
JITTER_KEYS = {
    "rate": TIMED_KEYS | {"fraction", "rate_mbit"},
    "netem": TIMED_KEYS | {"delay_ms", "jitter_ms", "loss_pct", "distribution", "correlation_pct", "reorder_pct",
                           "fallback_fraction"},
    "cross": {"kind", "start_s", "duration_s", "count", "src", "dst", "rate_mbit", "packet_bytes", "ect"},
    "compute": {"kind", "rank", "job", "iter", "delay_s", "count"},
}
NETEM_DEFAULTS = {"delay_ms": 0.0, "jitter_ms": 0.0, "loss_pct": 0.0, "fallback_fraction": 0.5,
                  "distribution": "uniform", "correlation_pct": 0.0, "reorder_pct": 0.0}
CROSS_DEFAULTS = {"packet_bytes": 1200, "ect": False}


def defaults(cls: type) -> dict[str, Any]:
    """A dataclass's field defaults by name (fields without one left out)."""
    return {f.name: f.default for f in fields(cls) if f.default is not MISSING}


TOPO_DEFAULTS = defaults(TopoParams)
ECN_DEFAULTS = defaults(EcnParams)
SYMPHONY_DEFAULTS = defaults(SymphonyParams)


class ConfigError(ValueError):
    """A bad config: the message is one line and names the key."""


def type_name(v: Any) -> str:
    return {bool: "boolean", int: "integer", float: "number", str: "string",
            list: "array", dict: "table"}.get(type(v), type(v).__name__)


def number(path: str, v: Any, *, lo: float | None = None, hi: float | None = None,
           lo_open: bool = False, integer: bool = False) -> float | int:
    ok = isinstance(v, int) and not isinstance(v, bool)
    if not integer:
        ok = ok or isinstance(v, float)
    if not ok:
        raise ConfigError(f"{path}: expected {'an integer' if integer else 'a number'}, "
                          f"got {type_name(v)} {v!r}")
    if isinstance(v, float) and not math.isfinite(v):
        raise ConfigError(f"{path}: must be finite, got {v!r}")
    if lo is not None and (v <= lo if lo_open else v < lo):
        raise ConfigError(f"{path}: must be {'>' if lo_open else '>='} {lo}, got {v!r}")
    if hi is not None and v > hi:
        raise ConfigError(f"{path}: must be <= {hi}, got {v!r}")
    return v


def real(path: str, v: Any, **limits: Any) -> float:
    return float(number(path, v, **limits))


def integer(path: str, v: Any, lo: int | None = None, hi: int | None = None) -> int:
    return int(number(path, v, lo=lo, hi=hi, integer=True))


def string(path: str, v: Any, choices: tuple[str, ...] | None = None, what: str = "value") -> str:
    if not isinstance(v, str):
        raise ConfigError(f"{path}: expected a string, got {type_name(v)} {v!r}")
    if choices is not None and v not in choices:
        raise ConfigError(f"{path}: unknown {what} {v!r} (known: {', '.join(choices)})")
    return v


def boolean(path: str, v: Any) -> bool:
    if not isinstance(v, bool):
        raise ConfigError(f"{path}: expected true or false, got {type_name(v)} {v!r}")
    return v


def table(path: str, v: Any) -> dict:
    if not isinstance(v, dict):
        raise ConfigError(f"{path}: expected a table, got {type_name(v)} {v!r}")
    return v


def pair(path: str, v: list, check) -> list:
    """[low, high], each checked by ``check(path_k, value)``."""
    if len(v) != 2:
        raise ConfigError(f"{path}: a range must be [low, high], got {v!r}")
    a, b = (check(f"{path}[{k}]", x) for k, x in enumerate(v))
    if b < a:
        raise ConfigError(f"{path}: range [low, high] has high < low: {v!r}")
    return [a, b]


def span(path: str, v: Any, lo: float = 0.0, lo_open: bool = False) -> float | list[float]:
    """A number, or [low, high] for a seeded uniform draw."""
    def check(p: str, x: Any) -> float:
        return real(p, x, lo=lo, lo_open=lo_open)
    return pair(path, v, check) if isinstance(v, list) else check(path, v)


def dir_name(path: str, name: str, where: str) -> None:
    """A name that becomes a directory: at most NAME_MAX_BYTES (UTF-8)."""
    size = len(name.encode("utf-8"))
    if size > NAME_MAX_BYTES:
        raise ConfigError(f"{path}: {size} bytes long, at most {NAME_MAX_BYTES}: it names a directory ({where})")


def key_name(key: Any) -> str:
    """A key as an error message names it: as written when it is a plain
    name, else quoted (a key may hold a newline or a lone surrogate)."""
    text = str(key)
    return text if text.replace("-", "_").isidentifier() and text.isascii() else repr(text)


def nesting(raw: dict) -> None:
    """ConfigError where tables and arrays nest deeper than MAX_NESTING,
    naming the top-level key they hang from (walked without recursion)."""
    stack = [(v, 1, k) for k, v in raw.items()]
    while stack:
        node, depth, top = stack.pop()
        if isinstance(node, dict | list) and depth > MAX_NESTING:
            raise ConfigError(f"{key_name(top)}: tables or arrays nested more than {MAX_NESTING} levels deep: "
                              "no config nests so")
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else ()
        stack.extend((c, depth + 1, top) for c in children)


def no_unknown(path: str, t: dict, allowed: set[str]) -> None:
    for key in t:
        if key not in allowed:
            where = f"{path}." if path else ""
            raise ConfigError(f"{where}{key_name(key)}: unknown key (allowed here: {', '.join(sorted(allowed))})")


def required(path: str, t: dict, key: str) -> Any:
    if key not in t:
        where = f"{path}." if path else ""
        raise ConfigError(f"{where}{key}: missing required key")
    return t[key]
