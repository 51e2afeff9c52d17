"""One checker per table of the config: raw TOML value in, typed value (or
a plain dict of checked values) out, every default filled.  Cross-table
checks that need the built topology are resolve's."""

from __future__ import annotations

from typing import Any

from analysis.regime import REGIME_FACTOR
from contract.ecmp import ROUTINGS
from contract.tags import TRANSPORTS
from experiments.config import schema as S
from experiments.config.derive import EcnDerived, queue_depth
from experiments.config.schema import ConfigError
from experiments.config.spec import RunnerParams
from hosts.dcqcn import PRESET_NAMES
from hosts.job import MAX_STRAGGLE_S
from topologies.spec.netem import DISTRIBUTIONS, MAX_JITTER_MS
from topologies.spec.placement import PLACEMENTS, JobRequest
from topologies.spec.topo import KINDS, TopoParams
from topologies.switch.params import TRACKS, EcnParams, SymphonyParams


def topology(raw: Any, derived_depth: int | None = None) -> TopoParams:
    """The [topology] table; a queue depth it does not give is derived_depth
    (experiments.config.derive: the deployment's queue per ECN threshold),
    TopoParams' own where there is none yet."""
    t = S.table("topology", raw)
    S.no_unknown("topology", t, S.TOPO_KEYS)
    d = S.TOPO_DEFAULTS
    kind = S.string("topology.kind", S.required("topology", t, "kind"), KINDS, "topology")
    out: dict[str, Any] = {"kind": kind}
    out["hosts"] = S.integer("topology.hosts", S.required("topology", t, "hosts"), lo=2, hi=S.MAX_HOSTS)
    if kind == "leafspine":
        for key in S.LEAFSPINE_KEYS:
            out[key] = S.integer(f"topology.{key}", t.get(key, d[key]), lo=1, hi=S.MAX_FABRIC_SWITCHES)
    else:
        for key in S.LEAFSPINE_KEYS:
            if key in t:
                raise ConfigError(f"topology.{key}: only meaningful for kind 'leafspine'")
    host_rate = _link_rate("topology.host_rate_mbit", S.required("topology", t, "host_rate_mbit"))
    out["host_rate_mbit"] = host_rate
    # written out (not None) so that config.toml says the fabric's rate
    out["fabric_rate_mbit"] = _link_rate("topology.fabric_rate_mbit", t.get("fabric_rate_mbit", host_rate))
    for key in ("host_delay_ms", "fabric_delay_ms"):
        out[key] = S.real(f"topology.{key}", t.get(key, d[key]), lo=0)
    default_depth = d["queue_depth_pkts"] if derived_depth is None else derived_depth
    out["queue_depth_pkts"] = S.integer("topology.queue_depth_pkts", t.get("queue_depth_pkts", default_depth), lo=1)
    out["control_priority"] = S.boolean("topology.control_priority", t.get("control_priority", d["control_priority"]))
    out["routing"] = S.string("topology.routing", t.get("routing", d["routing"]), ROUTINGS, "routing")
    return TopoParams(**out)


def _link_rate(path: str, v: Any) -> float:
    # any positive rate: what the emulation can carry is the machine's to
    # say (experiments.config.machine.emulation_refusal); the simulation
    # carries any
    return S.real(path, v, lo=0, lo_open=True)


