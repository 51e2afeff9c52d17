"""Raw TOML dict -> ExperimentSpec: every key checked, every default filled,
the topology built and the jobs placed once, each job's file checked through
hosts.job (so `check` refuses what every run would refuse).  Pure apart from
reading the file in ``load``."""

from __future__ import annotations

import tomllib
from dataclasses import replace
from pathlib import Path

from contract.exits import one_line
from experiments.config import derive, sections
from experiments.config import schema as S
from experiments.config.schema import ConfigError
from experiments.config.spec import ExperimentSpec, JobConfig, gate_pkts, job_files
from hosts.job import JobError, parse_job
from hosts.udp.params import UdpParams
from topologies.spec.placement import JobRequest, place_jobs
from topologies.spec.topo import TopoError, TopoSpec, build
from topologies.switch.controlplane import check_groups, check_job
from topologies.switch.params import SymphonyParams


def load_raw(path: str | Path) -> dict:
    """The config file's TOML document; ConfigError (one line) for a file
    that cannot be read, is not UTF-8, is not TOML the parser takes (its
    arrays or inline tables nested past its recursion, an integer longer
    than Python converts) or nests past schema.MAX_NESTING."""
    path = Path(path)
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read ({exc.strerror or exc})") from None
    except UnicodeDecodeError as exc:
        byte = exc.object[exc.start]
        raise ConfigError(f"{path}: not UTF-8 text (byte 0x{byte:02x} at offset {exc.start})") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {one_line(exc)}") from None
    except RecursionError:
        raise ConfigError(f"{path}: arrays or inline tables nested deeper than the TOML parser follows "
                          f"(a config nests at most {S.MAX_NESTING} levels)") from None
    except ValueError as exc:       # what the parser's conversions refuse (an integer of over 4300 digits)
        raise ConfigError(f"{path}: not TOML this parser can read: {one_line(exc).split(';')[0]}") from None
    S.nesting(raw)
    return raw


def load(path: str | Path) -> ExperimentSpec:
    """Read and resolve a config file; ConfigError (one line) on any problem."""
    return resolve(load_raw(path), str(path))


def _name(raw: dict, source: str) -> str:
    name = S.string("name", raw.get("name", Path(source).stem))
    if not name or not all(c.isalnum() or c in "-_." for c in name) or name[0] == ".":
        raise ConfigError(f"name: use letters, digits, '-', '_' or '.', got {name!r}")
    S.dir_name("name", name, "results/<name>/")
    return name


def _variants(raw: dict) -> tuple[str, ...]:
    variants = raw.get("variants", list(S.VARIANTS))
    if not isinstance(variants, list) or not variants:
        raise ConfigError(f"variants: expected a non-empty array, got {variants!r}")
    for k, v in enumerate(variants):
        S.string(f"variants[{k}]", v, S.VARIANTS, "variant")
    if len(set(variants)) != len(variants):
        raise ConfigError(f"variants: listed twice: {variants!r}")
    return tuple(variants)


def _place(topology, requests: list[JobRequest]):
    """The topology and the jobs in ring order, by the topology builder."""
    try:
        topo = build(topology)
        return topo, place_jobs(topo, requests)
    except TopoError as exc:
        raise ConfigError(str(exc)) from None


def _check_jitter_names(p: str, entry: dict, topo: TopoSpec) -> None:
    links = [link.name for link in topo.links]
    hosts = [h.name for h in topo.hosts]
    if "link" in entry and entry["link"] not in links:
        raise ConfigError(f"{p}.link: no link {entry['link']!r} in the topology (links: {', '.join(links)})")
    for key in ("host", "src", "dst"):
        if key in entry and entry[key] not in hosts:
            raise ConfigError(f"{p}.{key}: no host {entry[key]!r} in the topology (hosts: h1..h{len(hosts)})")


