"""Experiment configs: load a TOML file, check every key, fill the defaults.

Pure apart from reading the file: ``resolve(raw, source)`` takes the parsed
TOML and returns the resolved config (a plain dict, every default filled) or
raises ``ConfigError`` with a one-line message that names the key, e.g.
``topology.kind: unknown topology 'ring' (known: leafspine, single)``.

Layout (see experiments/configs/demo.toml for a commented example):

    name, seed, repeats, variants
    [topology]   kind, hosts, leaves, spines, host_rate_mbit, fabric_rate_mbit,
                 host_delay_ms, fabric_delay_ms, queue_depth_pkts
    [[jobs]]     ranks, hosts | placement, message_bytes, iterations, transport, data_port
    [dcqcn]      preset and overrides of the preset's fields by name
    [ecn]        kmin, kmax, pmax            (queue depth in packets)
    [symphony]   threshold, k_sym, p_sym
    [[jitter]]   kind = netem | rate | cross | compute, and that kind's keys
    [runner]     run_deadline_s (the runner's own wall deadline per run)
    [sweep]      "dotted.key" = [values, ...]   (used with --sweep)
"""

from __future__ import annotations

import copy
import itertools
import math
import tomllib
from pathlib import Path
from typing import Any

from topologies.spec.placement import PLACEMENTS, place_jobs
from topologies.spec.topo import KINDS, TopoError, build

VARIANTS = ("baseline", "symphony")
TRANSPORTS = ("udp", "tcp")
JITTER_KINDS = ("netem", "rate", "cross", "compute")
DCQCN_PRESETS_FALLBACK = ("emulation", "paper", "off")
# Topology kinds, placements and host names are the topology builder's
# (topologies.spec.topo, topologies.spec.placement): the config is checked against them.


class ConfigError(ValueError):
    """A bad config: the message is one line and names the key."""


def known_dcqcn_presets() -> tuple[str, ...]:
    try:
        from hosts.dcqcn import PRESETS  # noqa: PLC0415
        return tuple(PRESETS)
    except Exception:
        return DCQCN_PRESETS_FALLBACK


# --------------------------------------------------------------------------
# small typed getters: each names the key in its error


def _type_name(v: Any) -> str:
    return {bool: "boolean", int: "integer", float: "number", str: "string",
            list: "array", dict: "table"}.get(type(v), type(v).__name__)


def _num(path: str, v: Any, *, lo: float | None = None, hi: float | None = None,
         lo_open: bool = False, integer: bool = False) -> float | int:
    ok = isinstance(v, int) and not isinstance(v, bool)
    if not integer:
        ok = ok or isinstance(v, float)
    if not ok:
        raise ConfigError(f"{path}: expected {'an integer' if integer else 'a number'}, "
                          f"got {_type_name(v)} {v!r}")
    if isinstance(v, float) and not math.isfinite(v):
        raise ConfigError(f"{path}: must be finite, got {v!r}")
    if lo is not None and (v <= lo if lo_open else v < lo):
        raise ConfigError(f"{path}: must be {'>' if lo_open else '>='} {lo}, got {v!r}")
    if hi is not None and v > hi:
        raise ConfigError(f"{path}: must be <= {hi}, got {v!r}")
    return v


def _int(path: str, v: Any, lo: int | None = None, hi: int | None = None) -> int:
    return int(_num(path, v, lo=lo, hi=hi, integer=True))


def _str(path: str, v: Any, choices: tuple[str, ...] | None = None, what: str = "value") -> str:
    if not isinstance(v, str):
        raise ConfigError(f"{path}: expected a string, got {_type_name(v)} {v!r}")
    if choices is not None and v not in choices:
        raise ConfigError(f"{path}: unknown {what} {v!r} (known: {', '.join(choices)})")
    return v


def _bool(path: str, v: Any) -> bool:
    if not isinstance(v, bool):
        raise ConfigError(f"{path}: expected true or false, got {_type_name(v)} {v!r}")
    return v


def _table(path: str, v: Any) -> dict:
    if not isinstance(v, dict):
        raise ConfigError(f"{path}: expected a table, got {_type_name(v)} {v!r}")
    return v


