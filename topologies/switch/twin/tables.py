"""Match-action tables of the twin, filled with BMv2's runtime value formats.

Match keys and action parameters come as BMv2's runtime CLI and p4-utils'
SimpleSwitchThriftAPI take them: strings such as "10.0.0.1/32" (lpm),
"10.0.0.1" or "5000" (exact), "3->10" (range), "00:00:0a:00:00:01" (MAC), or
ints.  Bad input raises TwinError with a one-line message.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field

from contract import p4names


class TwinError(ValueError):
    """A control-plane request the twin (like BMv2) refuses."""


def parse_value(text: str | int, width: int, what: str) -> int:
    """One value of `width` bits from a BMv2-style string (IPv4, MAC, int)."""
    if isinstance(text, bool):
        text = int(text)
    if isinstance(text, int):
        value = text
    else:
        s = str(text).strip()
        try:
            if s.count(".") == 3:
                value = int(ipaddress.IPv4Address(s))
            elif ":" in s:
                parts = s.split(":")
                if len(parts) != 6 or not all(1 <= len(p) <= 2 for p in parts):
                    raise ValueError
                value = int("".join(p.zfill(2) for p in parts), 16)
            else:
                value = int(s, 0)
        except ValueError:
            raise TwinError(f"{what}: cannot read {text!r} as a {width}-bit value") from None
    if not 0 <= value < (1 << width):
        raise TwinError(f"{what}: {text!r} does not fit in {width} bits")
    return value


@dataclass
class Entry:
    action: str
    params: tuple[int, ...]
    prio: int = 0


def check_action(table: p4names.Table, action: str, params: list) -> tuple[int, ...]:
    if action not in table.actions:
        raise TwinError(f"table {table.name}: unknown action {action!r} (has {', '.join(table.actions)})")
    spec = p4names.ACTIONS[action]
    if len(params) != len(spec):
        raise TwinError(f"action {action}: expects {len(spec)} parameters "
                        f"({', '.join(n for n, _ in spec) or 'none'}), got {len(params)}")
    return tuple(parse_value(v, w, f"action {action} parameter {n}") for (n, w), v in zip(spec, params, strict=True))


@dataclass
class Table:
    """One table: exact (dict), lpm (per prefix length dicts) or range (list)."""
    spec: p4names.Table
    default: Entry = None
    exact: dict = field(default_factory=dict)
    lpm: dict = field(default_factory=dict)        # prefix length -> {masked value: Entry}
    lpm_lengths: list = field(default_factory=list)  # longest first
    ranges: list = field(default_factory=list)     # (prio, lo, hi, handle, Entry)
    handles: dict = field(default_factory=dict)    # handle -> how to remove it
    next_handle: int = 0
    range_hits: dict = field(default_factory=dict)  # value -> lookup_range's answer, until the table changes

    def __post_init__(self):
        # the program's default action (a keyless table's with its default parameters)
        if self.spec.name in p4names.DEFAULT_PARAMS:
            self.default = Entry(self.spec.default, p4names.DEFAULT_PARAMS[self.spec.name])
        else:
            self.default = Entry(self.spec.default, ())

    @property
    def kind(self) -> str:
        kinds = {k for _, k, _ in self.spec.keys}
        if not kinds:
            return "keyless"
        if kinds <= {"exact"}:
            return "exact"
        return kinds.pop()

    def add(self, action: str, match_keys: list, params: list, prio: int | None) -> int:
        spec = self.spec
        if not spec.keys:
            raise TwinError(f"table {spec.name} has no key: set its default action instead")
        if len(match_keys) != len(spec.keys):
            raise TwinError(f"table {spec.name}: expects {len(spec.keys)} match keys, got {len(match_keys)}")
        values = check_action(spec, action, params)
        if spec.size is not None and len(self.handles) >= spec.size:
            raise TwinError(f"table {spec.name} is full ({spec.size} entries)")
        handle = self.next_handle
        kind = self.kind
        if kind == "exact":
            key = tuple(parse_value(k, w, f"table {spec.name} key {f}")
                        for (f, _, w), k in zip(spec.keys, match_keys, strict=True))
            if key in self.exact:
                raise TwinError(f"table {spec.name}: duplicate entry {match_keys}")
            self.exact[key] = Entry(action, values)
            self.handles[handle] = ("exact", key)
        elif kind == "lpm":
            (f, _, w), = spec.keys
            text = str(match_keys[0])
            addr, _, plen = text.partition("/")
            try:
                plen = int(plen) if plen else w
            except ValueError:
                raise TwinError(f"table {spec.name}: bad prefix length in {text!r}") from None
            if not 0 <= plen <= w:
                raise TwinError(f"table {spec.name}: prefix length {plen} out of 0..{w}")
            mask = ((1 << w) - 1) ^ ((1 << (w - plen)) - 1)
            value = parse_value(addr, w, f"table {spec.name} key {f}") & mask
            bucket = self.lpm.setdefault(plen, {})
            if value in bucket:
                raise TwinError(f"table {spec.name}: duplicate entry {text}")
            bucket[value] = Entry(action, values)
            self.lpm_lengths = sorted(self.lpm, reverse=True)
            self.handles[handle] = ("lpm", plen, value)
        elif kind == "range":
            if prio is None:
                prio = 0          # p4-utils' table_add passes prio=0 by default
            (f, _, w), = spec.keys
            lo, sep, hi = str(match_keys[0]).partition("->")
            if not sep:
                raise TwinError(f"table {spec.name}: range key must look like 'lo->hi', got {match_keys[0]!r}")
            lo = parse_value(lo, w, f"table {spec.name} key {f}")
            hi = parse_value(hi, w, f"table {spec.name} key {f}")
            if lo > hi:
                raise TwinError(f"table {spec.name}: empty range {match_keys[0]!r}")
            self.ranges.append((int(prio), lo, hi, handle, Entry(action, values, int(prio))))
            self.ranges.sort(key=lambda r: (r[0], r[3]))
            self.range_hits.clear()
            self.handles[handle] = ("range", handle)
        else:
            raise TwinError(f"table {spec.name}: match kind {kind} not supported by the twin")
        self.next_handle += 1
        return handle

    def set_default(self, action: str, params: list) -> None:
        values = check_action(self.spec, action, params)
        self.default = Entry(action, values)

    def clear(self) -> None:
        self.exact.clear()
        self.lpm.clear()
        self.lpm_lengths = []
        self.ranges.clear()
        self.range_hits.clear()
        self.handles.clear()

    # --- lookups (data path) ----------------------------------------------
    def lookup_lpm(self, value: int) -> Entry | None:
        for plen in self.lpm_lengths:
            entry = self.lpm[plen].get(value & (0xFFFFFFFF ^ ((1 << (32 - plen)) - 1)))
            if entry is not None:
                return entry
        return None

    def lookup_range(self, value: int) -> Entry | None:
        # BMv2: among matching entries the lowest priority value wins; the
        # control plane installs non-overlapping ranges, so the rule rarely
        # matters.  The answer per value is kept until the table changes: the
        # key is a queue depth, a few hundred values at most, looked up per packet
        try:
            return self.range_hits[value]
        except KeyError:
            pass
        hit = None
        for _, lo, hi, _, entry in self.ranges:
            if lo <= value <= hi:
                hit = entry
                break
        self.range_hits[value] = hit
        return hit

    def entries(self) -> list[dict]:
        """What is installed, for dumps."""
        out = []
        for key, e in self.exact.items():
            out.append({"key": list(key), "action": e.action, "params": list(e.params)})
        for plen, bucket in self.lpm.items():
            for value, e in bucket.items():
                out.append({"key": [f"{ipaddress.IPv4Address(value)}/{plen}"], "action": e.action,
                            "params": list(e.params)})
        for prio, lo, hi, _, e in self.ranges:
            out.append({"key": [f"{lo}->{hi}"], "prio": prio, "action": e.action, "params": list(e.params)})
        return out
