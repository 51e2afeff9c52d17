"""The P4 source and contract/p4names.py agree: names, widths, sizes and
constants are read from the P4 declarations themselves, for both targets."""

from __future__ import annotations

import re

import pytest

from contract import p4names, tags
from tests.harness import REPO

P4 = REPO / "p4"
SHARED = ["include/constants.p4", "include/headers.p4", "include/parser.p4", "include/control.p4"]
TARGETS = {"v1model": ["v1model/wrappers.p4", "v1model/main.p4"],
           "t2na": ["t2na/wrappers.p4", "t2na/main.p4"]}


def strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def source(target: str) -> str:
    return "\n".join(strip_comments((P4 / f).read_text()) for f in SHARED + TARGETS[target])


def int_value(token: str, consts: dict[str, int]) -> int:
    token = token.strip()
    if token in consts:
        return consts[token]
    m = re.fullmatch(r"(?:\d+w)?(0x[0-9a-fA-F]+|\d+)", token)
    if not m:
        raise AssertionError(f"cannot evaluate P4 value {token!r}")
    return int(m.group(1), 0)


def p4_constants(text: str) -> dict[str, int]:
    consts: dict[str, int] = {}
    for name, value in re.findall(r"#define\s+(\w+)\s+(0x[0-9a-fA-F]+|\d+)\s*$", text, flags=re.M):
        consts[name] = int(value, 0)
    for name, value in re.findall(r"\bconst\s+bit<\d+>\s+(\w+)\s*=\s*(\w+)\s*;", text):
        consts[name] = int_value(value, consts)
    return consts


def typedefs(text: str) -> dict[str, int]:
    return {name: int(w) for w, name in re.findall(r"typedef\s+bit<(\d+)>\s+(\w+)\s*;", text)}


def width(type_: str, types: dict[str, int]) -> int:
    type_ = type_.strip()
    m = re.fullmatch(r"bit<(\d+)>", type_)
    if m:
        return int(m.group(1))
    if type_ in types:
        return types[type_]
    raise AssertionError(f"unknown P4 type {type_!r}")


def struct_fields(text: str, types: dict[str, int]) -> dict[str, dict[str, int]]:
    out = {}
    for kind_name, body in re.findall(r"(?:header|struct)\s+(\w+)\s*\{(.*?)\}", text, flags=re.S):
        fields = {}
        for type_, field in re.findall(r"(bit<\d+>|\w+)\s+(\w+)\s*;", body):
            try:
                fields[field] = width(type_, types)
            except AssertionError:
                pass        # header-typed members of headers_t
        out[kind_name] = fields
    return out


def key_width(field: str, text: str, types: dict[str, int]) -> int:
    structs = struct_fields(text, types)
    members = dict(re.findall(r"(\w+)\s+(\w+)\s*;", re.search(r"struct headers_t\s*\{(.*?)\}", text, re.S).group(1)))
    base, *rest = field.split(".")
    if base == "hdr":
        header_type = {v: k for k, v in members.items()}[rest[0]]
        return structs[header_type][rest[1]]
    if base == "meta":
        return structs["sym_meta_t"][rest[0]]
    raise AssertionError(f"unknown key field {field}")


def registers(text: str, consts: dict[str, int]) -> dict[str, tuple[int, int]]:
    out = {}
    pattern = r"\b[Rr]egister<bit<(\d+)>(?:\s*,\s*[^>]+>?)?>\((\w+)(?:\s*,[^)]*)?\)\s*(\w+)\s*;"
    for w, size, name in re.findall(pattern, text):
        out[name] = (int(w), int_value(size, consts))
    return out


def counters(text: str, consts: dict[str, int]) -> dict[str, int]:
    out = {}
    for size, name in re.findall(r"\b[Cc]ounter<[^()]*>\((\w+)\s*,\s*[\w.]+\)\s*(\w+)\s*;", text):
        out[name] = int_value(size, consts)
    return out


def actions(text: str, types: dict[str, int]) -> dict[str, tuple]:
    """Every action the control plane sees (@hidden ones are a target's own)."""
    out = {}
    for name, params in re.findall(r"(?<!@hidden )\baction\s+(\w+)\s*\(([^)]*)\)", text):
        ps = []
        for p in filter(None, (x.strip() for x in params.split(","))):
            type_, pname = p.rsplit(None, 1)
            ps.append((pname, width(type_, types)))
        out[name] = tuple(ps)
    return out


