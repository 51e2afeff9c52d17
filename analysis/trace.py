"""A run's bandwidth story per time window, as a table (pure): per job the
sum of its busy senders' DCQCN rates, the CNPs they received and the steps
its ranks ended (analysis.metrics.rate_windows), in the config's own units
(a scaled run's clock divided by its K).  For tracing which mechanism
moves a job's CCT: `python3 -m analysis rates BASELINE_RUN SYMPHONY_RUN`."""

from __future__ import annotations

from analysis.metrics import NS, by_job, cnp_delays, link_rate_bps, quantile, rate_windows
from analysis.records import Run


def rate_table(run: Run, window_s: float, count: int) -> str:
    """One run's windows, a row each: its start (config seconds), then per
    job Rc summed over busy senders (Gbit/s), CNPs received, steps ended."""
    f = run.time_factor
    t0 = min((e["t"] for e in run.events), default=0)
    rows = rate_windows(run.events, t0, max(1, round(window_s * f * NS)), count, link_rate_bps(run.config))
    jobs = [j for j in sorted(by_job(run.events)) if j in rows]
    head = ["from s"] + [f"job {j} {c}" for j in jobs for c in ("Rc Gb/s", "CNPs", "steps")]
    lines = [f"{run.name} ({run.variant}; windows of {window_s:g} s of the config's time"
             + (f", the run's clock x{f:g}" if f != 1 else "") + ")", "  ".join(f"{h:>14}" for h in head)]
    for w in range(count):
        cells = [f"{w * window_s:.3f}"]
        for j in jobs:
            r = rows[j]
            cells += [f"{r['rc_sum_bps'][w] / 1e9:.3g}", f"{r['cnp_rx'][w]:.0f}", f"{r['steps_ended'][w]:.0f}"]
        lines.append("  ".join(f"{c:>14}" for c in cells))
    lines.append(cnp_delay_line(run))
    return "\n".join(lines)


def cnp_delay_line(run: Run) -> str:
    """The feedback loop's delay: CNPs from receiver to sender, quantiles
    in ms of the config's time (a congested port that queues them behind
    data shows here: topology.control_priority)."""
    d = cnp_delays(run.events)
    if not d:
        return "CNPs from receiver to sender: none"
    f = run.time_factor

    def ms(q: float) -> str:
        return f"{quantile(d, q) / f / 1e6:.3g}"
    return (f"CNPs from receiver to sender (ms of the config's time, {len(d):,} CNPs): "
            f"p50 {ms(0.5)}, p90 {ms(0.9)}, p99 {ms(0.99)}")