def _span(path: str, v: Any, lo: float = 0.0, lo_open: bool = False) -> float | list[float]:
    """A number, or [low, high] for a seeded uniform draw."""
    if isinstance(v, list):
        if len(v) != 2:
            raise ConfigError(f"{path}: a range must be [low, high], got {v!r}")
        a = _num(f"{path}[0]", v[0], lo=lo, lo_open=lo_open)
        b = _num(f"{path}[1]", v[1], lo=lo, lo_open=lo_open)
        if b < a:
            raise ConfigError(f"{path}: range [low, high] has high < low: {v!r}")
        return [float(a), float(b)]
    return float(_num(path, v, lo=lo, lo_open=lo_open))


def _no_unknown(path: str, table: dict, allowed: set[str]) -> None:
    for key in table:
        if key not in allowed:
            where = f"{path}." if path else ""
            raise ConfigError(f"{where}{key}: unknown key (allowed here: {', '.join(sorted(allowed))})")


def _required(path: str, table: dict, key: str) -> Any:
    if key not in table:
        where = f"{path}." if path else ""
        raise ConfigError(f"{where}{key}: missing required key")
    return table[key]


# --------------------------------------------------------------------------
# sections


TOPO_KEYS = {"kind", "hosts", "leaves", "spines", "host_rate_mbit", "fabric_rate_mbit",
             "host_delay_ms", "fabric_delay_ms", "queue_depth_pkts"}


def _topology(raw: Any) -> dict:
    t = _table("topology", raw)
    _no_unknown("topology", t, TOPO_KEYS)
    kind = _str("topology.kind", _required("topology", t, "kind"), KINDS, "topology")
    out: dict[str, Any] = {"kind": kind}
    out["hosts"] = _int("topology.hosts", _required("topology", t, "hosts"), lo=2, hi=250)
    if kind == "leafspine":
        out["leaves"] = _int("topology.leaves", t.get("leaves", 2), lo=1, hi=16)
        out["spines"] = _int("topology.spines", t.get("spines", 1), lo=1, hi=16)
    else:
        for key in ("leaves", "spines"):
            if key in t:
                raise ConfigError(f"topology.{key}: only meaningful for kind 'leafspine'")
    out["host_rate_mbit"] = float(_num("topology.host_rate_mbit",
                                       _required("topology", t, "host_rate_mbit"), lo=0, lo_open=True))
    out["fabric_rate_mbit"] = float(_num("topology.fabric_rate_mbit",
                                         t.get("fabric_rate_mbit", out["host_rate_mbit"]), lo=0, lo_open=True))
    out["host_delay_ms"] = float(_num("topology.host_delay_ms", t.get("host_delay_ms", 0.0), lo=0))
    out["fabric_delay_ms"] = float(_num("topology.fabric_delay_ms", t.get("fabric_delay_ms", 0.0), lo=0))
    out["queue_depth_pkts"] = _int("topology.queue_depth_pkts", t.get("queue_depth_pkts", 64), lo=1)
    return out


JOB_KEYS = {"job", "ranks", "hosts", "placement", "message_bytes", "iterations", "transport", "data_port",
            "udp", "deadlines"}


def _job(i: int, raw: Any, topo: dict) -> dict:
    p = f"jobs[{i}]"
    j = _table(p, raw)
    _no_unknown(p, j, JOB_KEYS)
    out: dict[str, Any] = {"job": _int(f"{p}.job", j.get("job", i + 1), lo=0, hi=65535)}
    out["ranks"] = _int(f"{p}.ranks", _required(p, j, "ranks"), lo=2, hi=64)
    if "hosts" in j and "placement" in j:
        raise ConfigError(f"{p}.hosts: give either hosts or placement, not both")
    if "hosts" in j:
        hosts = j["hosts"]
        if not isinstance(hosts, list) or not all(isinstance(h, str) for h in hosts):
            raise ConfigError(f"{p}.hosts: expected an array of host names, got {hosts!r}")
        if len(hosts) != out["ranks"]:
            raise ConfigError(f"{p}.hosts: {len(hosts)} hosts for {out['ranks']} ranks")
        out["hosts"] = list(hosts)
    else:
        out["placement"] = _str(f"{p}.placement", j.get("placement", "interleave"), PLACEMENTS, "placement")
        if out["ranks"] > topo["hosts"]:
            raise ConfigError(f"{p}.ranks: {out['ranks']} ranks but topology.hosts is {topo['hosts']}")
    mb = _int(f"{p}.message_bytes", _required(p, j, "message_bytes"), lo=4)
    if mb % 4:
        raise ConfigError(f"{p}.message_bytes: must be a multiple of 4 (float32), got {mb}")
    out["message_bytes"] = mb
    out["iterations"] = _int(f"{p}.iterations", _required(p, j, "iterations"), lo=1, hi=10000)
    out["transport"] = _str(f"{p}.transport", j.get("transport", "udp"), TRANSPORTS, "transport")
    out["data_port"] = _int(f"{p}.data_port", j.get("data_port", 5000 + 10 * i), lo=1024, hi=0xC000 - 2)
    # transport parameters and deadlines go to the job file as they are; the
    # job loader (hosts.job) checks their names and ranges when a run starts
    for key in ("udp", "deadlines"):
        if key in j:
            out[key] = _numbers(f"{p}.{key}", j[key])
    return out