def blocks(text: str, keyword: str):
    """(name, body) of every `keyword name { ... }` not @hidden, matching braces."""
    for m in re.finditer(rf"(?<!@hidden )\b{keyword}\s+(\w+)\s*\{{", text):
        depth, i = 1, m.end()
        while depth:
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
        yield m.group(1), text[m.end():i - 1]


def tables(text: str, consts: dict[str, int], types: dict[str, int]) -> dict[str, dict]:
    out = {}
    for name, body in blocks(text, "table"):
        key_m = re.search(r"key\s*=\s*\{(.*?)\}", body, re.S)
        keys = tuple((f, k, key_width(f, text, types))
                     for f, k in re.findall(r"([\w.]+)\s*:\s*(\w+)\s*;", key_m.group(1))) if key_m else ()
        acts = tuple(a.strip() for a in re.search(r"actions\s*=\s*\{(.*?)\}", body, re.S).group(1).split(";")
                     if a.strip())
        default = re.search(r"default_action\s*=\s*(\w+)", body).group(1)
        size_m = re.search(r"size\s*=\s*(\w+)\s*;", body)
        out[name] = {"keys": keys, "actions": acts, "default": default,
                     "size": int_value(size_m.group(1), consts) if size_m else None}
    return out


@pytest.fixture(params=sorted(TARGETS))
def target(request):
    return request.param


def test_constants_agree(target):
    consts = p4_constants(source(target))
    assert consts == {k: consts.get(k) for k in consts}  # parsed
    for name, value in p4names.P4_CONSTANTS.items():
        assert consts.get(name) == value, f"{name}: P4 {consts.get(name)} vs p4names {value}"
    assert consts["SYM_STEP_SLOTS"] == consts["SYM_MAX_JOBS"] * consts["SYM_W"]
    assert 1 << consts["SYM_W_BITS"] == consts["SYM_W"]


def test_tag_is_the_agents_tag():
    assert p4names.TAG_BITS == tags.TAG_BITS
    assert p4names.TAG_BASE == tags.TAG_PORT_BASE
    assert p4names.TAG_MASK == tags.TAG_MASK
    assert p4names.DSCP_TAG_BITS == tags.DSCP_TAG_BITS
    assert p4names.DSCP_TAG_MASK == tags.DSCP_TAG_MASK
    assert p4names.TAG_HALF == tags.tag_half(False) and p4names.DSCP_TAG_HALF == tags.tag_half(True)
    assert p4names.tag_bits is tags.tag_bits and p4names.tag_mask is tags.tag_mask
    # 2^w a multiple of W for both tags: step mod W survives either wrap-around
    assert (1 << p4names.TAG_BITS) % p4names.W == 0
    assert (1 << p4names.DSCP_TAG_BITS) % p4names.W == 0


def test_registers_agree(target):
    text = source(target)
    found = registers(text, p4_constants(text))
    assert found == {r.name: (r.width, r.size) for r in p4names.REGISTERS.values()}


def test_counters_agree(target):
    text = source(target)
    found = counters(text, p4_constants(text))
    assert found == {c.name: c.size for c in p4names.COUNTERS.values()}


def test_actions_agree(target):
    text = source(target)
    found = actions(text, typedefs(text))
    expected = {k: v for k, v in p4names.ACTIONS.items() if k != "NoAction"}  # NoAction is core.p4's
    assert found == expected


def test_tables_agree(target):
    text = source(target)
    found = tables(text, p4_constants(text), typedefs(text))
    expected = {t.name: {"keys": t.keys, "actions": t.actions, "default": t.default, "size": t.size}
                for t in p4names.TABLES.values()}
    assert found == expected


def test_every_register_touched_once_per_packet_on_t2na():
    """Each T2NA register is executed only through its RegisterActions, and
    the wrapper calls exactly one of them per apply path."""
    text = strip_comments((P4 / "t2na/wrappers.p4").read_text())
    for reg in p4names.REGISTERS:
        assert re.search(rf"RegisterAction<.*?>\({reg}\)", text), reg
    assert ".read(" not in text and ".write(" not in text


def test_target_choice_in_one_place():
    """The preprocessor picks the target only in symphony.p4: no #ifdefs
    scattered through the controls."""
    for path in P4.rglob("*.p4"):
        if path.name != "symphony.p4":
            assert "__TARGET_TOFINO__" not in path.read_text(), path
