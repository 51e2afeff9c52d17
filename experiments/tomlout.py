"""Write a resolved config back as TOML (config.toml of a run directory).

Python's tomllib only reads; this covers what resolved configs hold: tables,
arrays of tables, strings, booleans, integers, floats, arrays of scalars and
None (left out: TOML has no null).  Round-trips through tomllib.
"""

from __future__ import annotations

import json
import math
from typing import Any


def _key(k: str) -> str:
    if k and all(c.isalnum() or c in "-_" for c in k):
        return k
    return json.dumps(k)


def _scalar(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(v, str):
        # JSON string escapes are valid TOML basic-string escapes
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_scalar(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{_key(k)} = {_scalar(x)}" for k, x in v.items() if x is not None) + "}"
    raise TypeError(f"cannot write {type(v).__name__} as TOML")


def _is_table_array(v: Any) -> bool:
    return isinstance(v, list) and bool(v) and all(isinstance(x, dict) for x in v)


def _emit(table: dict, prefix: str, out: list[str]) -> None:
    subtables = []
    for k, v in table.items():
        if v is None:
            continue
        if isinstance(v, dict) or _is_table_array(v):
            subtables.append((k, v))
        else:
            out.append(f"{_key(k)} = {_scalar(v)}")
    for k, v in subtables:
        name = f"{prefix}.{_key(k)}" if prefix else _key(k)
        if isinstance(v, dict):
            out.append("")
            out.append(f"[{name}]")
            _emit(v, name, out)
        else:
            for item in v:
                out.append("")
                out.append(f"[[{name}]]")
                _emit(item, name, out)


def dumps(data: dict) -> str:
    out: list[str] = []
    _emit(data, "", out)
    return "\n".join(out).lstrip("\n") + "\n"
