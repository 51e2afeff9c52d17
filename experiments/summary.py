"""After the runs of one experiment (or sweep point): the oracle on the
schedules the runs used (``<stamp>-oracle.json``), analysis' per-run
metrics, summary.json (analysis' per-variant figures plus the spread of the
per-run means, and per job the measured change beside the oracle's), the
tables printed at the end, the report, the exit code.  CCT, misalignment
and the comparison with the oracle are analysis' definitions, computed there
only."""

from __future__ import annotations

import json
import math
import shlex
import sys
import time
import warnings
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from statistics import mean, stdev

from analysis.noise import describe as describe_noise
from analysis.oracle import job_comparison
from analysis.records import Run, load_run
from analysis.regime import FILE_SUFFIX as REGIME_SUFFIX
from analysis.regime import SCHEMA as REGIME_SCHEMA
from analysis.regime import describe as rg_describe
from analysis.regime import job_targets as rg_job_targets
from analysis.regime import verdict as rg_verdict
from analysis.regime import verdict_ratios as rg_verdict_ratios
from analysis.report import analyse_run, config_summary, summarise, write_report
from analysis.simulation import CONFIG_SCALE, DEPLOYMENT_SCALE
from analysis.simulation import CONFIRMED_NOTE as SIM_CONFIRMED_NOTE
from analysis.simulation import FILE_SUFFIX as SIM_SUFFIX
from analysis.simulation import SCALES as SIM_SCALES
from analysis.simulation import SCHEMA as SIM_SCHEMA
from contract import exits
from experiments import rundir as R
from experiments.config import ExperimentSpec, derive
from experiments.config.scale import Scaling, rate_words
from experiments.config.spec import job_specs, step_fraction
from experiments.fidelity import summary_warnings
from experiments.oracle import ModelError
from experiments.oracle.export import document
from experiments.oracle.scenario import predict_repeats
from experiments.signals import Signals
from experiments.sim.predict import Ran, Task, predict, progress_lines
from experiments.sim.run import refusal
from experiments.supervise import RunResult
from experiments.tables import align, fmt
from hosts import dcqcn
from hosts.job import JobSpec
from topologies.network import shield
from topologies.network.links import VIA_TWIN

# kept for the callers that name them here; contract.exits is where they live
EXIT_OK, EXIT_WRONG, EXIT_USAGE, EXIT_FAILED, EXIT_DISK_FULL, EXIT_INTERRUPTED = (
    exits.OK, exits.WRONG, exits.USAGE, exits.FAILED, exits.DISK_FULL, exits.INTERRUPTED)


def load_analysed(results: list[RunResult]) -> list[tuple[Run, dict]]:
    """Each run's records and analysis' metrics of them (the records'
    warnings silenced: the report says them)."""
    out = []
    for r in results:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            run = load_run(r.run_dir)
            out.append((run, analyse_run(run)))
    return out


def _stats(xs: list[float]) -> tuple[float | None, float | None]:
    xs = [x for x in xs if x is not None and math.isfinite(x)]
    if not xs:
        return None, None
    return mean(xs), (stdev(xs) if len(xs) > 1 else 0.0)


def applied_schedules(results: list[RunResult]) -> dict[int, list[dict]]:
    """repeat -> the jitter schedule its runs applied: the run directory's
    jitter.jsonl, written before anything was applied (the first run of a
    repeat that has one; both variants of a repeat share it)."""
    out: dict[int, list[dict]] = {}
    for r in results:
        path = r.run_dir / "jitter.jsonl"
        if r.repeat not in out and path.is_file():
            out[r.repeat] = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    return out


def oracle_document(spec: ExperimentSpec, schedules: Mapping[int, list[dict]], stamp: str) -> dict:
    """The oracle file's content: the model on each repeat's schedule as the
    runs applied it (experiments/oracle/export.py states the schema).
    ModelError when the model cannot run the config."""
    return document(spec, predict_repeats(spec, schedules), stamp)


