"""Fidelity monitors of a run (as Mininet-HiFi's, Handigol et al., CoNEXT
2012): whether the machine bent the run's timing, judged from what the run
itself records, so that a run starved of CPU is not read as network
behaviour.

Figures (meta.json's ``fidelity.figures``):

- ``cpu``: the machine and the run's processes over the measured window
  (every agent up to every agent gone), sampled every SAMPLE_PERIOD_S from
  /proc by ``CpuSampler``: the machine's busy share and the share of the
  window it was saturated (>= SATURATED busy in a sample interval), the CPU
  pressure (/proc/pressure/cpu "some": the share of time a task waited for
  a CPU), and per role (agents, switches, the runner) the CPU seconds used
  and the seconds spent runnable but waiting for a CPU (/proc/<pid>/schedstat);
- ``ports``: each twin egress port's achieved rate while it had a backlog
  over its configured rate (topologies/switch/twin/queues.py counts the
  time the port was engaged and the service time of what left), judged on
  ports engaged at least ``port_min_busy_s``; and how late the twins let
  frames leave against their schedule (a contract.lateness record merged
  over every port);
- ``agents``: how late the agents' loops sent what only the pacer held and
  ran DCQCN's timer events (the stats events' ``lateness``, merged).

The verdict (``verdict``, pure) checks the figures against ``Thresholds``:
``ok`` when every measured check passes, else ``degraded`` with one reason a
failed check.  A check whose figure was not measured (no twin on bmv2, no
backlog, DCQCN off) is skipped and listed as such.  experiments/README.md,
"Fidelity", gives the thresholds and why.
"""

from __future__ import annotations

import itertools
import json
import os
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from contract.lateness import Lateness, merged
from hosts.dcqcn_regime import TIMER_FLOOR_S
from hosts.job import JobError, load_job

SAMPLE_PERIOD_S = 0.5
SATURATED = 0.95             # a sample interval this busy counts as saturated
PROC = Path("/proc")


@dataclass(frozen=True)
class Thresholds:
    """What a run may show and still be ``ok`` (experiments/README.md, "Fidelity")."""
    cpu_saturated_share: float = 0.5    # the machine saturated for at most this share of the window
    port_rate_ratio: float = 0.95       # every judged port achieved at least this share of its rate while backlogged
    port_min_busy_s: float = 0.2        # ports engaged less than this are not judged
    twin_late_p99_ms: float = 3.0       # the twins let 99 % of the queued frames leave at most this late
    pacing_late_p99_ms: float = 3.0     # the agents sent 99 % of the paced packets at most this late
    timer_late_p90_ms: float | None = None   # DCQCN timer events, p90; None: the jobs' timer floor
    tail_samples: int = 10              # a quantile q is judged with n >= this / (1 - q): p99 1000, p90 100


THRESHOLDS = Thresholds()


# --- /proc, parsed (pure) -------------------------------------------------------

def parse_proc_stat(text: str) -> tuple[int, int]:
    """(busy, total) jiffies of all CPUs from /proc/stat's "cpu" line; idle,
    iowait and niced user time count as not busy: work at a lower priority
    (a compiler build at nice 19) yields the CPU to the run's processes,
    and where it does not, their own wait for a CPU (schedstat) and the
    lateness monitors show it."""
    for line in text.splitlines():
        if line.startswith("cpu "):
            ticks = [int(x) for x in line.split()[1:]]
            idle = ticks[1] + ticks[3] + (ticks[4] if len(ticks) > 4 else 0)
            # guest time is included in user time already
            total = sum(ticks[:8])
            return total - idle, total
    raise ValueError("/proc/stat has no cpu line")


def parse_psi_some_us(text: str) -> int | None:
    """The cumulative "some" stall time (us) of /proc/pressure/cpu."""
    for line in text.splitlines():
        if line.startswith("some "):
            for item in line.split()[1:]:
                key, _, value = item.partition("=")
                if key == "total":
                    return int(value)
    return None


def parse_schedstat(text: str) -> tuple[int, int, int]:
    """(ns on a CPU, ns runnable but waiting for one, times it was given a
    CPU) of /proc/<pid>/schedstat."""
    run_ns, wait_ns, slices = text.split()[:3]
    return int(run_ns), int(wait_ns), int(slices)


@dataclass
class Sample:
    t: float                                   # time.monotonic()
    busy: int                                  # /proc/stat jiffies
    total: int
    psi_us: int | None                         # /proc/pressure/cpu some total
    procs: dict[int, tuple[int, int, int]] = field(default_factory=dict)   # pid -> schedstat


