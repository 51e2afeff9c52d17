"""PNG plots of one or many runs (matplotlib, Agg backend: no display needed).

Each function takes already-computed values (events, curves, metrics dicts),
draws one figure and writes it to ``path``.  Time axes are seconds from each
run's start (its first agent event), so runs line up, in the config's own
time (a scaled run's clock divided by its time factor, ``clock``), and every
title says its unit.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.lines import Line2D
from matplotlib.patches import Patch, Rectangle

PHASE_COLOURS = {"rs": ("#1f77b4", "#6baed6"), "ag": ("#e6550d", "#fdae6b")}  # (even k, odd k)
JITTER_COLOUR = "#d62728"
VARIANT_COLOURS = {"baseline": "#555555", "symphony": "#2ca02c"}
DPI = 110
CONFIG_TIME = "s of the config's time"      # the unit of every time axis


def variant_colour(variant: str, i: int = 0) -> str:
    if variant in VARIANT_COLOURS:
        return VARIANT_COLOURS[variant]
    return plt.get_cmap("tab10")(i % 10)


def _natural(label: str) -> list:
    """Sort key that puts r2 before r10."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", label)]


def jitter_label(w: dict[str, Any], clock: float = 1.0, rate: float = 1.0) -> str:
    """A jitter window's label, in the config's units: the run's delay over
    clock, its rate over rate (a scaled run's factors)."""
    kind = str(w.get("kind", "jitter"))
    params = w.get("params") or {}
    if kind == "compute":
        delay = params.get("delay_s")
        late = f"{delay / clock * 1e3:g} ms " if isinstance(delay, (int, float)) else ""
        return f"compute: iter {params.get('iter')} starts {late}late"
    if kind == "cross":
        return f"cross traffic {w.get('src', '?')}->{w.get('dst', '?')}"
    where = f" {w['link']}" if w.get("link") else ""
    if kind == "rate" and isinstance(params.get("rate_mbit"), (int, float)):
        return f"rate{where} -> {params['rate_mbit'] / rate:g} Mbit/s"
    if w.get("applied_as") and w.get("applied_as") != kind:
        return f"{kind}{where} (as {w['applied_as']})"
    return kind + where