def job_regime(js: JobSpec, kmin_pkts: float, kmax_pkts: float, base_rtt_s: float,
               fraction: float = 1.0) -> dict | None:
    """One job's DCQCN parameters as the agents build them
    (hosts.rank.rate_control), their ratios at the step time the timers
    derive from, the ECN thresholds with the frame they count and the base
    RTT of its slowest ring edge as the network has it (derive.job_rtt_s),
    and the ratios it is held to: its own in the deployment, at its step's
    fraction of the scenario's (spec.step_fraction); None without DCQCN
    (preset off, no line rate).  A TCP job's DCQCN paces its connections
    (hosts/tcp), with the same parameters and timers; its frames are
    counted as the UDP transport's (a full TCP segment's is 4 % larger)."""
    p = js.dcqcn_params
    if p is None:
        return None
    step = js.regime_step_s
    design = dcqcn.regime_ratios(p, step)
    targets = dcqcn.regime_targets()
    drift = [n for n in design if n in targets and not math.isclose(design[n], targets[n], rel_tol=0.1)]
    # the scenario's own step (its chunk at line rate), which the deployment's targets count in
    line_step = js.line_step_s
    return {"preset": js.dcqcn_preset, "line_rate_bps": p.line_rate_bps, "step_s": step,
            "line_step_s": line_step, "at_line_step": dcqcn.regime_ratios(p, line_step),
            "periods": {"alpha": p.alpha_period_s, "decrease": p.decrease_period_s,
                        "increase": p.increase_period_s, "cnp": p.cnp_interval_s},
            "recovery_s": design["recovery_per_step"] * step, "climb_s": design["climb_per_step"] * step,
            "design": design, "drift": drift, "kmin_pkts": kmin_pkts, "kmax_pkts": kmax_pkts,
            "frame_bytes": js.udp.frame_bytes, "base_rtt_s": base_rtt_s,
            "targets": dcqcn.regime_targets(step_fraction=fraction),
            "deployment_step_s": dcqcn.DEPLOYMENT.step_s * fraction}


def regime_document(spec: ExperimentSpec, stamp: str) -> dict:
    """The regime file's content (analysis/regime.py states the schema): the
    declared deployment's ratios (the targets), and per job its parameters
    and their own ratios.  The experiments layer writes it because analysis
    cannot import hosts."""
    d = dcqcn.DEPLOYMENT
    return {"schema": REGIME_SCHEMA, "experiment": spec.name, "stamp": stamp,
            "deployment_step_s": d.step_s, "deployment_rtt_s": d.base_rtt_s,
            "targets": dcqcn.regime_targets(), "labels": dict(dcqcn.RATIO_LABELS),
            "jobs": {str(js.job): job_regime(js, spec.ecn.kmin, spec.ecn.kmax,
                                             derive.job_rtt_s(spec.topo, cfg.placed, js.udp.frame_bytes),
                                             step_fraction(spec, js))
                     for cfg, js in zip(spec.jobs, job_specs(spec, {}), strict=True)}}


def _regime(spec: ExperimentSpec, exp_dir: Path, stamp: str, say: Callable[[str], None]
            ) -> tuple[dict | None, Path | None]:
    """The regime file beside the runs; (document, path), None for what could
    not be made or written."""
    try:
        doc = regime_document(spec, stamp)
    except Exception as exc:        # the regime table must not cost the batch its summary
        say(f"regime failed: {type(exc).__name__}: {exc}")
        return None, None
    path = exp_dir / f"{stamp}{REGIME_SUFFIX}"
    try:
        R.write_json(path, doc)
    except OSError as exc:
        say(f"regime: {path} not written ({exc.strerror or exc})")
        return doc, None
    return doc, path


def write_oracle(path: Path, doc: dict) -> None:
    """Compact (step records make it long), atomic."""
    R.write_text(path, json.dumps(doc, separators=(",", ":")) + "\n")


