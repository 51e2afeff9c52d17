"""report.md: the summary table, the runs, the per-job tables when a run
has several jobs, the plots with their captions, the reading warnings.
Text only: the figures come from report's summary and analyse_run."""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

from analysis import metrics as m
from analysis.noise import describe as describe_noise
from analysis.oracle import CAPTURE_MIN_PCT
from analysis.regime import RECOVERED, REGIME_FACTOR, describe
from analysis.simulation import CONFIG_SCALE, CONFIRMED_NOTE, DEPLOYMENT_SCALE


def _f(x: Any, fmt: str = "{:.3f}") -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    return fmt.format(x)


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:+.1f} %"


def units_line(summary: dict[str, Any]) -> str:
    """What the report's times are in, said once: the config's own time,
    and for a scaled batch the factor its runs' clock ran at (K)."""
    f, k, r = summary.get("time_factor") or 1.0, summary.get("scale") or 1.0, summary.get("rate_factor") or 1.0
    line = "Units: every time in this report is in seconds (or ms) of the config's own time"
    if f != 1.0:
        how = f"--scale K = {k:g}" + (f" on links at {r:.4g} times the config's rates" if r != 1.0 else "")
        line += (f". This batch ran at {how}: its runs' clock ran {f:g} times the config's, and their seconds are "
                 f"divided by {f:g} here, the regime and fidelity tables' excepted (they keep the runs' own clock, "
                 "the machine's)")
    return line + "."


def render_markdown(title: str, summary: dict[str, Any], analysed: list[dict[str, Any]],
                    plot_paths: list[Path], out_dir: Path, warnings: list[str]) -> str:
    """analysed: the runs as analyse_run gives them, each summary in the
    config's units (analysis.report.config_summary)."""
    lines = [f"# Report: {title}", "",
             f"{len(analysed)} run(s): " + ", ".join(f"`{a['run']}`" for a in analysed), "",
             units_line(summary), ""]
    lines += _per_job_markdown(summary)
    if any(row["oracle"] for row in summary.get("jobs", {}).values()):
        lines += _oracle_markdown(summary)
    if any(row.get("sim") for row in summary.get("jobs", {}).values()):
        lines += _sim_markdown(summary)
    lines += _regime_verdict_markdown(summary)
    if (summary.get("regime") or {}).get("rows"):
        lines += _regime_markdown(summary)
    lines += _variants_markdown(summary)
    if summary.get("multi_job"):
        lines += _per_iteration_markdown(analysed)
    wrong = [r for row in summary["variants"].values() for r in row["wrong_results"]]
    if wrong:
        lines += [f"**Wrong AllReduce results** in: {', '.join(wrong)}", ""]
    not_ok = [(v, r) for v, row in summary["variants"].items() for r in row["runs_not_ok"]]
    if not_ok:
        lines += ["## Runs not counted (failed or interrupted)", "", "| run | variant | status | reason |",
                  "|---|---|---|---|"]
        lines += [f"| {r['run']} | {v} | {r['status']} | {r['reason'] or '-'} |" for v, r in not_ok]
        lines.append("")
    if any(a.get("fidelity") for a in analysed):
        lines += _fidelity_markdown(analysed)
    lines += ["## Runs", "",
              "| run | variant | repeat | status | fidelity | iterations complete | mean CCT (s) "
              "| misalignment mean / max | goodput per rank (Mbit/s) | of link rate | exact |",
              "|---|---|---|---|---|---|---|---|---|---|---|"]
    for a in analysed:
        s = a["summary"]
        gp = s["goodput_mean_bps"]
        lines.append(
            f"| {a['run']} | {a['variant']} | {_f(a['repeat'], '{}')} | {a['status']} | {a.get('fidelity') or '-'} "
            f"| {s['iterations_complete']} / {s['iterations']} | {_job_means(s)} "
            f"| {_f(s['misalignment_mean'], '{:.2f}')} / {_f(s['misalignment_max'], '{:.0f}')} "
            f"| {_f(None if gp is None else gp / 1e6, '{:.2f}')} "
            f"| {_f(s['goodput_mean_fraction'], '{:.0%}')} | {_f(s['exact'], '{}')} |")
    lines += ["", "Mean CCT: each job's, over its iterations in the run (`job: seconds` where the run has "
              "several). Goodput: a rank's `step_end` bytes x 8 over its own active time in the iteration "
              "(first `step_start` to last `step_end`), averaged over ranks and iterations, at the config's link "
              "rates; the link rate comes from config.toml's topology (`-` when it names none).", ""]
    captions = {
        "timeline": "Per-step timeline (s of the config's time): a row per rank (per job and rank when there "
                    "are several jobs), "
                    "a bar per ring step (blue reduce-scatter, orange all-gather), jitter windows shaded red; "
                    "the variants of one repeat share the time axis; panels titled oracle are the flow-level "
                    "model on that repeat's jitter schedule (when the runs have an oracle file).",
        "misalignment": "Misalignment (steps) over time (s of the config's time): newest minus oldest current "
                        "step across ranks, ok runs.",
        "cct": "CCT distribution per job and variant (s of the config's time; box: quartiles, diamond: mean, "
               "dots: iterations).",
        "rates": "DCQCN current rate Rc per ring flow (Mbit/s at the config's link rates, against s of the config's "
                 "time); ticks under each panel are the CNPs its sender received.",
        "marks": "ECN marks by cause per switch (marks per run), mean over ok runs (error bar: std).",
        "cctjobs": "Mean CCT per job (s of the config's time): bars measured (error bar: std over iterations), "
                   "diamonds the flow-level oracle on the same jitter schedules, dashed the job's bandwidth bound.",
    }
    lines += ["## Plots", ""]
    for p in plot_paths:
        rel = os.path.relpath(p, out_dir)
        kind = p.stem.split("_")[0]
        lines += [f"### {p.stem}", "", captions.get(kind, ""), "", f"![{p.stem}]({rel})", ""]
    if warnings:
        lines += ["## Warnings while reading", ""] + [f"- {w}" for w in warnings] + [""]
    return "\n".join(lines)


