"""Readers for a run directory (its layout: experiments/README.md, "Run directory").

I/O at the edge: files become plain values (event dicts, counter dicts),
never a metric.  Bad or missing parts become a ``RecordWarning`` naming the
file and line (and an entry in ``Run.warnings``), never an exception: a run
killed mid-write must still be readable.  Jitter windows leave ``load_run``
as absolute ns (``normalise_jitter`` says which time forms it accepts), each
placed among the ranks (analysis.windows).
"""

from __future__ import annotations

import json
import math
import re
import tomllib
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from analysis.windows import attach_link_ranks, place_compute_jitter
from contract.events import SchemaError, validate

_DECODE = json.JSONDecoder().decode       # what json.loads calls on a str, without its checks

ABS_NS_MIN = 10**15      # a time above this is ns since the epoch (year 2001+)
EPOCH_S_MAX = 10**12     # a t0 below this is seconds since the epoch


class RecordWarning(UserWarning):
    """Something in a run directory was skipped or missing."""


@dataclass
class Run:
    path: Path
    meta: dict[str, Any] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)
    events: list[dict[str, Any]] = field(default_factory=list)  # all ranks, sorted by t
    switches: dict[str, dict[str, Any]] = field(default_factory=dict)
    jitter: list[dict[str, Any]] = field(default_factory=list)  # start_ns/end_ns absolute
    warnings: list[str] = field(default_factory=list)
    gaps: list[str] = field(default_factory=list)     # ranks without records: the run cannot count as ok

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def variant(self) -> str:
        return str(self.meta.get("variant", "unknown"))

    @property
    def time_factor(self) -> float:
        """The run's clock per second of the config's (meta.json's scaling:
        the emulation's --scale K, or the deployment's time factor); 1 unscaled."""
        return float((self.meta.get("scaling") or {}).get("time", 1.0))

    @property
    def rate_factor(self) -> float:
        """The run's link rates per the config's (meta.json's scaling: --rate,
        or the deployment's); 1 unscaled."""
        return float((self.meta.get("scaling") or {}).get("rate", 1.0))

    @property
    def scale_k(self) -> float:
        """The emulation's --scale K (meta.json's scaling: its bytes factor,
        which is the time factor but at a --rate other than 1); 1 unscaled."""
        return float((self.meta.get("scaling") or {}).get("bytes", 1.0))

    @property
    def fidelity(self) -> str | None:
        """meta.json's fidelity verdict (experiments/fidelity.py): "ok",
        "degraded", or None where the run has none."""
        return (self.meta.get("fidelity") or {}).get("verdict")

    @property
    def fidelity_reasons(self) -> list[str]:
        return list((self.meta.get("fidelity") or {}).get("reasons") or [])

    @property
    def fidelity_checks(self) -> dict[str, Any]:
        """check name -> {"value", "limit", "ok"} of meta.json's fidelity."""
        return {c["check"]: {k: c.get(k) for k in ("value", "limit", "ok")}
                for c in (self.meta.get("fidelity") or {}).get("checks") or [] if isinstance(c, dict) and "check" in c}

    @property
    def repeat(self) -> int | None:
        rep = self.meta.get("repeat")
        return rep if isinstance(rep, int) else None

    @property
    def status(self) -> str:
        """meta.json's status; "unknown" without a readable meta.json, and
        "incomplete" for an ok run that lacks a rank's records (gaps): neither
        counts as ok."""
        if not self.meta:
            return "unknown"
        status = str(self.meta.get("status", "ok"))
        return "incomplete" if status == "ok" and self.gaps else status

    @property
    def reason(self) -> str:
        if not self.meta:
            return "no readable meta.json: how the run ended is unknown"
        reason = str(self.meta.get("reason", "") or "")
        return "; ".join(x for x in [reason, *self.gaps] if x) if self.status == "incomplete" else reason


def _warn(sink: list[str], message: str) -> None:
    sink.append(message)
    warnings.warn(message, RecordWarning, stacklevel=3)


def read_jsonl(path: Path, sink: list[str] | None = None) -> list[dict[str, Any]]:
    """Parse a JSONL file, one dict a line.

    A cut last line (the writer was killed mid-line) is skipped with a
    warning; so is any other line that is not a JSON object, with a warning
    that says it was not the last one (that is corruption, not a kill)."""
    return [value for _, value in read_jsonl_numbered(path, sink)]