def summary(spec: ExperimentSpec, results: list[RunResult], analysed: list[dict | None], interrupted: bool,
            oracle: dict | None = None, regime: dict | None = None, sim: dict | None = None,
            scaling: Scaling | None = None) -> dict:
    """summary.json: analysis' per-variant and per-job figures (per-iteration
    CCT, change against baseline; a variant's pooled CCT only where the runs
    have one job) plus the spread of the per-run means, and per job
    (``jobs.<id>``) the measured change beside the oracle's
    (analysis.oracle: ``cct_change_pct``, ``oracle``, ``captured``,
    ``efficiency``); every time in the config's own units (analysis.report:
    a scaled run's clock divided by its time factor), the scaling itself
    under ``scaling``.  Without an analysis of every run (it failed, or a
    second Ctrl-C), the run list and the oracle only."""
    complete = bool(analysed) and all(a is not None for a in analysed)
    clock = scaling.time if scaling else 1.0
    s = (summarise(analysed, oracle, regime, sim) if complete
         else {"variants": {}, "jobs": job_comparison({}, oracle, [], clock)})
    for v, row in s["variants"].items():
        # the runs analysis counted (ok, and fidelity-ok unless none is: analysis.report.counted)
        row["run_cct_mean_s"], row["run_cct_std_s"] = _stats(row["cct_run_means_s"])
        row["wrong_results"] = sorted(set(row.get("wrong_results", []))
                                      | {r.run_dir.name for r in results if r.variant == v and r.wrong})
    runs = []
    for i, r in enumerate(results):
        row = {"run": r.run_dir.name, "variant": r.variant, "repeat": r.repeat, "status": r.status,
               "reason": r.reason, "wrong_result": r.wrong,
               **({"fidelity": r.fidelity} if r.fidelity else {})}
        if r.jitter_not_applied:
            row["jitter_not_applied"] = len(r.jitter_not_applied)
        if complete:
            row["status"] = analysed[i]["status"]
            row["reason"] = analysed[i]["reason"] or r.reason
            a = config_summary(analysed[i])
            row.update(job_cct_mean_s={job: j["cct_mean_s"] for job, j in a["jobs"].items()},
                       misalignment_mean=a["misalignment_mean"], regime=run_regime(analysed[i], regime))
        runs.append(row)
    return {
        "experiment": spec.name,
        "sweep_point": spec.sweep_point,
        "status": "interrupted" if interrupted else "complete",
        "interrupted": interrupted,
        "runs": runs,
        "cct_change_pct": s["variants"].get("symphony", {}).get("cct_change_pct"),
        **s,
        **({"scaling": scaling.as_dict()} if scaling else {}),
    }


def run_regime(analysed_run: dict, regime: dict | None) -> dict[str, str]:
    """One run's regime verdict per job (analysis.regime.verdict), in words."""
    out = {}
    for job, x in (analysed_run.get("regime") or {}).items():
        measured = {"rtt_min_s": x.get("rtt_min_s"), "step_s": x.get("step_median_s")}
        jdoc = ((regime or {}).get("jobs") or {}).get(job)
        out[job] = rg_describe(rg_verdict(rg_verdict_ratios(measured, jdoc), rg_job_targets(regime, job)))
    return out


def regime_lines(summ: dict) -> list[str]:
    """Per job, whether the batch ran in the deployment's regime; where it
    did not, its measured change is this batch's at this scale, not the
    scenario's answer, and the simulation's at the deployment's scale is."""
    lines = []
    for job, v in ((summ.get("regime") or {}).get("verdicts") or {}).items():
        if v.get("in_regime") is None:
            continue
        line = f"job {job}: {rg_describe(v)}"
        if not v["in_regime"] and summ.get("sim_confirmed"):
            line += f"; {SIM_CONFIRMED_NOTE}"
        elif not v["in_regime"]:
            dep = (((summ.get("jobs") or {}).get(job) or {}).get("sim") or {}).get(DEPLOYMENT_SCALE) or {}
            line += ("; its measured change is this batch's at this scale, not the scenario's answer"
                     + (f"; at the deployment's scale the simulation gives {dep['cct_change_pct']:+.1f} %"
                        if dep.get("cct_change_pct") is not None else ""))
        lines.append(line)
    return lines


def noise_lines(summ: dict) -> list[str]:
    """Per job with two or more counted repeats, whether its change is told
    apart from its own run-to-run noise (analysis.noise): a small change,
    the kind the oracle predicts for a job with nothing to gain, is read
    against it."""
    return [f"job {job}: Symphony's change per repeat, mean {describe_noise(row['change_noise'])}"
            for job, row in (summ.get("jobs") or {}).items() if row.get("change_noise")]