FIDELITY_COLUMNS = (("cpu_saturated_share", "CPU saturated (share)", "{:.2f}"),
                    ("port_rate_ratio", "lowest port rate ratio", "{:.3f}"),
                    ("twin_late_p99_ms", "twin lateness p99 (ms)", "{:.2f}"),
                    ("pacing_late_p99_ms", "pacing lateness p99 (ms)", "{:.2f}"),
                    ("timer_late_p90_ms", "DCQCN timer lateness p90 (ms)", "{:.2f}"))


def _fidelity_markdown(analysed: list[dict[str, Any]]) -> list[str]:
    """Per run: the fidelity verdict, its monitors' figures (a failed check
    in bold) and the reasons."""
    lines = ["## Fidelity (ms of the machine's own clock)", "",
             "| run | variant | verdict | " + " | ".join(title for _, title, _ in FIDELITY_COLUMNS) + " | reasons |",
             "|---|---|---|" + "---|" * len(FIDELITY_COLUMNS) + "---|"]
    for a in analysed:
        checks = a.get("fidelity_checks") or {}
        cells = []
        for name, _, fmt in FIDELITY_COLUMNS:
            c = checks.get(name) or {}
            cell = _f(c.get("value"), fmt)
            cells.append(f"**{cell}**" if c.get("ok") is False else cell)
        lines.append(f"| {a['run']} | {a['variant']} | {a.get('fidelity') or '-'} | " + " | ".join(cells)
                     + f" | {'; '.join(a.get('fidelity_reasons') or []) or '-'} |")
    lim = {name: _f(c.get("limit"), "{:g}") for a in analysed for name, c in (a.get("fidelity_checks") or {}).items()}
    lines += ["", "Whether the machine bent each run's timing (experiments/README.md, \"Fidelity\"): degraded when "
              f"the machine was at least 95 % busy for more than {lim.get('cpu_saturated_share', '-')} of the run, "
              f"a switch port achieved less than {lim.get('port_rate_ratio', '-')} of its rate while it had work, "
              f"the twins' queue lateness p99 or the agents' pacing lateness p99 exceeded "
              f"{lim.get('twin_late_p99_ms', '-')} / {lim.get('pacing_late_p99_ms', '-')} ms, or the agents' "
              "DCQCN timer lateness p90 exceeded the timer floor; `-`: not measured (no twin, no backlog, "
              "too few samples).", ""]
    return lines