def read_jsonl_numbered(path: Path, sink: list[str] | None = None) -> list[tuple[int, dict[str, Any]]]:
    """``read_jsonl`` with the line number of each object."""
    sink = [] if sink is None else sink
    out: list[tuple[int, dict[str, Any]]] = []
    data = path.read_bytes()
    try:
        # one decode of the file and the decoder's own method: a run's records
        # are a few hundred thousand lines, and json.loads on bytes spends a
        # third of its time finding each line's encoding
        lines, parse = data.decode("utf-8").split("\n"), _DECODE
    except UnicodeDecodeError:   # a corrupt file: line by line, so only its bad lines are lost
        lines, parse = data.split(b"\n"), json.loads
    ends_with_newline = data.endswith(b"\n")
    if ends_with_newline:
        lines = lines[:-1]
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            value = parse(raw)
        except (json.JSONDecodeError, UnicodeDecodeError):
            value = None
        if isinstance(value, dict):
            out.append((number, value))
            continue
        last = number == len(lines)
        if last and not ends_with_newline:
            size = len(raw.encode() if isinstance(raw, str) else raw)
            _warn(sink, f"{path}:{number}: last line is cut ({size} bytes, no newline); skipped it")
        else:
            _warn(sink, f"{path}:{number}: not a JSON object; skipped it")
    return out


# fields analysis does arithmetic on, beyond what contract.events.validate checks
_INT_FIELDS = ("job", "rank", "k")
_NUM_FIELDS = ("bytes", "rc", "rt", "alpha")


def type_problem(event: dict[str, Any]) -> str | None:
    """Why an event that passed the schema still cannot be used, or None."""
    for name in _INT_FIELDS:
        if name in event and (isinstance(event[name], bool) or not isinstance(event[name], int)):
            return f"'{name}' must be an integer"
    for name in _NUM_FIELDS:
        if name in event and (isinstance(event[name], bool) or not isinstance(event[name], (int, float))):
            return f"'{name}' must be a number"
        # json reads NaN and Infinity, which no byte count or rate can be
        if name in event and not math.isfinite(event[name]):
            return f"'{name}' must be finite"
    return None


def agent_files(agents_dir: Path) -> list[tuple[int | None, Path]]:
    """The agents' record files of a run, in both layouts the runner writes:
    ``agents/rank<r>.jsonl`` (one job: job None, the events say which) and
    ``agents/job<id>/rank<r>.jsonl`` (several jobs).  Sorted by job, then rank."""
    if not agents_dir.is_dir():
        return []
    out: list[tuple[int | None, Path]] = [(None, p) for p in agents_dir.glob("rank*.jsonl")]
    for d in agents_dir.glob("job*"):
        job_id = d.name[3:]
        if d.is_dir() and job_id.isdigit():
            out += [(int(job_id), p) for p in d.glob("rank*.jsonl")]

    def key(item: tuple[int | None, Path]) -> tuple:
        job, path = item
        rank = path.stem[4:]
        return (-1 if job is None else job, int(rank) if rank.isdigit() else 1 << 30, path.name)
    return sorted(out, key=key)


def read_agent_events(agents_dir: Path, sink: list[str]) -> list[dict[str, Any]]:
    """Every valid event of every agent record file (``agent_files``), sorted
    by time.  An event whose job differs from its ``job<id>`` directory's is
    kept as the event says, with a warning; a file holding a (job, rank)
    another file already held is skipped (its events would count twice)."""
    events: list[dict[str, Any]] = []
    files = agent_files(agents_dir)
    if not files:
        _warn(sink, f"{agents_dir}: no rank<r>.jsonl files (nor job<id>/rank<r>.jsonl)")
    owner: dict[tuple[Any, Any], Path] = {}   # (job, rank) -> the file that holds it
    for dir_job, path in files:
        kept: list[dict[str, Any]] = []
        mismatched = 0
        for number, event in read_jsonl_numbered(path, sink):
            try:
                validate(event)
            except SchemaError as exc:
                _warn(sink, f"{path}:{number}: {exc}; skipped it")
                continue
            problem = type_problem(event)
            if problem:
                _warn(sink, f"{path}:{number}: {problem}; skipped it")
                continue
            if dir_job is not None and event["job"] != dir_job:
                mismatched += 1
            kept.append(event)
        if mismatched:
            _warn(sink, f"{path}: {mismatched} event(s) of another job than the directory's ({dir_job}); "
                        "kept them under the job they name")
        pairs = {(e["job"], e["rank"]) for e in kept}
        twice = sorted((pair for pair in pairs if pair in owner), key=str)
        if twice:
            job, rank = twice[0]
            _warn(sink, f"{path}: job {job} rank {rank} is already in {owner[twice[0]]}; skipped this file")
            continue
        owner.update({pair: path for pair in pairs})
        events.extend(kept)
    events.sort(key=lambda e: (e["t"], e["job"], e["rank"]))
    return events