def job(i: int, raw: Any) -> tuple[JobRequest, dict[str, Any]]:
    """The placement request of jobs[i] and the rest of the table
    (message_bytes, iterations, udp, deadlines).  Whether the requests fit
    the topology together is place_jobs' to say."""
    p = f"jobs[{i}]"
    j = S.table(p, raw)
    S.no_unknown(p, j, S.JOB_KEYS)
    job_id = S.integer(f"{p}.job", j.get("job", i + 1), lo=0, hi=65535)
    ranks = S.integer(f"{p}.ranks", S.required(p, j, "ranks"), lo=2, hi=64)
    hosts = None
    placement = S.DEFAULT_PLACEMENT
    if "hosts" in j and "placement" in j:
        raise ConfigError(f"{p}.hosts: give either hosts or placement, not both")
    if "hosts" in j:
        hosts = j["hosts"]
        if not isinstance(hosts, list) or not all(isinstance(h, str) for h in hosts):
            raise ConfigError(f"{p}.hosts: expected an array of host names, got {hosts!r}")
        hosts = tuple(hosts)
    else:
        placement = S.string(f"{p}.placement", j.get("placement", placement), PLACEMENTS, "placement")
    rest: dict[str, Any] = {
        # ranges and the float32 multiple are the job file's (hosts.job), checked when resolved
        "message_bytes": S.integer(f"{p}.message_bytes", S.required(p, j, "message_bytes")),
        "iterations": S.integer(f"{p}.iterations", S.required(p, j, "iterations"), lo=1, hi=10000),
    }
    transport = S.string(f"{p}.transport", j.get("transport", S.DEFAULT_TRANSPORT), TRANSPORTS, "transport")
    data_port = S.integer(f"{p}.data_port", j.get("data_port", S.DATA_PORT_BASE + S.DATA_PORT_STRIDE * i),
                          lo=1024, hi=S.DATA_PORT_MAX)
    # transport parameters and deadlines go to the job file as they are;
    # hosts.job checks their names and ranges
    for key in ("udp", "deadlines"):
        rest[key] = dict(S.table(f"{p}.{key}", j.get(key, {})))
    request = JobRequest(job=job_id, ranks=ranks, data_port=data_port, transport=transport, hosts=hosts,
                         placement=placement)
    return request, rest


def dcqcn(raw: Any) -> dict[str, Any]:
    d = S.table("dcqcn", raw)
    # overrides of the preset's fields by name: hosts.dcqcn checks them when
    # the job files are built (resolve does that once)
    return {"preset": S.string("dcqcn.preset", d.get("preset", S.DEFAULT_PRESET), PRESET_NAMES, "DCQCN preset"),
            **{k: v for k, v in d.items() if k != "preset"}}


def ecn(raw: Any, topo: TopoParams, derived: EcnDerived | None = None,
        depth_given: bool = True) -> tuple[EcnParams, int, tuple[str, ...]]:
    """The [ecn] table, the queue depth it fits in and a note per derived
    value that moved to fit what the config gives.  Thresholds it does not
    give are derived's (Kmin, Kmax: the deployment's per bandwidth-delay
    product, experiments.config.derive), EcnParams' own where there are
    none; a queue depth the config does not give (depth_given) is derived's.

    A derived value never makes an error about a key the config does not
    give: it is derived within what the config gives where the derivation
    allows (a Kmin at most the given Kmax, a Kmax at least the given Kmin, a
    queue deep enough for the given Kmax), and said in a note with what it
    does to the deployment's regime; a derived Kmax deeper than the given
    queue depth is refused naming both and both fixes."""
    e = S.table("ecn", raw)
    S.no_unknown("ecn", e, S.ECN_KEYS)
    d = derived or EcnDerived(S.ECN_DEFAULTS["kmin"], S.ECN_DEFAULTS["kmax"], topo.queue_depth_pkts)
    depth, notes = topo.queue_depth_pkts, []
    kmin = S.integer("ecn.kmin", e["kmin"], lo=0) if "kmin" in e else None
    kmax = S.integer("ecn.kmax", e["kmax"], lo=0) if "kmax" in e else None
    kmax_key = "ecn.kmax"
    if kmin is not None and kmax is not None and kmax < kmin:
        raise ConfigError(f"ecn.kmax: must be >= ecn.kmin ({kmin}), got {kmax}")
    if kmax is None and kmin is not None and kmin > d.kmax:
        kmax, kmax_key = kmin, "ecn.kmin"
        notes.append(f"ecn.kmax: {kmin} packets, ecn.kmin's, above the kmax derived for this network "
                     f"({d.kmax_words()}){_regime_effect(d, 'kmax', kmin)}")
    elif kmax is None:
        kmax, kmax_key = d.kmax, ""
    if kmin is None:
        kmin = min(d.kmin, kmax)
        if kmin < d.kmin:
            notes.append(f"ecn.kmin: {kmin} packets, ecn.kmax's, below the kmin derived for this network "
                         f"({d.kmin} packets){_regime_effect(d, 'kmin', kmin)}")
    if kmax > depth and not kmax_key:
        fits = d.off_deployment("kmax", depth)
        raise ConfigError(
            f"topology.queue_depth_pkts: {depth} packets cannot hold the ECN kmax derived for this network "
            f"({d.kmax_words()}): raise queue_depth_pkts to at least {d.kmax} ({d.depth} keeps the deployment's "
            f"queue per kmax) or set [ecn] kmax to at most {depth}"
            + (f" (at {depth}, {fits:.2g} times the deployment's kmax per bandwidth-delay product"
               f"{'' if _in_band(fits) else ', out of its regime'})" if fits else ""))
    if kmax > depth and depth_given:
        raise ConfigError(f"{kmax_key}: {kmax} exceeds topology.queue_depth_pkts ({depth})")
    if kmax > depth:
        depth = queue_depth(kmax)
        notes.append(f"topology.queue_depth_pkts: {depth} packets, the deployment's queue per kmax for "
                     f"{kmax_key} {kmax}, deeper than the {topo.queue_depth_pkts} derived for this network "
                     "(the regime verdict does not count the depth)")
    pmax = S.real("ecn.pmax", e.get("pmax", S.ECN_DEFAULTS["pmax"]), lo=0, hi=1)
    return EcnParams(kmin=kmin, kmax=kmax, pmax=pmax), depth, tuple(notes)