def table(summ: dict) -> str:
    """Per variant: its runs and, where the runs have one job, that job's
    CCT, so labelled.  With several jobs a CCT pooled over the iterations of
    different jobs says nothing of any (summarise gives none; the jobs table
    has each job's)."""
    job = _single_job(summ)
    cols = (f"job {job} CCT mean s", "CCT std s", "run-mean std s", "change %") if job else ()
    rows = [("variant", "runs counted", *cols, "misalign", "sym marks/run")]
    for v, row in summ["variants"].items():
        cct = (fmt(row["cct_mean_s"]), fmt(row["cct_std_s"]), fmt(row.get("run_cct_std_s")),
               fmt(row.get("cct_change_pct"), "{:+.1f}")) if job else ()
        rows.append((v, f"{row['runs_ok']}/{row['runs']}", *cct,
                     fmt(row.get("misalignment_mean"), "{:.2f}"), fmt(row.get("sym_marks_per_run"), "{:.0f}")))
    return align(rows)


def _single_job(summ: dict) -> str | None:
    """The one job's id where the runs have one job, else None."""
    jobs = list(summ.get("jobs") or {})
    return jobs[0] if len(jobs) == 1 and not summ.get("multi_job") else None


def _change_words(pct: float) -> str:
    return "faster" if pct < 0 else "slower" if pct > 0 else "the same"


def jobs_table(jobs: dict, indent: str = "") -> str:
    """Per job: measured CCTs and change, its spread over the repeats (the
    standard deviation of each repeat's change), the oracle's, captured,
    efficiency, and the simulation's change at the config's scale and the
    deployment's."""
    rows = [("job", "baseline s", "Symphony s", "change %", "repeat sd", "oracle base s", "oracle Sym s",
             "oracle change %", "bound s", "captured", "efficiency", "sim change %", "deployment %")]
    for job, row in jobs.items():
        o = row.get("oracle") or {}
        sim = row.get("sim") or {}
        rows.append((job, fmt(row["baseline_cct_s"]), fmt(row["symphony_cct_s"]),
                     fmt(row["cct_change_pct"], "{:+.1f}"), fmt(row.get("change_sd_pct"), "{:.1f}"),
                     fmt(o.get("baseline_cct_s")),
                     fmt(o.get("symphony_cct_s")), fmt(o.get("cct_change_pct"), "{:+.1f}"), fmt(o.get("bound_s")),
                     fmt(row["captured"], "{:.2f}"), fmt(row["efficiency"], "{:.2f}"),
                     fmt((sim.get(CONFIG_SCALE) or {}).get("cct_change_pct"), "{:+.1f}"),
                     fmt((sim.get(DEPLOYMENT_SCALE) or {}).get("cct_change_pct"), "{:+.1f}")))
    return align(rows, indent)


REGIME_PRINTED = ("step time", "RTT (median of the senders' minima)", "recovery from a halving",
                  "climb from half rate", "rtt_per_step", "recovery_per_step", "climb_per_step",
                  "step_per_decrease_period")


def regime_table(summ: dict, indent: str = "") -> str:
    """The regime rows worth a line on the terminal (analysis.regime.table)."""
    variants = list(summ["variants"])
    rows = [("job", "quantity", *variants, "parameters", "target")]
    for r in summ["regime"]["rows"]:
        if r["quantity"] not in REGIME_PRINTED:
            continue
        def cell(x, unit=r["unit"]):
            return fmt(None if x is None else x * 1e3, "{:.1f}") if unit == "ms" else fmt(x, "{:.3g}")
        name = "RTT min" if r["quantity"].startswith("RTT") else r["quantity"]
        rows.append((r["job"], name + (" ms" if r["unit"] == "ms" else ""),
                     *(cell(r["measured"].get(v)) for v in variants), cell(r["design"]), cell(r["target"])))
    return align(rows, indent)


def exit_code(results: list[RunResult], interrupted: bool) -> int:
    """The worst that happened, one code each (contract.exits): a wrong
    result, an interrupt, a full disk, a failed run."""
    if any(r.wrong for r in results):
        return exits.WRONG
    if interrupted:
        return exits.INTERRUPTED
    if any(r.disk_full for r in results):
        return exits.DISK_FULL
    if any(r.status != "ok" for r in results):
        return exits.FAILED
    return exits.OK


def _targets(results: list[RunResult]) -> str:
    seen = set()
    for r in results:
        try:
            seen.add(json.loads((r.run_dir / "meta.json").read_text()).get("target"))
        except (OSError, ValueError):
            pass
    return ",".join(sorted(str(t) for t in seen if t)) or "-"