def config_ranks(config: dict[str, Any]) -> set[tuple[int, int]] | None:
    """The (job, rank) pairs config.toml's jobs list, None when it lists none."""
    jobs = config.get("jobs")
    if not isinstance(jobs, list):
        return None
    pairs = {(j["job"], r) for j in jobs if isinstance(j, dict)
             and isinstance(j.get("job"), int) and isinstance(j.get("ranks"), int) for r in range(j["ranks"])}
    return pairs or None


def record_gaps(run: Run, files: list[tuple[int | None, Path]], sink: list[str]) -> list[str]:
    """What is missing of a run's agent records: a rank the config lists
    that logged no event, a record file that is empty (each with a warning)."""
    empty = []
    for _, path in files:
        try:
            if path.stat().st_size == 0:
                empty.append(path)
                _warn(sink, f"{path}: empty (the rank logged nothing)")
        except OSError:
            pass
    expected = config_ranks(run.config)
    if expected is None:
        return [f"{p.relative_to(run.path)} is empty" for p in empty]
    seen = {(e["job"], e["rank"]) for e in run.events}
    return [f"job {job} rank {rank} logged no events" for job, rank in sorted(expected - seen)]


# a run directory's name, experiments/rundir.py's: <stamp>-<variant>-rep<k>[.n]
RUN_NAME = re.compile(r"^(?P<stamp>.+)-(?P<variant>[^-]+)-rep\d+(\.\d+)?$")


def batch_file(run_dirs: Iterable[Path], suffix: str) -> Path | None:
    """A file the runs' batch wrote beside them, ``<stamp><suffix>`` (the
    oracle's, the regime's), found from a run directory named
    ``<stamp>-<variant>-rep<k>``; None when there is none."""
    for d in run_dirs:
        match = RUN_NAME.match(Path(d).name)
        if match:
            path = Path(d).parent / f"{match['stamp']}{suffix}"
            if path.is_file():
                return path
    return None


def read_json(path: Path, sink: list[str]) -> dict[str, Any]:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        _warn(sink, f"{path}: missing")
        return {}
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        _warn(sink, f"{path}: not valid JSON ({exc}); ignored it")
        return {}
    if not isinstance(value, dict):
        _warn(sink, f"{path}: not a JSON object; ignored it")
        return {}
    return value


def read_document(path: Path, sink: list[str], schema: str, kind: str, key: str) -> dict[str, Any] | None:
    """A batch document of `schema` (the oracle's, the regime's) whose `key`
    holds a table; None, with a line in sink and a RecordWarning, when it
    cannot be used."""
    doc = read_json(Path(path), sink)
    if not doc:
        return None
    if doc.get("schema") != schema or not isinstance(doc.get(key), dict):
        message = f"{path}: not {kind} file of schema {schema}; left out"
        sink.append(message)
        warnings.warn(message, RecordWarning, stacklevel=3)
        return None
    return doc


def read_config(path: Path, sink: list[str]) -> dict[str, Any]:
    if not path.exists():
        _warn(sink, f"{path}: missing")
        return {}
    try:
        with path.open("rb") as f:
            return tomllib.load(f)
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        _warn(sink, f"{path}: not valid TOML ({exc}); ignored it")
        return {}


def read_switches(switches_dir: Path, sink: list[str]) -> dict[str, dict[str, Any]]:
    if not switches_dir.is_dir():
        return {}
    return {p.stem: read_json(p, sink) for p in sorted(switches_dir.glob("*.json"))}