def _numbers(path: str, raw: Any) -> dict:
    t = _table(path, raw)
    for key, v in t.items():
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise ConfigError(f"{path}.{key}: expected a number, got {_type_name(v)} {v!r}")
    return dict(t)


def _dcqcn(raw: Any) -> dict:
    d = _table("dcqcn", raw)
    out: dict[str, Any] = {"preset": _str("dcqcn.preset", d.get("preset", "emulation"),
                                          known_dcqcn_presets(), "DCQCN preset")}
    # overrides of preset fields by name (checked by hosts.dcqcn when the job
    # is built); here only their type
    out.update(_numbers("dcqcn", {k: v for k, v in d.items() if k != "preset"}))
    return out


def _ecn(raw: Any, topo: dict) -> dict:
    e = _table("ecn", raw)
    _no_unknown("ecn", e, {"kmin", "kmax", "pmax"})
    kmin = _int("ecn.kmin", e.get("kmin", 5), lo=0)
    kmax = _int("ecn.kmax", e.get("kmax", 20), lo=0)
    if kmax < kmin:
        raise ConfigError(f"ecn.kmax: must be >= ecn.kmin ({kmin}), got {kmax}")
    if kmax > topo["queue_depth_pkts"]:
        raise ConfigError(f"ecn.kmax: {kmax} exceeds topology.queue_depth_pkts ({topo['queue_depth_pkts']})")
    pmax = float(_num("ecn.pmax", e.get("pmax", 0.2), lo=0, hi=1))
    return {"kmin": kmin, "kmax": kmax, "pmax": pmax}


def _symphony(raw: Any) -> dict:
    s = _table("symphony", raw)
    _no_unknown("symphony", s, {"threshold", "k_sym", "p_sym"})
    return {"threshold": _int("symphony.threshold", s.get("threshold", 1), lo=0, hi=255),
            "k_sym": _int("symphony.k_sym", s.get("k_sym", 1), lo=0),
            "p_sym": float(_num("symphony.p_sym", s.get("p_sym", 1.0), lo=0, hi=1))}


TARGET_KEYS = {"link", "host", "rank", "job", "pick"}
PICKS = ("access", "fabric", "any")
TIMED_KEYS = {"kind", "start_s", "duration_s", "count"} | TARGET_KEYS
JITTER_KEYS = {
    "rate": TIMED_KEYS | {"fraction", "rate_mbit"},
    "netem": TIMED_KEYS | {"delay_ms", "jitter_ms", "loss_pct", "fallback_fraction"},
    "cross": {"kind", "start_s", "duration_s", "count", "src", "dst", "rate_mbit", "packet_bytes", "ect"},
    "compute": {"kind", "rank", "job", "iter", "delay_s", "count"},
}


def _link_target(p: str, j: dict, jobs: list[dict]) -> dict:
    given = [k for k in ("link", "host", "rank", "pick") if k in j]
    if len(given) != 1:
        raise ConfigError(f"{p}: give exactly one of link, host, rank or pick (got {', '.join(given) or 'none'})")
    key = given[0]
    out: dict[str, Any] = {}
    if key == "rank":
        job = _job_by_id(p, j, jobs)
        out["job"] = job["job"]
        out["rank"] = _int(f"{p}.rank", j["rank"], lo=0, hi=job["ranks"] - 1)
    elif key == "pick":
        out["pick"] = _str(f"{p}.pick", j["pick"], PICKS, "link class")
    else:
        out[key] = _str(f"{p}.{key}", j[key])
    if "job" in j and key != "rank":
        raise ConfigError(f"{p}.job: only meaningful with rank")
    return out