def _save(fig, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path


def _step_segments(events: list[dict[str, Any]], t0: int,
                   clock: float = 1.0) -> dict[tuple[int, int], list[tuple[float, float, str, int]]]:
    """(job, rank) -> [(start_s, duration_s, phase, k)] from step_start/step_end
    pairs, in seconds of the events' clock over clock."""
    ns = 1e9 * clock
    open_steps: dict[tuple[int, int, int], dict[str, Any]] = {}
    out: dict[tuple[int, int], list[tuple[float, float, str, int]]] = {}
    for e in events:
        key = (e["job"], e["rank"], e["step"])
        if e["kind"] == "step_start":
            open_steps[key] = e
            out.setdefault((e["job"], e["rank"]), [])
        elif e["kind"] == "step_end" and key in open_steps:
            s = open_steps.pop(key)
            out[(e["job"], e["rank"])].append(((s["t"] - t0) / ns, (e["t"] - s["t"]) / ns, s["phase"], s["k"]))
    for key, s in open_steps.items():  # started, never ended: draw a stub, hatched
        out[(key[0], key[1])].append(((s["t"] - t0) / ns, 0.0, s["phase"], -1))
    return out


def timeline_rows(events: list[dict[str, Any]]) -> list[tuple[int, int]]:
    """The timeline's rows: one per (job, rank) that started a step, in order."""
    return sorted({(e["job"], e["rank"]) for e in events if e["kind"] == "step_start"})


def row_labels(rows: list[tuple[int, int]]) -> list[str]:
    """"rank r", or "job j rank r" when the rows hold more than one job."""
    multi_job = len({job for job, _ in rows}) > 1
    return [f"job {j} rank {r}" if multi_job else f"rank {r}" for j, r in rows]


def plot_timeline(panels: Sequence[dict[str, Any]], path: Path, clock: float = 1.0, rate: float = 1.0) -> Path:
    """Per-step timeline, one panel per run stacked on a shared time axis,
    in seconds of the config's time (the events' clock over clock; the
    jitter's rates over rate).

    panel: {"title", "events" (parsed agent events), "t0" (ns), "jitter"
    (windows with start_ns/end_ns and "rank" and/or "link")}."""
    rows_per_panel = [len(timeline_rows(p["events"])) or 1 for p in panels]
    height = sum(0.35 * r + 1.1 for r in rows_per_panel) + 0.8
    fig, axes = plt.subplots(len(panels), 1, sharex=True, squeeze=False,
                             figsize=(11, max(3.0, height)),
                             gridspec_kw={"height_ratios": [r + 2 for r in rows_per_panel]})
    jitter_drawn = False
    for ax, panel in zip(axes[:, 0], panels, strict=True):
        t0 = panel["t0"]
        segs = _step_segments(panel["events"], t0, clock)
        rows = timeline_rows(panel["events"])
        for y, key in enumerate(rows):
            # one broken_barh per colour and row: fast for runs with many steps
            by_colour: dict[str, list[tuple[float, float]]] = {}
            for start, dur, phase, k in segs.get(key, []):
                if k < 0:  # started, never ended
                    ax.plot([start], [y], marker=">", color="black", ms=6)
                    continue
                colour = PHASE_COLOURS.get(phase, ("#999999", "#bbbbbb"))[k % 2]
                by_colour.setdefault(colour, []).append((start, dur))
            for colour, spans in by_colour.items():
                ax.broken_barh(spans, (y - 0.35, 0.7), facecolors=colour, edgecolor="white", linewidth=0.3)
        for w in panel.get("jitter", []):
            if w.get("start_ns") is None or w.get("end_ns") is None:
                continue
            a, b = (w["start_ns"] - t0) / 1e9 / clock, (w["end_ns"] - t0) / 1e9 / clock
            rank, job = w.get("rank"), w.get("job")
            row = [i for i, key in enumerate(rows)
                   if isinstance(rank, int) and key[1] == rank and (job is None or key[0] == job)]
            # shade behind the bars and outline on top, so the window shows over them too
            if row:  # a rank's own link or a straggling rank: its row only
                lo, hi = row[0] - 0.5, row[0] + 0.5
                ax.fill_betweenx([lo, hi], a, b, color=JITTER_COLOUR, alpha=0.18, zorder=0)
                ax.add_patch(Rectangle((a, lo), b - a, hi - lo, fill=False, edgecolor=JITTER_COLOUR,
                                       lw=1.3, zorder=4))
            else:
                ax.axvspan(a, b, color=JITTER_COLOUR, alpha=0.12, zorder=0)
                ax.axvspan(a, b, fill=False, edgecolor=JITTER_COLOUR, lw=1.3, zorder=4)
            label = jitter_label(w, clock, rate)
            y_text = row[0] - 0.5 if row else -0.5
            ax.text(a, y_text, " " + label, fontsize=7, color=JITTER_COLOUR, va="bottom", ha="left")
            jitter_drawn = True
        ax.set_yticks(range(len(rows)))
        ax.set_yticklabels(row_labels(rows))
        ax.set_ylim(-0.9, len(rows) - 0.4)
        ax.invert_yaxis()
        ax.set_title(panel["title"], fontsize=10, loc="left")
        ax.grid(axis="x", alpha=0.3)
    axes[-1, 0].set_xlabel(f"time since run start ({CONFIG_TIME})")
    handles = [Patch(color=PHASE_COLOURS["rs"][0], label="reduce-scatter step"),
               Patch(color=PHASE_COLOURS["ag"][0], label="all-gather step")]
    if jitter_drawn:
        handles.append(Patch(color=JITTER_COLOUR, alpha=0.3, label="jitter window"))
    if any(k < 0 for p in panels for segs in _step_segments(p["events"], p["t0"]).values() for *_, k in segs):
        handles.append(Line2D([], [], marker=">", ls="", color="black", label="step started, never ended"))
    fig.legend(handles=handles, loc="upper right", ncol=len(handles), fontsize=8, frameon=False)
    fig.suptitle(f"Per-step timeline, {CONFIG_TIME} (bar = one ring step of one rank; shades alternate between "
                 "steps)", fontsize=11, x=0.01, ha="left")
    fig.tight_layout(rect=(0, 0, 1, 0.95))
    return _save(fig, path)


def plot_misalignment(series: dict[str, list[dict[str, Any]]], path: Path) -> Path:
    """series: variant -> [{"label", "curve": [[t_s, value], ...]}]; one panel per variant."""
    variants = list(series)
    fig, axes = plt.subplots(len(variants), 1, sharex=True, sharey=True, squeeze=False,
                             figsize=(11, 1.0 + 2.2 * len(variants)))
    peak = 1
    for ax, variant in zip(axes[:, 0], variants, strict=True):
        cmap = plt.get_cmap("tab10")
        for j, s in enumerate(series[variant]):
            curve = s["curve"]
            if not curve:
                continue
            xs = [p[0] for p in curve]
            ys = [p[1] for p in curve]
            peak = max(peak, max(ys))
            ax.step(xs, ys, where="post", lw=1.2, alpha=0.85, color=cmap(j % 10), label=s["label"])
        ax.set_title(f"{variant}", fontsize=10, loc="left")
        ax.set_ylabel("misalignment\n(steps)")
        ax.grid(alpha=0.3)
        if series[variant]:
            ax.legend(fontsize=7, loc="upper right", ncol=min(4, len(series[variant])), frameon=False)
    axes[0, 0].set_ylim(-0.2, peak + 0.8)
    axes[0, 0].yaxis.get_major_locator().set_params(integer=True)
    axes[-1, 0].set_xlabel(f"time since run start ({CONFIG_TIME})")
    fig.suptitle(f"Step misalignment (steps: newest minus oldest current step across ranks) against {CONFIG_TIME}",
                 fontsize=11, x=0.01, ha="left")
    fig.tight_layout(rect=(0, 0, 1, 0.96))
    return _save(fig, path)


def plot_cct(samples: dict[str, dict[str, list[float]]], path: Path) -> Path:
    """Box plot of CCT per job and variant (samples: job -> variant ->
    seconds of the config's time), every sample drawn as a dot over it."""
    boxes = [(job, v, xs) for job, per in samples.items() for v, xs in per.items() if xs]
    several = len(samples) > 1
    variants = list(dict.fromkeys(v for _, v, _ in boxes))
    fig, ax = plt.subplots(figsize=(1.8 + 1.9 * max(1, len(boxes)), 4.2))
    if boxes:
        box = ax.boxplot([xs for _, _, xs in boxes], patch_artist=True, widths=0.5, showmeans=True,
                         meanprops={"marker": "D", "markerfacecolor": "white", "markeredgecolor": "black"})
        ax.set_xticks(range(1, len(boxes) + 1), [(f"job {job}\n" if several else "") + f"{v}\n(n={len(xs)})"
                                                 for job, v, xs in boxes])
        for i, (patch, (_, v, xs)) in enumerate(zip(box["boxes"], boxes, strict=True)):
            colour = variant_colour(v, variants.index(v))
            patch.set_facecolor(colour)
            patch.set_alpha(0.35)
            dots = [i + 1 + 0.18 * ((j % 7) - 3) / 3 for j in range(len(xs))]
            ax.scatter(dots, xs, s=14, color=colour, zorder=3)
        ax.legend(handles=[Line2D([], [], marker="D", ls="", markerfacecolor="white", markeredgecolor="black",
                                  label="mean"),
                           Line2D([], [], marker="o", ls="", color="#444444", label="one iteration")],
                  fontsize=8, loc="best")
    else:
        ax.text(0.5, 0.5, "no completed iterations", ha="center", va="center", transform=ax.transAxes)
    ax.set_ylabel(f"collective completion time ({CONFIG_TIME})")
    ax.set_title(f"CCT per {'job and ' if several else ''}variant, {CONFIG_TIME} (every iteration of every ok run)",
                 fontsize=10)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    return _save(fig, path)


def plot_rates(panels: Sequence[dict[str, Any]], path: Path) -> Path:
    """DCQCN current rate Rc per flow, with a tick for each CNP the sender got.

    panel: {"title", "traces" (metrics' rates: label -> {t_s, rc_bps, cnp_rx_t_s}),
    "link_rate_bps" or None, "t_end_s"}."""
    fig, axes = plt.subplots(len(panels), 1, sharex=True, sharey=True, squeeze=False,
                             figsize=(11, 1.0 + 2.6 * len(panels)))
    for ax, panel in zip(axes[:, 0], panels, strict=True):
        traces = panel["traces"]
        cmap = plt.get_cmap("tab10" if len(traces) <= 10 else "tab20")
        lane = min(0.045, 0.25 / max(1, len(traces)))  # CNP tick lanes stay in the bottom quarter
        for j, (label, tr) in enumerate(sorted(traces.items(), key=lambda kv: _natural(kv[0]))):
            colour = cmap(j % cmap.N)
            xs = list(tr["t_s"])
            ys = [v / 1e6 for v in tr["rc_bps"]]
            if xs and panel.get("t_end_s") and panel["t_end_s"] > xs[-1]:
                xs.append(panel["t_end_s"])
                ys.append(ys[-1])
            ax.step(xs, ys, where="post", lw=1.2, color=colour, label=f"{label} ({len(tr['cnp_rx_t_s'])} CNPs)")
            # CNP ticks in a band at the bottom of the axes, one lane per flow
            ax.plot(tr["cnp_rx_t_s"], [0.03 + lane * j] * len(tr["cnp_rx_t_s"]), ls="", marker="|",
                    ms=max(3.0, min(7.0, lane * 150)), mew=1.5, color=colour, transform=ax.get_xaxis_transform())
        if panel.get("link_rate_bps"):
            ax.axhline(panel["link_rate_bps"] / 1e6, ls="--", color="black", lw=0.8, label="link rate")
        if not traces:
            ax.text(0.5, 0.5, "no rate events (DCQCN off or TCP)", ha="center", va="center",
                    transform=ax.transAxes)
        ax.set_title(panel["title"] + "   (ticks at the bottom: CNPs received)", fontsize=10, loc="left")
        ax.set_ylabel("Rc (Mbit/s)")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        if traces:
            if len(traces) > 4:  # many flows: legend beside the axes, not over the traces
                ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), ncol=1 + len(traces) // 13,
                          frameon=False)
            else:
                ax.legend(fontsize=7, loc="lower right", ncol=2, frameon=True, framealpha=0.8)
    axes[-1, 0].set_xlabel(f"time since run start ({CONFIG_TIME})")
    fig.suptitle(f"DCQCN sending rate per ring flow (Mbit/s at the config's link rates) against {CONFIG_TIME}",
                 fontsize=11, x=0.01, ha="left")
    fig.tight_layout(rect=(0, 0, 1, 0.96), h_pad=2.0)
    return _save(fig, path)