def _print_summary(spec: ExperimentSpec, results: list[RunResult], summ: dict, written: Path | None) -> None:
    point = f" {spec.sweep_point}" if spec.sweep_point else ""
    print(f"\n{spec.name}{point}: {len(results)} run(s), target {_targets(results)}")
    sc = summ.get("scaling")
    if sc:
        what = "the declared deployment's" if sc["deployment"] else "the config's network"
        print(f"scaled on {what}: durations x{sc['time']:.4g}, link rates x{sc['rate']:.4g}, bytes x{sc['bytes']:.4g}"
              + (f", {sc['coarse']} packets as one" if sc["coarse"] > 1 else "")
              + f"; times below in the config's own units (the runs' seconds divided by {sc['time']:.4g}), the "
                "regime's excepted")
    for line in summary_warnings(results):         # runs whose timing the machine bent
        print(line)
    if summ.get("jobs"):
        sim_k, sim_rate = summ.get("sim_k") or 1.0, summ.get("sim_rate") or 1.0
        at = "the config's rates" if sim_k == 1.0 else f"this batch's K = {sim_k:g}"
        if sim_rate != 1.0:
            whose = "the config" if sim_k == 1.0 else "this batch"
            at = f"{whose}'s K = {sim_k:g} on links at --rate {rate_words(sim_rate)}"
        print("per job (CCT in s of the config's time), measured (each variant over the same repeats), the "
              "flow-level oracle and the simulation "
              f"(at {at} and the deployment's scale) on the same schedules (captured = measured change"
              " / oracle change; efficiency = oracle / measured baseline CCT):")
        print(jobs_table(summ["jobs"], "  "))
    for line in summ.get("sim_verdict") or []:
        print(f"  {line}")
    for line in regime_lines(summ) + noise_lines(summ):
        print(f"  {line}")
    if summ["variants"]:
        print(table(summ))
    for v, row in summ["variants"].items():
        left_out = row["runs"] - row["runs_ok"]
        if left_out:
            print(f"  {v}: {left_out} run(s) left out (not ok, or their repeat's other variant was not)")
    job = _single_job(summ)
    if job:
        for v, row in summ["variants"].items():
            if row.get("cct_mean_s") is not None:
                print(f"  job {job}, {v}: mean CCT {row['cct_mean_s']:.3f} s +- {row.get('cct_std_s') or 0:.3f} s"
                      f" over {row['cct_n']} iteration(s) of {row['runs_ok']} run(s)")
        if summ.get("cct_change_pct") is not None:
            print(f"  job {job}: Symphony against baseline {summ['cct_change_pct']:+.1f} % mean CCT "
                  f"({_change_words(summ['cct_change_pct'])})")
    if (summ.get("regime") or {}).get("rows"):
        print("regime (ms of the runs' own clock; the report's table has every ratio): measured per variant, the"
              " parameters' own, the deployment's target:")
        print(regime_table(summ, "  "))
    late = sum(row.get("jitter_not_applied", 0) for row in summ["runs"])
    if late:
        print(f"note: {late} jitter entr{'y' if late == 1 else 'ies'} started after the run had ended and "
              "were never applied (meta.json jitter_not_applied)")
    if written is not None:
        print(f"summary: {written}")


def _oracle(spec: ExperimentSpec, results: list[RunResult], exp_dir: Path, stamp: str,
            say: Callable[[str], None]) -> tuple[dict | None, Path | None]:
    """The oracle on the schedules the runs applied, written beside them;
    (document, path), None for what could not be made or written."""
    schedules = applied_schedules(results)
    if not schedules:
        return None, None
    try:
        oracle = oracle_document(spec, schedules, stamp)
    except ModelError as exc:
        say(f"oracle: {exc}")
        return None, None
    except Exception as exc:        # the model must not cost the batch its summary
        say(f"oracle failed: {type(exc).__name__}: {exc}")
        return None, None
    path = exp_dir / f"{stamp}-oracle.json"
    try:
        write_oracle(path, oracle)
    except OSError as exc:
        say(f"oracle: {path} not written ({exc.strerror or exc})")
        return oracle, None
    return oracle, path