def _t0_ns(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return int(value * 1e9) if value < EPOCH_S_MAX else int(value)


def _abs_ns(value: Any, t0: int | None) -> int | None:
    """One jitter time as absolute ns, or None when it cannot be placed."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if value >= ABS_NS_MIN:
        return int(value)
    if t0 is None:
        return None
    return t0 + int(round(value * 1e9))


META_T0_KEYS = ("t0_ns", "agents_t0_ns", "start_ns", "t0")


def meta_t0_ns(meta: dict[str, Any]) -> int | None:
    """The run's t0 (when the agents were started) from meta.json, if given."""
    for key in META_T0_KEYS:
        t0 = _t0_ns(meta.get(key))
        if t0 is not None:
            return t0
    return None


def normalise_jitter(lines: list[dict[str, Any]], fallback_t0: int | None,
                     sink: list[str], where: str = "jitter.jsonl",
                     run_t0: int | None = None) -> list[dict[str, Any]]:
    """Jitter lines -> windows with ``start_ns``/``end_ns`` (absolute).

    Times come as ``start``/``end`` (absolute ns, CLOCK_REALTIME, when above
    1e15; else seconds relative to t0) or ``start_s``/``end_s`` (always
    seconds relative to t0, as experiments.jitter.schedule writes them).  t0:
    the line's own ``t0``, else the last header line's (a line with ``t0``
    and no ``kind``), else ``run_t0`` (meta.json's ``t0_ns`` or an older
    key), else ``fallback_t0`` (the first agent event) with a warning; a t0
    below 1e12 is seconds since the epoch.  A
    ``compute`` event has no window of its own: it is kept with
    ``start_ns``/``end_ns`` None (``windows.place_compute_jitter`` puts it
    where the rank actually started late)."""
    header_t0: int | None = None
    warned_fallback = False
    out = []
    for number, line in enumerate(lines, start=1):
        if "kind" not in line:
            if "t0" in line:
                header_t0 = _t0_ns(line["t0"])
            continue
        seconds_only = "start" not in line and "start_s" in line
        raw_start = line.get("start_s") if seconds_only else line.get("start")
        raw_end = line.get("end_s") if seconds_only else line.get("end")
        if line["kind"] == "compute" and raw_start is None:
            out.append({**line, "start_ns": None, "end_ns": None})
            continue
        t0 = _t0_ns(line["t0"]) if "t0" in line else (header_t0 if header_t0 is not None else run_t0)
        if t0 is None and fallback_t0 is not None:
            relative = seconds_only or any(isinstance(v, (int, float)) and v < ABS_NS_MIN
                                           for v in (raw_start, raw_end))
            if relative and not warned_fallback:
                _warn(sink, f"{where}: relative times without t0; taking the first agent event as t0")
                warned_fallback = True
            t0 = fallback_t0
        if seconds_only:
            start = None if t0 is None or not isinstance(raw_start, (int, float)) else t0 + int(round(raw_start * 1e9))
            end = None if t0 is None or not isinstance(raw_end, (int, float)) else t0 + int(round(raw_end * 1e9))
        else:
            start, end = _abs_ns(raw_start, t0), _abs_ns(raw_end, t0)
        if start is None or end is None or end < start:
            _warn(sink, f"{where}:{number}: start/end missing or unusable; skipped it")
            continue
        out.append({**line, "start_ns": start, "end_ns": end})
    return out


def load_run(path: str | Path) -> Run:
    """Read everything analysis needs from one run directory."""
    run = Run(path=Path(path))
    sink = run.warnings
    run.meta = read_json(run.path / "meta.json", sink)
    if run.meta and "status" not in run.meta:
        _warn(sink, f"{run.path / 'meta.json'}: no status; taking it as ok")
    run.config = read_config(run.path / "config.toml", sink)
    run.events = read_agent_events(run.path / "agents", sink)
    run.gaps = record_gaps(run, agent_files(run.path / "agents"), sink)
    run.switches = read_switches(run.path / "switches", sink)
    jitter_path = run.path / "jitter.jsonl"
    if jitter_path.exists():
        first = run.events[0]["t"] if run.events else None
        run.jitter = normalise_jitter(read_jsonl(jitter_path, sink), first, sink, str(jitter_path),
                                      run_t0=meta_t0_ns(run.meta))
        run.jitter = attach_link_ranks(place_compute_jitter(run.jitter, run.events), run.config)
    return run