def plot_marks(marks: dict[str, dict[str, dict[str, tuple[float, float]]]], path: Path) -> Path:
    """marks: variant -> switch -> cause -> (mean per run, std); one panel per cause."""
    causes = ("sym_marks", "queue_marks")
    titles = {"sym_marks": "Symphony marks (outpacing flows)", "queue_marks": "queue marks (Kmin/Kmax)"}
    variants = list(marks)
    switches = sorted({sw for v in variants for sw in marks[v]})
    fig, axes = plt.subplots(1, 2, sharey=True, figsize=(max(8, 2.5 + 1.4 * len(switches) * 2), 4))
    width = 0.8 / max(1, len(variants))
    for ax, cause in zip(axes, causes, strict=True):
        for i, v in enumerate(variants):
            xs = [s + (i - (len(variants) - 1) / 2) * width for s in range(len(switches))]
            means = [marks[v].get(sw, {}).get(cause, (0.0, 0.0))[0] for sw in switches]
            stds = [marks[v].get(sw, {}).get(cause, (0.0, 0.0))[1] for sw in switches]
            ax.bar(xs, means, width=width, yerr=stds, capsize=3, color=variant_colour(v, i), alpha=0.8, label=v)
        ax.set_xticks(range(len(switches)), switches)
        ax.set_xlabel("switch")
        ax.set_title(titles[cause], fontsize=10)
        ax.grid(axis="y", alpha=0.3)
    axes[0].set_ylabel("ECN marks per run (mean ± std)")
    axes[1].legend(fontsize=8)
    if not switches:
        for ax in axes:
            ax.text(0.5, 0.5, "no switch dumps", ha="center", va="center", transform=ax.transAxes)
    fig.suptitle("ECN marks by cause per switch (marks per run)", fontsize=11, x=0.01, ha="left")
    fig.tight_layout(rect=(0, 0, 1, 0.93))
    return _save(fig, path)