def _check_trackable(jobs: tuple[JobConfig, ...], symphony: SymphonyParams, topo: TopoSpec) -> None:
    """What the switches can track: ring size and threshold against the step
    tag of the job's transport, and track groups against the fabric's
    spreads, before any network is built."""
    if symphony.track == "groups":
        try:
            check_groups(topo)
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
    for i, job in enumerate(jobs):
        try:
            check_job(job.job, job.ranks, job.transport == "tcp", symphony.threshold)
        except ValueError as exc:
            raise ConfigError(f"jobs[{i}]: {exc}") from None


def _check_job_files(spec: ExperimentSpec) -> None:
    """The job files every run writes, through the job file's own checks."""
    for i, doc in enumerate(job_files(spec, {})):
        try:
            parse_job(doc)
        except JobError as exc:
            # [dcqcn] is a table of its own; every other field is the job's
            where = "" if str(exc).startswith("dcqcn") else f"jobs[{i}]."
            raise ConfigError(f"{where}{exc}") from None


def _frame_bytes(rests) -> int:
    """The largest data frame of the jobs' [udp] tables (their default where
    a table does not say, or cannot be read: the job file's check names it)."""
    sizes = []
    for rest in rests:
        try:
            sizes.append(UdpParams(**rest["udp"]).frame_bytes)
        except (TypeError, ValueError):
            sizes.append(UdpParams().frame_bytes)
    return max(sizes)


def resolve(raw: dict, source: str = "config") -> ExperimentSpec:
    """Check a parsed config and fill its defaults (pure)."""
    S.no_unknown("", raw, S.TOP_KEYS)
    name = _name(raw, source)
    seed = S.integer("seed", raw.get("seed", S.DEFAULT_SEED), lo=0, hi=2**63 - 1)
    repeats = S.integer("repeats", raw.get("repeats", S.DEFAULT_REPEATS), lo=1, hi=10000)
    variants = _variants(raw)
    topology = sections.topology(S.required("", raw, "topology"))
    jobs_raw = S.required("", raw, "jobs")
    if not isinstance(jobs_raw, list) or not jobs_raw:
        raise ConfigError("jobs: expected at least one [[jobs]] table")
    requests, rests = zip(*(sections.job(i, j) for i, j in enumerate(jobs_raw)), strict=True)
    topo, placed = _place(topology, list(requests))
    # the switches' ECN thresholds and queue depth, where the config gives none
    derived = derive.ecn_and_queue(topo, placed, _frame_bytes(rests))
    topology = sections.topology(raw["topology"], derived_depth=derived.depth)
    depth_given = "queue_depth_pkts" in raw["topology"]
    ecn, depth, notes = sections.ecn(raw.get("ecn", {}), topology, derived, depth_given)
    topology = replace(topology, queue_depth_pkts=depth)
    topo = build(topology)
    jobs = tuple(JobConfig(placed=p, **rest) for p, rest in zip(placed, rests, strict=True))
    dcqcn = sections.dcqcn(raw.get("dcqcn", {}))
    symphony = sections.symphony(raw.get("symphony", {}), topology, depth_given)
    _check_trackable(jobs, symphony, topo)
    jit = raw.get("jitter", [])
    if not isinstance(jit, list):
        raise ConfigError("jitter: expected [[jitter]] tables")
    ids = [{"job": j.job, "ranks": j.ranks, "iterations": j.iterations} for j in jobs]
    entries = tuple(sections.jitter(i, e, ids) for i, e in enumerate(jit))
    for i, entry in enumerate(entries):
        _check_jitter_names(f"jitter[{i}]", entry, topo)
    spec = ExperimentSpec(name=name, seed=seed, repeats=repeats, variants=variants, topology=topology, topo=topo,
                          jobs=jobs, dcqcn=dcqcn, ecn=ecn, symphony=symphony, jitter=entries,
                          runner=sections.runner(raw.get("runner", {})), notes=notes)
    try:
        spec = replace(spec, symphony=replace(symphony, gate_pkts=gate_pkts(spec)))
    except ValueError as e:
        raise ConfigError(str(e)) from None
    _check_job_files(spec)
    return replace(spec, sweep=sections.sweep(raw.get("sweep", {}), spec.as_dict(keep_none=True)))