def _job_by_id(p: str, j: dict, jobs: list[dict]) -> dict:
    """The job a jitter entry names by its id (default: the first job)."""
    if "job" not in j:
        return jobs[0]
    want = _int(f"{p}.job", j["job"], lo=0, hi=65535)
    for job in jobs:
        if job["job"] == want:
            return job
    raise ConfigError(f"{p}.job: no job with id {want} (ids: {', '.join(str(x['job']) for x in jobs)})")


def _jitter(i: int, raw: Any, jobs: list[dict]) -> dict:
    p = f"jitter[{i}]"
    j = _table(p, raw)
    kind = _str(f"{p}.kind", _required(p, j, "kind"), JITTER_KINDS, "jitter kind")
    _no_unknown(p, j, JITTER_KEYS[kind])
    out: dict[str, Any] = {"kind": kind, "count": _int(f"{p}.count", j.get("count", 1), lo=1, hi=1000)}
    if kind == "compute":
        job = _job_by_id(p, j, jobs)
        n_iter = job["iterations"]
        rank = j.get("rank", "random")
        if rank != "random":
            rank = _int(f"{p}.rank", rank, lo=0, hi=job["ranks"] - 1)
        out.update(job=job["job"], rank=rank)
        it = j.get("iter", 0)
        if isinstance(it, list):
            if len(it) != 2:
                raise ConfigError(f"{p}.iter: a range must be [low, high], got {it!r}")
            lo_, hi_ = (_int(f"{p}.iter[{k}]", x, lo=0, hi=n_iter - 1)
                        for k, x in enumerate(it))
            if hi_ < lo_:
                raise ConfigError(f"{p}.iter: range [low, high] has high < low: {it!r}")
            out["iter"] = [lo_, hi_]
        else:
            out["iter"] = _int(f"{p}.iter", it, lo=0, hi=n_iter - 1)
        out["delay_s"] = _span(f"{p}.delay_s", _required(p, j, "delay_s"), lo=0, lo_open=True)
        return out
    out["start_s"] = _span(f"{p}.start_s", _required(p, j, "start_s"), lo=0)
    out["duration_s"] = _span(f"{p}.duration_s", _required(p, j, "duration_s"), lo=0, lo_open=True)
    if kind == "rate":
        given = [k for k in ("fraction", "rate_mbit") if k in j]
        if len(given) != 1:
            raise ConfigError(f"{p}: give exactly one of fraction or rate_mbit")
        if "fraction" in j:
            out["fraction"] = _span(f"{p}.fraction", j["fraction"], lo=0, lo_open=True)
            for x in (out["fraction"] if isinstance(out["fraction"], list) else [out["fraction"]]):
                if x > 1:
                    raise ConfigError(f"{p}.fraction: must be <= 1, got {j['fraction']!r}")
        else:
            out["rate_mbit"] = _span(f"{p}.rate_mbit", j["rate_mbit"], lo=0, lo_open=True)
        out.update(_link_target(p, j, jobs))
    elif kind == "netem":
        if not any(k in j for k in ("delay_ms", "jitter_ms", "loss_pct")):
            raise ConfigError(f"{p}: netem needs at least one of delay_ms, jitter_ms, loss_pct")
        for k in ("delay_ms", "jitter_ms"):
            out[k] = _span(f"{p}.{k}", j.get(k, 0.0), lo=0)
        out["loss_pct"] = _span(f"{p}.loss_pct", j.get("loss_pct", 0.0), lo=0)
        for x in (out["loss_pct"] if isinstance(out["loss_pct"], list) else [out["loss_pct"]]):
            if x > 100:
                raise ConfigError(f"{p}.loss_pct: must be <= 100, got {j['loss_pct']!r}")
        out["fallback_fraction"] = float(_num(f"{p}.fallback_fraction", j.get("fallback_fraction", 0.5),
                                              lo=0, lo_open=True, hi=1))
        out.update(_link_target(p, j, jobs))
    elif kind == "cross":
        out["src"] = _str(f"{p}.src", _required(p, j, "src"))
        out["dst"] = _str(f"{p}.dst", _required(p, j, "dst"))
        if out["src"] == out["dst"]:
            raise ConfigError(f"{p}.dst: must differ from src")
        out["rate_mbit"] = _span(f"{p}.rate_mbit", _required(p, j, "rate_mbit"), lo=0, lo_open=True)
        out["packet_bytes"] = _int(f"{p}.packet_bytes", j.get("packet_bytes", 1200), lo=64, hi=1472)
        out["ect"] = _bool(f"{p}.ect", j.get("ect", False))
    return out