def _repeats(row: dict[str, Any]) -> str:
    """Each repeat's change, and their standard deviation when there are several."""
    changes = row.get("change_per_repeat_pct") or []
    cells = ", ".join(_pct(c) for c in changes) or "-"
    sd = row.get("change_sd_pct")
    if sd is None:
        return cells
    noise = row.get("change_noise")       # absent from report.json files written before it
    return f"{cells} (sd {sd:.1f}); mean {describe_noise(noise)}" if noise else f"{cells} (sd {sd:.1f})"


def _oracle_markdown(summary: dict[str, Any]) -> list[str]:
    """Per job: the measured change beside the flow-level oracle's."""
    lines = ["### Against the oracle (s)", "",
             "| job | baseline CCT (s) | Symphony CCT (s) | change | change per repeat | oracle baseline (s) "
             "| oracle Symphony (s) | oracle change | bound (s) | captured | efficiency |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for job, row in summary["jobs"].items():
        o = row["oracle"] or {}
        lines.append(
            f"| {job} | {_f(row['baseline_cct_s'], '{:.4f}')} | {_f(row['symphony_cct_s'], '{:.4f}')} "
            f"| {_pct(row['cct_change_pct'])} | {_repeats(row)} "
            f"| {_f(o.get('baseline_cct_s'), '{:.4f}')} "
            f"| {_f(o.get('symphony_cct_s'), '{:.4f}')} | {_pct(o.get('cct_change_pct'))} "
            f"| {_f(o.get('bound_s'), '{:.4f}')} | {_f(row['captured'], '{:.2f}')} "
            f"| {_f(row['efficiency'], '{:.2f}')} |")
    lines += ["", "Oracle: the flow-level model (experiments/oracle) on the jitter schedules the ok runs used, "
              "mean over them; max-min fair sharing (baseline) against strict priority for the flows a switch "
              f"would not mark (Symphony, threshold {summary.get('oracle_threshold')}). Captured: measured change "
              f"over the oracle's (`-` when the oracle's is below {CAPTURE_MIN_PCT:g} % in size: nothing to gain). "
              "Efficiency: oracle baseline CCT over measured baseline CCT. Bound: 2(N-1)/N x S / B at the "
              "slowest access link's nominal rate. Change per repeat: Symphony's run against baseline's on the "
              "same repeat's schedule, each counted repeat in order, and their standard deviation: the run-to-run "
              "noise a change is to be read against; a mean beyond two standard errors of it (the standard "
              "deviation over the square root of the repeats) is told apart from no change, a reading aid "
              "that is looser than a 95 % interval with so few repeats.", ""]
    return lines


def _sim_markdown(summary: dict[str, Any]) -> list[str]:
    """Per job: the measured change beside the simulation's, at the config's
    scale and the deployment's, and where the two disagree."""
    lines = ["### Against the simulation (s)", "",
             "| job | measured change | sim baseline (s) | sim Symphony (s) | sim change | deployment baseline (s) "
             "| deployment Symphony (s) | deployment change |",
             "|---|---|---|---|---|---|---|---|"]
    for job, row in summary["jobs"].items():
        sim = row.get("sim") or {}
        c, d = sim.get(CONFIG_SCALE) or {}, sim.get(DEPLOYMENT_SCALE) or {}
        lines.append(f"| {job} | {_pct(row['cct_change_pct'])} | {_f(c.get('baseline_cct_s'), '{:.4f}')} "
                     f"| {_f(c.get('symphony_cct_s'), '{:.4f}')} | {_pct(c.get('cct_change_pct'))} "
                     f"| {_f(d.get('baseline_cct_s'), '{:.4f}')} | {_f(d.get('symphony_cct_s'), '{:.4f}')} "
                     f"| {_pct(d.get('cct_change_pct'))} |")
    coarse = summary.get("sim_coarse")
    lines += ["", "Simulation (experiments/sim): the same scenario, seeds and jitter schedules on a virtual clock, "
              "the agents' own protocol code and the twin's own switches; at the config's own rates"
              + (f" (sim: at this batch's --scale K = {summary['sim_k']:g}, which --confirm chose)"
                 if (summary.get("sim_k") or 1.0) != 1.0 else "") + ", and as the "
              "declared deployment would run it (its line rate, step, link delays, ECN, DCQCN and packets"
              + (f", {coarse} packets simulated as one" if coarse and coarse > 1 else "")
              + "), times in the config's own units.", ""]
    for line in summary.get("sim_verdict") or []:
        lines.append(f"- **{line}**")
    if summary.get("sim_verdict"):
        lines.append("")
    return lines


def _regime_verdict_markdown(summary: dict[str, Any]) -> list[str]:
    """Per job: in the deployment's regime or not (analysis.regime.verdict);
    an out-of-regime job's measured change is not the scenario's answer."""
    verdicts = (summary.get("regime") or {}).get("verdicts") or {}
    known = {job: v for job, v in verdicts.items() if v.get("in_regime") is not None}
    if not known:
        return []
    lines = ["### In the deployment's regime?", ""]
    for job, v in known.items():
        line = f"- job {job}: {describe(v)}"
        if not v["in_regime"] and summary.get("sim_confirmed"):
            line += f"; {CONFIRMED_NOTE}"
        elif not v["in_regime"]:
            dep = ((summary["jobs"].get(job) or {}).get("sim") or {}).get(DEPLOYMENT_SCALE) or {}
            line += (". **Its measured change is this batch's at this scale, not the scenario's answer**"
                     + (f"; at the deployment's scale the simulation gives {_pct(dep.get('cct_change_pct'))}"
                        if dep.get("cct_change_pct") is not None else ""))
        lines.append(line)
    lines += ["", f"The ratios that decide the outcome (RTT, DCQCN's periods and recovery, each per ring step at line "
              f"rate; ECN thresholds per bandwidth-delay product) against the declared deployment's: in regime when "
              f"each is within a factor {REGIME_FACTOR:g} of it (the regime table below has every ratio).", ""]
    return lines


def _per_job_markdown(summary: dict[str, Any]) -> list[str]:
    """The report's lead: each job's CCT per variant, against the same job's
    baseline (never a mean over several jobs' iterations)."""
    variants = summary["variants"]
    jobs = m.job_order(j for row in variants.values() for j in row["jobs"])
    lines = ["## CCT per job (s)", "",
             "| job | ranks | variant | runs | CCT samples | mean CCT (s) | std (s) | change vs baseline "
             "| misalignment mean (steps) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for job in jobs:
        for v, row in variants.items():
            j = row["jobs"].get(job)
            if j is None:
                continue
            mark = " (degraded)" if row.get("fidelity") == "degraded" else ""
            lines.append(f"| {job} | {j['ranks']} | {v}{mark} | {j['runs']} | {j['cct_n']} "
                         f"| {_f(j['cct_mean_s'], '{:.4f}')} | {_f(j['cct_std_s'], '{:.4f}')} "
                         f"| {_pct(j['cct_change_pct'])} | {_f(j['misalignment_mean'], '{:.2f}')} |")
    lines += ["",
              "CCT: first `step_start` to last `step_end` over the job's ranks, one sample per iteration of each "
              "counted run; std: the sample standard deviation of those iterations. Change: (the variant's mean CCT "
              "- baseline's) / baseline's, of the same job; negative means faster than baseline. Misalignment: "
              "newest minus oldest current step across the job's ranks, time-weighted mean over the run. Counted "
              "runs: ok ones, of the repeats where every variant's run is ok; failed or interrupted runs are listed "
              "below and left out of every figure. So are runs whose fidelity monitors found that the machine bent "
              "their timing (fidelity degraded: meta.json's fidelity, experiments/README.md), while the variant has "
              "a run whose fidelity is ok; a variant marked (degraded) has none, and its figures are the degraded "
              "runs'.", ""]
    return lines


def _variants_markdown(summary: dict[str, Any]) -> list[str]:
    """Per variant: its runs, and what is of the whole run rather than of a
    job (misalignment and skew over its jobs, marks and CNPs of its switches)."""
    several = summary.get("multi_job")
    lines = ["## Runs per variant", "",
             "| variant | runs ok / all | misalignment mean (steps) | misalignment max (steps) "
             "| step-end skew mean (ms) | Symphony marks / run | queue marks / run | CNPs / run |",
             "|---|---|---|---|---|---|---|---|"]
    for v, row in summary["variants"].items():
        mark = " (degraded)" if row.get("fidelity") == "degraded" else ""
        skew = row["step_end_skew_mean_s"]
        lines.append(
            f"| {v}{mark} | {row['runs_ok']} / {row['runs']} | {_f(row['misalignment_mean'], '{:.2f}')} "
            f"| {_f(row['misalignment_max'], '{:.0f}')} | {_f(None if skew is None else skew * 1e3, '{:.2f}')} "
            f"| {_f(row['sym_marks_per_run'], '{:.1f}')} | {_f(row['queue_marks_per_run'], '{:.1f}')} "
            f"| {_f(row['cnp_per_run'], '{:.1f}')} |")
    lines += ["", "Over the counted runs" + (", each over all its jobs (the table above has each job's)" if several
                                            else "") + ": misalignment, its time-weighted mean and maximum; "
              "step-end skew, last minus first rank to end a step, mean over steps; ECN marks and CNPs per run.", ""]
    return lines


def _job_means(s: dict[str, Any]) -> str:
    """A run's mean CCT per job: the value for one job, `job: value` each for several."""
    jobs = s["jobs"]
    if len(jobs) == 1:
        return _f(next(iter(jobs.values()))["cct_mean_s"], "{:.4f}")
    return ", ".join(f"{job}: {_f(j['cct_mean_s'], '{:.4f}')}" for job, j in jobs.items()) or "-"


def _per_iteration_markdown(analysed: list[dict[str, Any]]) -> list[str]:
    """Each run's CCT per job and iteration (runs with several jobs)."""
    lines = ["## CCT per job and iteration (s)", "",
             "| run | variant | status | job | iterations complete | CCT per iteration (s) | mean CCT (s) | exact |",
             "|---|---|---|---|---|---|---|---|"]
    for a in analysed:
        for job in m.job_order(a["summary"]["jobs"]):
            j = a["summary"]["jobs"][job]
            per_iter = ", ".join(f"{it}: {_f(c, '{:.4f}')}" for it, c in j["cct_by_iter_s"].items()) or "-"
            lines.append(f"| {a['run']} | {a['variant']} | {a['status']} | {job} "
                         f"| {j['iterations_complete']} / {j['iterations']} | {per_iter} "
                         f"| {_f(j['cct_mean_s'], '{:.4f}')} | {_f(j['exact'], '{}')} |")
    lines.append("")
    return lines


def _regime_cell(value: Any, unit: str, count: int | None = None) -> str:
    if value is None:
        return "-" if not count else f"- (n={count})"
    text = f"{value * 1e3:.3g}" if unit == "ms" else f"{value:.3g}"
    return text if count is None else f"{text} (n={count})"


def _regime_markdown(summary: dict[str, Any]) -> list[str]:
    """The regime table (analysis.regime): per job the measured seconds and
    ratios of each variant, the parameters' own value and the target."""
    reg = summary["regime"]
    variants = list(summary["variants"])
    labels = reg.get("labels") or {}
    lines = ["### Regime (ms of the runs' own clock)", "",
             "| job | quantity | " + " | ".join(variants) + " | parameters | target (deployment) |",
             "|---|---|" + "---|" * len(variants) + "---|---|"]
    for row in reg["rows"]:
        name = row["quantity"] + (" (ms)" if row["unit"] == "ms" else "")
        counts = row.get("counts") or {}
        cells = [_regime_cell(row["measured"].get(v), row["unit"], counts.get(v)) for v in variants]
        lines.append(f"| {row['job']} | {name} | " + " | ".join(cells)
                     + f" | {_regime_cell(row['design'], row['unit'])} | {_regime_cell(row['target'], row['unit'])} |")
    named = [f"`{n}`: {labels[n]}" for n in dict.fromkeys(r["quantity"] for r in reg["rows"]) if n in labels]
    lines += ["", "The regime DCQCN ran in (analysis/regime.py): measured from the counted runs' records "
              "(step time: median step_end - step_start; RTT: the senders' samples, which hold the receiver's "
              "ACK delay and the queues; recovery and climb: from the rate events, back to "
              f"{int(RECOVERED * 100)} % of line rate), beside the parameters' own value at the step time their "
              "timers derive from and the declared deployment's (the regime file beside the runs; `-` without "
              "one). Ratios over the measured step; periods are the parameters'; Kmin/Kmax over line rate x "
              "the measured RTT." + (" " + "; ".join(named) + "." if named else ""), ""]
    return lines