def runs_via(results: list[RunResult]) -> str:
    """How the runs applied netem (their schedules' "via"; the twin's delay
    lines when they had no netem entry)."""
    for events in applied_schedules(results).values():
        for ev in events:
            if ev.get("via"):
                return ev["via"]
    return VIA_TWIN


def simulated_runs(spec: ExperimentSpec, scaling: Scaling | None, results: list[RunResult],
                   loaded: list[tuple[Run, dict]]) -> list[Ran]:
    """A --target sim batch's ok runs as the prediction's tasks they are
    (experiments.sim.predict.seed): spec and scaling the runs', loaded
    their records and metrics (load_analysed)."""
    name = DEPLOYMENT_SCALE if scaling and scaling.deployment else CONFIG_SCALE
    return [Ran(Task(name, r.repeat, r.variant, spec, scaling, VIA_TWIN), r.run_dir.name, metrics,
                run.meta.get("sim") or {})
            for r, (run, metrics) in zip(results, loaded, strict=True) if r.status == "ok" and not r.wrong]


def _sim(scenario: ExperimentSpec, results: list[RunResult], exp_dir: Path, stamp: str, cache: Path,
         say: Callable[[str], None], confirmation: dict | None = None,
         rate: float = 1.0, simulated: Iterable[Ran] = ()) -> tuple[dict | None, Path | None]:
    """The simulation's figures on the runs' repeats (experiments.sim.predict),
    written beside them; (document, path), None for what could not be made
    or written.  scenario: the config as given (a scaled batch's too);
    confirmation: a --confirm batch's record, whose K the config's network
    is simulated at (kept in the document); rate: the batch's --rate, which
    the config's network is simulated at; simulated: the runs, where they
    were simulated (simulated_runs), taken as they are, not run again."""
    repeats = sorted({r.repeat for r in results})
    if not repeats or refusal(scenario):
        return None, None
    t0 = time.monotonic()
    k = (confirmation or {}).get("k") or 1.0
    progress = progress_lines(len(SIM_SCALES) * len(repeats) * len(scenario.variants), say)
    try:
        pred = predict(scenario, repeats, runs_via(results), cache, progress=progress, k=k, rate=rate,
                       runs=simulated)
    except Exception as exc:        # the simulation must not cost the batch its summary
        say(f"simulation failed: {type(exc).__name__}: {exc}")
        return None, None
    doc = {"schema": SIM_SCHEMA, "experiment": scenario.name, "stamp": stamp,
           "wall_s": round(time.monotonic() - t0, 3), **pred,
           **({"confirmation": confirmation} if confirmation else {})}
    path = exp_dir / f"{stamp}{SIM_SUFFIX}"
    try:
        R.write_json(path, doc)
    except OSError as exc:
        say(f"simulation: {path} not written ({exc.strerror or exc})")
        return doc, None
    return doc, path


def write_summary(exp_dir: Path, stamp: str, summ: dict, say: Callable[[str], None]) -> Path | None:
    """``<stamp>-summary.json`` (the batch's own, never another's) and
    ``summary.json`` (the latest).  On a full disk the stamped file that the
    batch claimed at its start is rewritten in place with its status, and one
    line says what was not written; the latest is left as it was.  Returns
    the stamped path when the whole summary is in it."""
    stamped = exp_dir / f"{stamp}-summary.json"
    short = {"experiment": summ["experiment"], "stamp": stamp, "status": "incomplete",
             "reason": "disk full: the summary could not be written"}
    problem = R.write_status(stamped, summ, short)
    if problem:
        say(f"summary: {problem}")
        return None
    try:
        R.write_json(exp_dir / "summary.json", summ)
    except OSError as exc:
        say(f"summary: {exp_dir / 'summary.json'} not updated ({exc.strerror or exc}); the summary is in {stamped}")
    return stamped


def report_command(exp_dir: Path, stamp: str) -> str:
    """The command that makes the batch's report (its run directories by the
    batch's stamp, which no other batch holds), to run as printed from
    anywhere: this interpreter (the project's environment), absolute paths
    quoted for the shell, the run directories' pattern left for it to expand."""
    exp = Path(exp_dir).absolute()
    return (f"{shlex.quote(sys.executable)} -m analysis report --out {shlex.quote(str(exp / f'{stamp}-report'))} "
            f"{shlex.quote(str(exp))}/{stamp}-*-rep*")