def _runner(raw: Any) -> dict:
    r = _table("runner", raw)
    _no_unknown("runner", r, {"run_deadline_s"})
    out: dict[str, Any] = {"run_deadline_s": None}
    if "run_deadline_s" in r:
        out["run_deadline_s"] = float(_num("runner.run_deadline_s", r["run_deadline_s"], lo=1))
    return out


def _place(cfg: dict):
    """Build the topology and place the jobs with the topology builder (the
    network does the same from the resolved config); fills each job's hosts
    in ring order, so config.toml says where every rank ran."""
    try:
        topo = build(cfg["topology"])
        placed = place_jobs(topo, [{k: j[k] for k in ("ranks", "hosts", "placement", "job", "data_port") if k in j}
                                   for j in cfg["jobs"]])
    except TopoError as exc:
        raise ConfigError(str(exc)) from None
    for job, spec in zip(cfg["jobs"], placed):
        job["hosts"] = [r["host"] for r in spec["ranks"]]
        job.pop("placement", None)
    return topo


def _check_trackable(cfg: dict) -> None:
    """The switches' limits on a job (ring size and threshold against the
    step tag of its transport), checked before any network is built."""
    from topologies.switch.controlplane import check_job  # noqa: PLC0415
    for i, job in enumerate(cfg["jobs"]):
        try:
            check_job(job["job"], len(job["hosts"]), job["transport"] == "tcp", cfg["symphony"]["threshold"])
        except ValueError as exc:
            raise ConfigError(f"jobs[{i}]: {exc}") from None


def _check_jitter_names(p: str, entry: dict, topo) -> None:
    links = [link.name for link in topo.links]
    hosts = [h.name for h in topo.hosts]
    if "link" in entry and entry["link"] not in links:
        raise ConfigError(f"{p}.link: no link {entry['link']!r} in the topology (links: {', '.join(links)})")
    for key in ("host", "src", "dst"):
        if key in entry and entry[key] not in hosts:
            raise ConfigError(f"{p}.{key}: no host {entry[key]!r} in the topology (hosts: h1..h{len(hosts)})")


TOP_KEYS = {"name", "seed", "repeats", "variants", "topology", "jobs", "dcqcn", "ecn",
            "symphony", "jitter", "runner", "sweep"}


