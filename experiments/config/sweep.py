"""Sweeps: ``"dotted.key" = [values]`` in [sweep]; the points are the cross
product of the axes, each resolved (and validated) like a config of its own."""

from __future__ import annotations

import copy
import itertools
from dataclasses import replace
from typing import Any

from experiments.config import schema as S
from experiments.config.resolve import resolve
from experiments.config.schema import ConfigError
from experiments.config.spec import ExperimentSpec


def set_path(raw: dict, dotted: str, value: Any) -> None:
    """Set a dotted key in a raw config, making the tables on the way (a
    swept key may be a default the file does not spell out)."""
    parts: list[str | int] = [int(x) if x.isdigit() else x for x in dotted.split(".")]
    node: Any = raw
    for part in parts[:-1]:
        if isinstance(node, dict) and part not in node:
            node[part] = {}
        node = node[part]
    node[parts[-1]] = value


def _label_value(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:g}"
    if isinstance(v, list):
        return "-".join(_label_value(x) for x in v)
    return str(v)


def sweep_points(raw: dict, source: str = "config") -> list[tuple[str, ExperimentSpec]]:
    """(label, spec) for each point of the sweep's cross product."""
    axes = resolve(raw, source).sweep
    if not axes:
        raise ConfigError("sweep: --sweep given but the config has no [sweep] table")
    keys = list(axes)
    points = []
    for combo in itertools.product(*(axes[k] for k in keys)):
        point_raw = copy.deepcopy(raw)
        point_raw.pop("sweep", None)
        for key, value in zip(keys, combo, strict=True):
            set_path(point_raw, key, value)
        label = "_".join(f"{key.split('.')[-1]}{_label_value(value)}" for key, value in zip(keys, combo, strict=True))
        S.dir_name("sweep: a point's label", label, "results/<name>/<point label>/")
        try:
            spec = resolve(point_raw, source)
        except ConfigError as exc:
            raise ConfigError(f"sweep point {label}: {exc}") from None
        points.append((label, replace(spec, sweep_point=dict(zip(keys, combo, strict=True)))))
    return points