def _in_band(times: float) -> bool:
    """A ratio this many times the deployment's is within the regime verdict's band."""
    return 1 / REGIME_FACTOR <= times <= REGIME_FACTOR


def _regime_effect(d: EcnDerived, name: str, pkts: int) -> str:
    """What a threshold of pkts packets makes of the regime verdict's
    <name>_per_bdp, in words ("" without a line rate)."""
    times = d.off_deployment(name, pkts)
    if times is None:
        return ""
    return (f"; {name}_per_bdp is then {times:.2g} times the deployment's, "
            + (f"within the regime verdict's factor {REGIME_FACTOR:g}" if _in_band(times) else
               f"beyond the regime verdict's factor {REGIME_FACTOR:g}: out of the deployment's regime"))


def symphony(raw: Any, topo: TopoParams, depth_given: bool = True) -> SymphonyParams:
    s = S.table("symphony", raw)
    S.no_unknown("symphony", s, S.SYMPHONY_KEYS)
    d = S.SYMPHONY_DEFAULTS
    k_sym = S.integer("symphony.k_sym", s.get("k_sym", d["k_sym"]), lo=0)
    if k_sym > topo.queue_depth_pkts:
        # a queue never reaches it: Symphony would never mark
        depth = (f"topology.queue_depth_pkts ({topo.queue_depth_pkts})" if depth_given else
                 f"the queue depth derived for this network ({topo.queue_depth_pkts} packets, the deployment's queue "
                 "per ECN kmax)")
        fix = "" if depth_given else f": lower k_sym or set topology.queue_depth_pkts to at least {k_sym}"
        raise ConfigError(f"symphony.k_sym: {k_sym} exceeds {depth}: no queue reaches it, so Symphony would never "
                          f"mark{fix}")
    return SymphonyParams(threshold=S.integer("symphony.threshold", s.get("threshold", d["threshold"]), lo=0, hi=255),
                          k_sym=k_sym, p_sym=S.real("symphony.p_sym", s.get("p_sym", d["p_sym"]), lo=0, hi=1),
                          gate_step=S.real("symphony.gate_step", s.get("gate_step", d["gate_step"]), lo=0, hi=1),
                          track=S.string("symphony.track", s.get("track", d["track"]), TRACKS, "track"))


def runner(raw: Any) -> RunnerParams:
    r = S.table("runner", raw)
    S.no_unknown("runner", r, S.RUNNER_KEYS)
    if "run_deadline_s" not in r:
        return RunnerParams()
    return RunnerParams(run_deadline_s=S.real("runner.run_deadline_s", r["run_deadline_s"], lo=1))