def cpu_figures(samples: list[Sample], roles: dict[int, str]) -> dict | None:
    """The ``cpu`` figures from samples in time order (pure).  Per process
    the difference between its first and last sample (a process that exited
    keeps what its last sample saw)."""
    if len(samples) < 2:
        return None
    first, last = samples[0], samples[-1]
    window = last.t - first.t
    if window <= 0:
        return None
    busy_total = [(b.busy - a.busy, b.total - a.total, b.t - a.t) for a, b in itertools.pairwise(samples)]
    d_total = sum(dt for _, dt, _ in busy_total)
    saturated = sum(dt_s for db, dt, dt_s in busy_total if dt > 0 and db / dt >= SATURATED)
    seen: dict[int, list[tuple[int, int, int]]] = {}
    for s in samples:
        for pid, v in s.procs.items():
            seen.setdefault(pid, [v, v])[1] = v
    by_role: dict[str, dict] = {}
    for pid, (a, b) in seen.items():
        r = by_role.setdefault(roles.get(pid, "other"), {"processes": 0, "cpu_s": 0.0, "wait_s": 0.0, "slices": 0})
        r["processes"] += 1
        r["cpu_s"] += (b[0] - a[0]) / 1e9
        r["wait_s"] += (b[1] - a[1]) / 1e9
        r["slices"] += b[2] - a[2]
    run_s = sum(r["cpu_s"] for r in by_role.values())
    wait_s = sum(r["wait_s"] for r in by_role.values())
    slices = sum(r["slices"] for r in by_role.values())
    for r in by_role.values():
        r["wait_share"] = _share(r["wait_s"], r["cpu_s"] + r["wait_s"])
        r["wait_per_slice_ms"] = _share(r["wait_s"] * 1e3, r["slices"])
        r["cores"] = round(r["cpu_s"] / window, 3)
        r["cpu_s"], r["wait_s"] = round(r["cpu_s"], 3), round(r["wait_s"], 3)
    psi = None
    if first.psi_us is not None and last.psi_us is not None:
        psi = _share((last.psi_us - first.psi_us) / 1e6, window)
    return {
        "window_s": round(window, 3),
        "samples": len(samples),
        "machine_busy": _share(last.busy - first.busy, d_total),
        "saturated_share": _share(saturated, window),
        "pressure_some": psi,
        "run_cpu_s": round(run_s, 3),
        "run_wait_s": round(wait_s, 3),
        "run_wait_share": _share(wait_s, run_s + wait_s),
        "run_wait_per_slice_ms": _share(wait_s * 1e3, slices),
        "run_cores": round(run_s / window, 3),
        "roles": dict(sorted(by_role.items())),
    }


def _share(part: float, whole: float) -> float | None:
    return round(part / whole, 4) if whole > 0 else None


# --- /proc, sampled (I/O) ----------------------------------------------------

def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None


def take_sample(pids, proc: Path = PROC) -> Sample:
    busy, total = parse_proc_stat(_read(proc / "stat") or "")
    psi_text = _read(proc / "pressure" / "cpu")
    procs = {}
    for pid in pids:
        text = _read(proc / str(pid) / "schedstat")
        if text:
            procs[pid] = parse_schedstat(text)
    return Sample(time.monotonic(), busy, total, parse_psi_some_us(psi_text) if psi_text else None, procs)