def resolve(raw: dict, source: str = "config") -> dict:
    """Check a parsed config and fill its defaults (pure)."""
    _no_unknown("", raw, TOP_KEYS)
    cfg: dict[str, Any] = {}
    name = raw.get("name", Path(source).stem)
    cfg["name"] = _str("name", name)
    if not cfg["name"] or not all(c.isalnum() or c in "-_." for c in cfg["name"]) or cfg["name"][0] == ".":
        raise ConfigError(f"name: use letters, digits, '-', '_' or '.', got {cfg['name']!r}")
    cfg["seed"] = _int("seed", raw.get("seed", 1), lo=0, hi=2**63 - 1)
    cfg["repeats"] = _int("repeats", raw.get("repeats", 1), lo=1, hi=10000)
    variants = raw.get("variants", list(VARIANTS))
    if not isinstance(variants, list) or not variants:
        raise ConfigError(f"variants: expected a non-empty array, got {variants!r}")
    for k, v in enumerate(variants):
        _str(f"variants[{k}]", v, VARIANTS, "variant")
    if len(set(variants)) != len(variants):
        raise ConfigError(f"variants: listed twice: {variants!r}")
    cfg["variants"] = list(variants)
    cfg["topology"] = _topology(_required("", raw, "topology"))
    jobs = _required("", raw, "jobs")
    if not isinstance(jobs, list) or not jobs:
        raise ConfigError("jobs: expected at least one [[jobs]] table")
    cfg["jobs"] = [_job(i, j, cfg["topology"]) for i, j in enumerate(jobs)]
    ports = [j["data_port"] for j in cfg["jobs"]]
    for i, port in enumerate(ports):
        if port in ports[:i] or port + 1 in ports[:i] or port - 1 in ports[:i]:
            raise ConfigError(f"jobs[{i}].data_port: {port} collides with another job's data or control port")
    topo = _place(cfg)
    cfg["dcqcn"] = _dcqcn(raw.get("dcqcn", {}))
    cfg["ecn"] = _ecn(raw.get("ecn", {}), cfg["topology"])
    cfg["symphony"] = _symphony(raw.get("symphony", {}))
    _check_trackable(cfg)
    jit = raw.get("jitter", [])
    if not isinstance(jit, list):
        raise ConfigError("jitter: expected [[jitter]] tables")
    cfg["jitter"] = [_jitter(i, j, cfg["jobs"]) for i, j in enumerate(jit)]
    for i, entry in enumerate(cfg["jitter"]):
        _check_jitter_names(f"jitter[{i}]", entry, topo)
    cfg["runner"] = _runner(raw.get("runner", {}))
    cfg["sweep"] = _sweep(raw.get("sweep", {}), cfg)
    return cfg


def load(path: str | Path) -> dict:
    """Read and resolve a config file; ConfigError (one line) on any problem."""
    return resolve(load_raw(path), str(path))


# --------------------------------------------------------------------------
# sweeps: "dotted.key" = [values]; the cross product of all axes


def _get_path(raw: Any, dotted: str) -> tuple[Any, str | int]:
    """Parent container and last key of a dotted path like 'jitter.0.fraction'."""
    parts: list[str | int] = [int(x) if x.isdigit() else x for x in dotted.split(".")]
    node = raw
    for part in parts[:-1]:
        try:
            node = node[part]
        except (KeyError, IndexError, TypeError):
            raise ConfigError(f"sweep.{dotted}: no such key in the config") from None
    if not isinstance(node, (dict, list)):
        raise ConfigError(f"sweep.{dotted}: no such key in the config")
    return node, parts[-1]


def _sweep(raw: Any, whole: dict) -> dict:
    """Sweep axes; each key must name a value of the resolved config."""
    s = _table("sweep", raw)
    out = {}
    for key, values in s.items():
        if not isinstance(values, list) or not values:
            raise ConfigError(f"sweep.{key}: expected a non-empty array of values, got {values!r}")
        if key.split(".")[0] in ("sweep", "name", "repeats", "variants"):
            raise ConfigError(f"sweep.{key}: this key cannot be swept")
        parent, last = _get_path(whole, key)
        if ((isinstance(parent, list) and not (isinstance(last, int) and last < len(parent)))
                or (isinstance(parent, dict) and last not in parent)):
            raise ConfigError(f"sweep.{key}: no such key in the config")
        out[key] = list(values)
    return out


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


def sweep_points(raw: dict, source: str = "config") -> list[tuple[str, dict]]:
    """(label, resolved config) for each point of the sweep's cross product;
    each point is validated like a config of its own."""
    base = resolve(raw, source)
    axes = base["sweep"]
    if not axes:
        raise ConfigError("sweep: --sweep given but the config has no [sweep] table")
    keys = list(axes)
    points = []
    for combo in itertools.product(*(axes[k] for k in keys)):
        point_raw = copy.deepcopy(raw)
        point_raw.pop("sweep", None)
        label_parts = []
        for key, value in zip(keys, combo):
            set_path(point_raw, key, value)
            short = key.split(".")[-1]
            label_parts.append(f"{short}{_label_value(value)}")
        label = "_".join(label_parts)
        try:
            cfg = resolve(point_raw, source)
        except ConfigError as exc:
            raise ConfigError(f"sweep point {label}: {exc}") from None
        cfg["sweep_point"] = dict(zip(keys, combo))
        points.append((label, cfg))
    return points


def load_raw(path: str | Path) -> dict:
    path = Path(path)
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read ({exc.strerror or exc})") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None