# --- [[jitter]] -----------------------------------------------------------------

def _job_by_id(p: str, j: dict, jobs: list[dict]) -> dict:
    """The job a jitter entry names by its id (default: the first job)."""
    if "job" not in j:
        return jobs[0]
    want = S.integer(f"{p}.job", j["job"], lo=0, hi=65535)
    for job_ in jobs:
        if job_["job"] == want:
            return job_
    raise ConfigError(f"{p}.job: no job with id {want} (ids: {', '.join(str(x['job']) for x in jobs)})")


def _link_target(p: str, j: dict, jobs: list[dict]) -> dict:
    given = [k for k in S.LINK_TARGETS if k in j]
    if len(given) != 1:
        raise ConfigError(f"{p}: give exactly one of link, host, rank or pick (got {', '.join(given) or 'none'})")
    key = given[0]
    out: dict[str, Any] = {}
    if key == "rank":
        job_ = _job_by_id(p, j, jobs)
        out["job"] = job_["job"]
        out["rank"] = S.integer(f"{p}.rank", j["rank"], lo=0, hi=job_["ranks"] - 1)
    elif key == "pick":
        out["pick"] = S.string(f"{p}.pick", j["pick"], S.PICKS, "link class")
    else:
        out[key] = S.string(f"{p}.{key}", j[key])
    if "job" in j and key != "rank":
        raise ConfigError(f"{p}.job: only meaningful with rank")
    return out


def _bounded(path: str, value: float | list[float], hi: float, raw: Any) -> None:
    for x in (value if isinstance(value, list) else [value]):
        if x > hi:
            raise ConfigError(f"{path}: must be <= {hi:g}, got {raw!r}")


def _lowest(v: float | list[float]) -> float:
    return v[0] if isinstance(v, list) else v


def _netem_needs(p: str, out: dict) -> None:
    """What netem refuses: reordering without a delay (a reordered frame is
    one sent before the delayed ones), a distribution without a delay and a
    jitter to shape."""
    if _lowest(out["delay_ms"]) <= 0 and out["reorder_pct"] != 0:
        raise ConfigError(f"{p}.reorder_pct: reordering needs delay_ms > 0 (reordered frames overtake "
                          f"delayed ones), got delay_ms {out['delay_ms']!r}")
    dist = out["distribution"]
    if dist != "uniform" and (_lowest(out["delay_ms"]) <= 0 or _lowest(out["jitter_ms"]) <= 0):
        raise ConfigError(f"{p}.distribution: {dist!r} needs delay_ms > 0 and jitter_ms > 0 (as tc netem), "
                          f"got delay_ms {out['delay_ms']!r}, jitter_ms {out['jitter_ms']!r}")