class CpuSampler:
    """Samples /proc every period_s in a thread of its own, from start() to
    stop(), which returns ``cpu_figures``."""

    def __init__(self, period_s: float = SAMPLE_PERIOD_S, proc: Path = PROC):
        self.period_s = period_s
        self.proc = proc
        self.roles: dict[int, str] = {}
        self.samples: list[Sample] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, roles: dict[int, str]) -> None:
        self.roles = dict(roles)
        self.samples = [take_sample(self.roles, self.proc)]
        self._thread = threading.Thread(target=self._loop, name="fidelity-cpu", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(self.period_s):
            self.samples.append(take_sample(self.roles, self.proc))

    def stop(self) -> dict | None:
        if self._thread is None:
            return None
        self._stop.set()
        self._thread.join()
        self._thread = None
        self.samples.append(take_sample(self.roles, self.proc))
        return cpu_figures(self.samples, self.roles)


# --- the twins' ports and the agents' loops (pure but for reading files) -------

def _summary(h: Lateness) -> dict:
    d = h.as_dict()
    d.pop("buckets")
    return d


def port_figures(switch_ports: dict, min_busy_s: float = THRESHOLDS.port_min_busy_s) -> dict | None:
    """From meta.json's ``switch_ports`` (the twins' stats): the ports judged
    (engaged at least min_busy_s), the lowest rate ratio among them and its
    port, and the twins' lateness merged over every port.  None where no
    port has figures (bmv2, or no rate)."""
    ports, records = [], []
    for sw, stats in sorted(switch_ports.items()):
        for port, p in sorted(((stats or {}).get("ports") or {}).items()):
            f = p.get("fidelity") if isinstance(p, dict) else None
            if not f:
                continue
            records.append(f.get("lateness"))
            if f.get("rate_ratio") is not None and f.get("busy_s", 0) >= min_busy_s:
                ports.append({"port": f"{sw}:{port}", "busy_s": f["busy_s"], "rate_ratio": f["rate_ratio"]})
    if not records:
        return None
    worst = min(ports, key=lambda x: x["rate_ratio"], default=None)
    return {"ports_with_rate": len(records), "ports_judged": len(ports),
            "rate_ratio_min": worst["rate_ratio"] if worst else None, "worst_port": worst,
            "lateness": _summary(merged(records))}


def last_stats_events(agents_dir: Path) -> list[dict]:
    """The last ``stats`` event of every agent record under agents_dir."""
    out = []
    for path in sorted(agents_dir.rglob("rank*.jsonl")):
        last = None
        try:
            lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            continue
        for line in reversed(lines):
            if '"stats"' in line:
                try:
                    ev = json.loads(line)
                except ValueError:
                    continue
                if ev.get("kind") == "stats":
                    last = ev
                    break
        if last is not None:
            out.append(last)
    return out


def agent_figures(stats_events: list[dict]) -> dict | None:
    """The agents' pacing and DCQCN timer lateness, merged over agents, and
    the worst agent's p99 of each.  None when no agent recorded any."""
    recs = [ev["lateness"] for ev in stats_events if isinstance(ev.get("lateness"), dict)]
    if not recs:
        return None
    out: dict = {"agents": len(recs)}
    for name in ("pacing", "dcqcn_timer"):
        hs = [Lateness.from_dict(r.get(name)) for r in recs]
        out[name] = _summary(merged(r.get(name) for r in recs))
        worst = [h.quantile_s(0.99) for h in hs if h.n]
        out[name]["worst_agent_p99_ms"] = round(max(worst) * 1e3, 4) if worst else None
    return out


# --- the verdict (pure) --------------------------------------------------------

def _check(checks: list, name: str, value, limit, higher_is_worse: bool, what: str) -> None:
    ok = None
    if value is not None and limit is not None:
        ok = value <= limit if higher_is_worse else value >= limit
    checks.append({"check": name, "value": value, "limit": limit, "ok": ok,
                   "bad_if": ">" if higher_is_worse else "<", "what": what})


def verdict(figures: dict, th: Thresholds = THRESHOLDS, timer_floor_ms: float = TIMER_FLOOR_S * 1e3) -> dict:
    """``ok`` or ``degraded`` from the figures (``cpu``, ``ports``,
    ``agents``; any may be None), the checks and the reasons (one a failed
    check).  timer_floor_ms: the DCQCN timer floor the jobs ran with (the
    timer check's limit unless the thresholds set one)."""
    cpu = figures.get("cpu") or {}
    ports = figures.get("ports") or {}
    agents = figures.get("agents") or {}
    checks: list[dict] = []
    _check(checks, "cpu_saturated_share", cpu.get("saturated_share"), th.cpu_saturated_share, True,
           f"share of the run the machine was >= {SATURATED:.0%} busy")
    _check(checks, "port_rate_ratio", ports.get("rate_ratio_min"), th.port_rate_ratio, False,
           "lowest achieved / configured rate of a switch port while backlogged"
           + (f" ({ports['worst_port']['port']})" if ports.get("worst_port") else ""))
    def late(record: dict | None, q: float):
        """The record's q-quantile when enough samples lie beyond it to say
        (a p99 of 200 samples is two of them), else None: not judged."""
        record = record or {}
        enough = record.get("n", 0) * (1 - q) >= th.tail_samples - 1e-9
        return record.get(f"p{round(q * 100)}_ms") if enough else None

    _check(checks, "twin_late_p99_ms", late(ports.get("lateness"), 0.99), th.twin_late_p99_ms, True,
           "p99 of how late the twins let queued frames leave (ms)")
    _check(checks, "pacing_late_p99_ms", late(agents.get("pacing"), 0.99), th.pacing_late_p99_ms, True,
           "p99 of how late the agents sent paced packets (ms)")
    timer_limit = th.timer_late_p90_ms if th.timer_late_p90_ms is not None else timer_floor_ms
    _check(checks, "timer_late_p90_ms", late(agents.get("dcqcn_timer"), 0.90), timer_limit, True,
           "p90 of how late the agents ran DCQCN timer events (ms), against the timer floor")
    failed = [c for c in checks if c["ok"] is False]
    return {"verdict": "degraded" if failed else "ok",
            "reasons": [f"{c['check']} {c['value']:g} {c['bad_if']} {c['limit']:g}: {c['what']}" for c in failed],
            "not_measured": [c["check"] for c in checks if c["ok"] is None],
            "checks": checks}


# --- one run -------------------------------------------------------------------

def timer_floor_ms(run_dir: Path) -> float:
    """The lowest DCQCN timer floor among the run's jobs (ms)."""
    floors = []
    for path in sorted((run_dir / "jobs").glob("job*.toml")):
        try:
            f = load_job(path).timer_floor_s
        except JobError:
            continue
        floors.append(TIMER_FLOOR_S if f is None else f)
    return min(floors, default=TIMER_FLOOR_S) * 1e3


def assess(run_dir: Path, meta: dict, cpu: dict | None, th: Thresholds = THRESHOLDS) -> dict:
    """meta.json's ``fidelity``: the verdict, its reasons and checks, the
    thresholds and the figures."""
    figures = {"cpu": cpu, "ports": port_figures(meta.get("switch_ports") or {}, th.port_min_busy_s),
               "agents": agent_figures(last_stats_events(run_dir / "agents"))}
    return {**verdict(figures, th, timer_floor_ms(run_dir)), "thresholds": asdict(th), "figures": figures}


class RunMonitor:
    """The runner's hooks: start() once every agent is up (the measured
    window), stop() when they are gone, assess() after the switches were read."""

    def __init__(self, th: Thresholds = THRESHOLDS):
        self.th = th
        self.sampler = CpuSampler()
        self.cpu: dict | None = None

    def start(self, net, agents) -> None:
        roles = {os.getpid(): "runner"}
        for sw in getattr(getattr(net, "net", None), "switches", []):
            pid = getattr(sw, "switch_pid", None)
            if pid:
                roles[pid] = "switches"
        roles.update({a.proc.pid: "agents" for a in agents})
        self.sampler.start(roles)

    def stop(self) -> None:
        if self.cpu is None:
            self.cpu = self.sampler.stop()

    def assess(self, run_dir: Path, meta: dict) -> dict:
        """Never raises: a monitor must not cost the run its records."""
        try:
            self.stop()
            return assess(run_dir, meta, self.cpu, self.th)
        except Exception as exc:
            return {"verdict": None, "reasons": [f"the monitors failed: {type(exc).__name__}: {exc}"]}


def summary_warnings(results) -> list[str]:
    """warnings_for the runner's results (RunResult: variant, run_dir), from
    their meta.json."""
    runs = []
    for r in results:
        try:
            fid = json.loads((r.run_dir / "meta.json").read_text(encoding="utf-8")).get("fidelity")
        except (OSError, ValueError):
            fid = None
        runs.append((r.variant, fid))
    return warnings_for(runs)


def warnings_for(runs: list[tuple[str, dict | None]]) -> list[str]:
    """The printed summary's warnings: per variant the runs whose fidelity
    was degraded, from (variant, meta.json's fidelity) pairs."""
    out = []
    for v in dict.fromkeys(v for v, _ in runs):
        mine = [f for var, f in runs if var == v]
        bad = [f for f in mine if f and f.get("verdict") == "degraded"]
        if bad:
            reasons = sorted({r.split(":")[0].split()[0] for f in bad for r in f.get("reasons", [])})
            out.append(f"warning: fidelity degraded in {len(bad)} of {len(mine)} {v} run(s) ({', '.join(reasons)}): "
                       "the machine bent their timing: they count only where no run of the variant has an "
                       "ok fidelity (experiments/README.md, Fidelity)")
    return out
