"""The oracle beside the measured runs: reading the oracle file the runner
writes (``<experiment dir>/<stamp>-oracle.json``, schema
``symphony-oracle/1``, written by experiments/oracle/export.py, whose
docstring states it), and comparing it with what was measured.

Per job (ids as strings, as in metrics.json):

* ``baseline_cct_s``, ``symphony_cct_s``: measured mean CCT of the ok runs;
* ``cct_change_pct``: measured, (Symphony - baseline) / baseline x 100;
* ``oracle``: the model's ``baseline_cct_s``, ``symphony_cct_s``,
  ``cct_change_pct`` and ``bound_s``, each variant's CCT the mean over the
  repeats whose run of that variant is ok (the schedules those runs used);
  all repeats of the file when a variant has no ok run it can match;
* ``captured``: measured change / oracle change, None when the oracle's
  change is below ``CAPTURE_MIN_PCT`` in size (nothing to capture);
* ``efficiency``: oracle baseline CCT / measured baseline CCT (1: the
  emulation runs as fast as the fluid model says it could).

Pure but for ``find_oracle`` and ``load_oracle``, which read files.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from statistics import mean
from typing import Any

from analysis.metrics import job_order
from analysis.records import batch_file, read_document

SCHEMA = "symphony-oracle/1"
FILE_SUFFIX = "-oracle.json"
CAPTURE_MIN_PCT = 0.5       # an oracle change smaller than this (in size) is "nothing to gain"


def find_oracle(run_dirs: Iterable[Path]) -> Path | None:
    """The oracle file of the runs' batch: ``<stamp>{FILE_SUFFIX}`` beside them (None: none)."""
    return batch_file(run_dirs, FILE_SUFFIX)


def load_oracle(path: Path, sink: list[str]) -> dict[str, Any] | None:
    """The oracle document, or None (with a line in sink) when it cannot be
    used."""
    return read_document(path, sink, SCHEMA, "an oracle", "repeats")


def _change(base: float | None, sym: float | None) -> float | None:
    if base in (None, 0) or sym is None:
        return None
    return (sym - base) / base * 100.0


def _variant_means(doc: dict[str, Any], variant: str, repeats: Iterable[int] | None) -> dict[str, float]:
    """job -> mean CCT of one variant over the given repeats (all of the
    file's when none of them is in it)."""
    reps = doc["repeats"]
    keys = [str(r) for r in repeats or () if str(r) in reps] or list(reps)
    per_job: dict[str, list[float]] = {}
    for key in keys:
        for job, row in reps[key]["variants"].get(variant, {}).get("jobs", {}).items():
            per_job.setdefault(job, []).append(row["mean_cct_s"])
    return {job: mean(xs) for job, xs in per_job.items()}


def oracle_jobs(doc: dict[str, Any], repeats: dict[str, list[int]] | None = None,
                clock: float = 1.0) -> dict[str, dict[str, Any]]:
    """job -> the oracle's figures; repeats: variant -> the repeats to average
    (those of the ok runs), None: all.  clock: the runs' seconds per second
    of the config's (a scaled batch's time factor): the model ran on the
    runs' schedules, in their clock, and its times are divided by it."""
    repeats = repeats or {}
    base = _variant_means(doc, "baseline", repeats.get("baseline"))
    sym = _variant_means(doc, "symphony", repeats.get("symphony"))
    out = {}
    for job, row in doc.get("jobs", {}).items():
        b, s, bound = base.get(job), sym.get(job), row.get("bound_s")
        out[job] = {"baseline_cct_s": None if b is None else b / clock,
                    "symphony_cct_s": None if s is None else s / clock, "cct_change_pct": _change(b, s),
                    "bound_s": None if bound is None else bound / clock}
    return out


def ok_repeats(analysed: list[dict[str, Any]]) -> dict[str, list[int]]:
    """variant -> repeats of its ok runs."""
    out: dict[str, list[int]] = {}
    for a in analysed:
        if a["status"] == "ok" and isinstance(a.get("repeat"), int):
            out.setdefault(a["variant"], []).append(a["repeat"])
    return out


def captured(measured_pct: float | None, oracle_pct: float | None) -> float | None:
    if measured_pct is None or oracle_pct is None or abs(oracle_pct) < CAPTURE_MIN_PCT:
        return None
    return measured_pct / oracle_pct


def job_comparison(variants: dict[str, Any], doc: dict[str, Any] | None,
                   analysed: list[dict[str, Any]], clock: float = 1.0) -> dict[str, dict[str, Any]]:
    """Per job: measured CCTs and change beside the oracle's (module
    docstring); variants: report.summarise's per-variant rows, in the
    config's units; clock: the runs' seconds per second of the config's,
    which the oracle's times are divided by (oracle_jobs)."""
    measured = {v: row.get("jobs", {}) for v, row in variants.items()}
    oracle = oracle_jobs(doc, ok_repeats(analysed), clock) if doc else {}
    out = {}
    for job in job_order(set().union(*measured.values(), oracle)):
        base = measured.get("baseline", {}).get(job, {}).get("cct_mean_s")
        sym = measured.get("symphony", {}).get(job, {}).get("cct_mean_s")
        change = _change(base, sym)
        o = oracle.get(job)
        o_base = o["baseline_cct_s"] if o else None
        out[job] = {
            "baseline_cct_s": base, "symphony_cct_s": sym, "cct_change_pct": change, "oracle": o,
            "captured": captured(change, o["cct_change_pct"]) if o else None,
            "efficiency": o_base / base if o_base is not None and base else None,
        }
    return out


def timeline_events(doc: dict[str, Any], repeat: int, variant: str, t0_ns: int) -> list[dict[str, Any]]:
    """The model's steps of one repeat and variant as step_start/step_end
    events (the fields plots.plot_timeline reads), t = t0_ns + the model's
    seconds; [] when the file has no such repeat or variant."""
    run = doc["repeats"].get(str(repeat), {}).get("variants", {}).get(variant)
    if not run:
        return []
    fields = doc.get("step_fields") or ["job", "rank", "iter", "k", "step", "phase", "start_s", "end_s", "bytes"]
    events = []
    for row in run["steps"]:
        s = dict(zip(fields, row, strict=True))
        common = {"job": s["job"], "rank": s["rank"], "iter": s["iter"], "step": s["step"], "k": s["k"],
                  "phase": s["phase"]}
        events.append({**common, "kind": "step_start", "t": t0_ns + round(s["start_s"] * 1e9)})
        events.append({**common, "kind": "step_end", "t": t0_ns + round(s["end_s"] * 1e9), "bytes": s["bytes"]})
    # at one instant starts first: a step that ends as it starts (its chunk came early) pairs up
    events.sort(key=lambda e: (e["t"], e["kind"] == "step_end"))
    return events