def jitter(i: int, raw: Any, jobs: list[dict]) -> dict[str, Any]:
    """One [[jitter]] entry, defaults filled (jobs: id, ranks, iterations of each job)."""
    p = f"jitter[{i}]"
    j = S.table(p, raw)
    kind = S.string(f"{p}.kind", S.required(p, j, "kind"), S.JITTER_KINDS, "jitter kind")
    S.no_unknown(p, j, S.JITTER_KEYS[kind])
    out: dict[str, Any] = {"kind": kind, "count": S.integer(f"{p}.count", j.get("count", 1), lo=1, hi=1000)}
    if kind == "compute":
        job_ = _job_by_id(p, j, jobs)
        rank = j.get("rank", "random")
        if rank != "random":
            rank = S.integer(f"{p}.rank", rank, lo=0, hi=job_["ranks"] - 1)
        out.update(job=job_["job"], rank=rank)

        def an_iter(path: str, x: Any) -> int:
            return S.integer(path, x, lo=0, hi=job_["iterations"] - 1)
        it = j.get("iter", 0)
        out["iter"] = S.pair(f"{p}.iter", it, an_iter) if isinstance(it, list) else an_iter(f"{p}.iter", it)
        out["delay_s"] = S.span(f"{p}.delay_s", S.required(p, j, "delay_s"), lo=0, lo_open=True)
        if max(out["delay_s"] if isinstance(out["delay_s"], list) else [out["delay_s"]]) > MAX_STRAGGLE_S:
            # the agents' job file refuses it: every run would fail as it starts
            raise ConfigError(f"{p}.delay_s: at most {MAX_STRAGGLE_S:g} s (a straggle the agents' job file "
                              f"accepts), got {j['delay_s']!r}")
        return out
    out["start_s"] = S.span(f"{p}.start_s", S.required(p, j, "start_s"), lo=0)
    out["duration_s"] = S.span(f"{p}.duration_s", S.required(p, j, "duration_s"), lo=0, lo_open=True)
    if kind == "rate":
        given = [k for k in ("fraction", "rate_mbit") if k in j]
        if len(given) != 1:
            raise ConfigError(f"{p}: give exactly one of fraction or rate_mbit")
        key = given[0]
        out[key] = S.span(f"{p}.{key}", j[key], lo=0, lo_open=True)
        if key == "fraction":
            _bounded(f"{p}.fraction", out["fraction"], 1, j["fraction"])
        out.update(_link_target(p, j, jobs))
    elif kind == "netem":
        if not any(k in j for k in ("delay_ms", "jitter_ms", "loss_pct")):
            raise ConfigError(f"{p}: netem needs at least one of delay_ms, jitter_ms, loss_pct")
        d = S.NETEM_DEFAULTS
        for k in ("delay_ms", "jitter_ms", "loss_pct", "correlation_pct", "reorder_pct"):
            out[k] = S.span(f"{p}.{k}", j.get(k, d[k]), lo=0)
        for k, hi in (("loss_pct", 100), ("correlation_pct", 100), ("reorder_pct", 100),
                      ("jitter_ms", MAX_JITTER_MS)):
            _bounded(f"{p}.{k}", out[k], hi, j.get(k))
        out["distribution"] = S.string(f"{p}.distribution", j.get("distribution", d["distribution"]),
                                       DISTRIBUTIONS, "distribution")
        _netem_needs(p, out)
        out["fallback_fraction"] = S.real(f"{p}.fallback_fraction", j.get("fallback_fraction", d["fallback_fraction"]),
                                          lo=0, lo_open=True, hi=1)
        out.update(_link_target(p, j, jobs))
    elif kind == "cross":
        out["src"] = S.string(f"{p}.src", S.required(p, j, "src"))
        out["dst"] = S.string(f"{p}.dst", S.required(p, j, "dst"))
        if out["src"] == out["dst"]:
            raise ConfigError(f"{p}.dst: must differ from src")
        out["rate_mbit"] = S.span(f"{p}.rate_mbit", S.required(p, j, "rate_mbit"), lo=0, lo_open=True)
        d = S.CROSS_DEFAULTS
        out["packet_bytes"] = S.integer(f"{p}.packet_bytes", j.get("packet_bytes", d["packet_bytes"]), lo=64, hi=1472)
        out["ect"] = S.boolean(f"{p}.ect", j.get("ect", d["ect"]))
    return out


# --- [sweep] --------------------------------------------------------------------

UNSWEPT = ("sweep", "name", "repeats", "variants")


def _exists(resolved: dict, dotted: str) -> bool:
    """Whether a dotted path like 'jitter.0.fraction' names a value."""
    node: Any = resolved
    for part in (int(x) if x.isdigit() else x for x in dotted.split(".")):
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int) and part < len(node):
            node = node[part]
        else:
            return False
    return True


def sweep(raw: Any, resolved: dict) -> dict[str, list]:
    """Sweep axes; each key must name a value of the resolved config."""
    s = S.table("sweep", raw)
    out = {}
    for key, values in s.items():
        if not isinstance(values, list) or not values:
            raise ConfigError(f"sweep.{key}: expected a non-empty array of values, got {values!r}")
        if key.split(".")[0] in UNSWEPT:
            raise ConfigError(f"sweep.{key}: this key cannot be swept")
        if not _exists(resolved, key):
            raise ConfigError(f"sweep.{key}: no such key in the config")
        out[key] = list(values)
    return out