def _report(results: list[RunResult], exp_dir: Path, stamp: str, oracle_path: Path | None, signals: Signals,
            say: Callable[[str], None], sim_path: Path | None = None,
            loaded: list[tuple[Run, dict]] | None = None) -> None:
    """analysis' report of the runs that ran (ok or failed), complete or
    absent: an interrupt or a failure leaves no half-made report folder
    (analysis.report.write_report), and one line says how to make it;
    loaded: every run as load_analysed gave it, not read again."""
    ran = [i for i, r in enumerate(results) if r.status in ("ok", "failed")]
    dirs = [results[i].run_dir for i in ran]
    shown = [loaded[i] for i in ran] if loaded else None
    if not dirs:
        return
    how = f"make it with: {report_command(exp_dir, stamp)}"
    if signals.interrupted:
        print(f"interrupted: no report; {how}")
        return
    if any(r.disk_full for r in results):
        print(f"disk full: no report; free some space, then {how}")
        return
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            path = write_report(dirs, exp_dir / f"{stamp}-report", oracle=oracle_path, sim=sim_path, loaded=shown)
            print(f"report:  {path}")
    except KeyboardInterrupt:
        print(f"interrupted: no report; {how}")
    except Exception as exc:
        say(f"report failed: {type(exc).__name__}: {exc}; {how}")


def finish_point(spec: ExperimentSpec, results: list[RunResult], exp_dir: Path, stamp: str, *, signals: Signals,
                 report: bool, say: Callable[[str], None], scaling: Scaling | None = None,
                 sim_cache: Path | None = None, scenario: ExperimentSpec | None = None,
                 confirmation: dict | None = None, simulated: bool = False) -> dict:
    """Run the oracle on the schedules the runs applied and write it beside
    them, analyse the runs, write summary.json (and the stamped copy), print
    the tables, write analysis' report (with the oracle beside the runs)
    unless told not to or interrupted; simulated: the runs were on the
    simulation (--target sim), so the prediction takes the runs it would
    repeat as they are.  A Ctrl-C while the oracle or the
    analysis runs leaves the summary with the run list only; the summary is
    written whatever arrives meanwhile; a Ctrl-C during the report leaves no
    report and says how to make it."""
    analysed: list[dict | None] = [None] * len(results)
    loaded: list[tuple[Run, dict]] | None = None      # the runs as read and analysed, for the report too
    oracle, oracle_path, regime, sim, sim_path = None, None, None, None, None
    exp_dir.mkdir(parents=True, exist_ok=True)
    if not signals.hurry:                   # a second Ctrl-C: the run list only, no analysis
        try:
            shield.phase("analysis")        # (a test signals here)
            oracle, oracle_path = _oracle(spec, results, exp_dir, stamp, say)
            regime, _ = _regime(spec, exp_dir, stamp, say)
            loaded = load_analysed(results)     # first: a simulated batch's runs are part of its prediction
            analysed = [a for _, a in loaded]
            if sim_cache is not None:
                sim, sim_path = _sim(scenario or spec, results, exp_dir, stamp, sim_cache, say, confirmation,
                                      scaling.rate if scaling and not scaling.deployment else 1.0,
                                      simulated_runs(spec, scaling, results, loaded) if simulated else [])
        except KeyboardInterrupt:
            say("interrupted: the summary lists the runs without their analysis" if loaded is None else
                "interrupted: the summary has no simulation beside the runs")
        except Exception as exc:
            say(f"analysis of the runs failed: {type(exc).__name__}: {exc}")
        if any(a is None for a in analysed):
            analysed, loaded = [None] * len(results), None
    with signals.shielded():                # the summary is written whatever arrives now
        summ = summary(spec, results, analysed, signals.interrupted, oracle, regime, sim, scaling)
        summ["stamp"] = stamp
        summ["oracle_file"] = str(oracle_path) if oracle_path else None
        summ["sim_file"] = str(sim_path) if sim_path else None
        written = write_summary(exp_dir, stamp, summ, say)
        _print_summary(spec, results, summ, written)
    if report:
        _report(results, exp_dir, stamp, oracle_path, signals, say, sim_path, loaded)
    return summ