def plot_cct_jobs(jobs: dict[str, dict[str, Any]], path: Path) -> Path:
    """Mean CCT per job: a bar per measured variant (error bar: std over
    iterations), the oracle's CCT per variant as a marker on its bar's
    position, the job's bandwidth bound as a dashed line across its group.

    jobs: job -> {"measured": {variant: (mean_s, std_s)}, "oracle": {variant:
    cct_s}, "bound_s": float | None}."""
    order = list(jobs)
    variants = list(dict.fromkeys(v for row in jobs.values() for v in [*row["measured"], *row["oracle"]]))
    fig, ax = plt.subplots(figsize=(max(7.5, 3.5 + 1.8 * len(order) * max(1, len(variants)) / 2), 4.4))
    width = 0.8 / max(1, len(variants))
    for i, v in enumerate(variants):
        xs = [x + (i - (len(variants) - 1) / 2) * width for x in range(len(order))]
        measured = [jobs[j]["measured"].get(v) for j in order]
        bars = [(x, mv) for x, mv in zip(xs, measured, strict=True) if mv is not None]
        if bars:
            ax.bar([x for x, _ in bars], [mv[0] for _, mv in bars], width=width * 0.9,
                   yerr=[mv[1] for _, mv in bars], capsize=3, color=variant_colour(v, i), alpha=0.55,
                   error_kw={"ecolor": "#777777", "lw": 1}, label=f"{v} (measured)")
        marks = [(x, jobs[j]["oracle"][v]) for x, j in zip(xs, order, strict=True) if v in jobs[j]["oracle"]]
        if marks:
            ax.scatter([x for x, _ in marks], [y for _, y in marks], marker="D", s=46, zorder=4,
                       color="white", edgecolor=variant_colour(v, i), linewidth=2, label=f"{v} (oracle)")
    bound_drawn = False
    for x, j in enumerate(order):
        bound = jobs[j].get("bound_s")
        if bound:
            ax.hlines(bound, x - 0.45, x + 0.45, colors="black", linestyles="--", lw=1,
                      label=None if bound_drawn else "bandwidth bound")
            bound_drawn = True
    ax.set_xticks(range(len(order)), [f"job {j}" for j in order])
    ax.set_ylabel(f"mean CCT ({CONFIG_TIME})")
    ax.set_ylim(bottom=0)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    ax.set_title(f"Mean CCT per job, {CONFIG_TIME}: measured (bars), oracle (diamonds)", fontsize=10, loc="left")
    fig.tight_layout()
    return _save(fig, path)
