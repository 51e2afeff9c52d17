"""The fidelity monitors' pure parts (experiments/fidelity.py): /proc parsed,
CPU figures from samples, the twins' and agents' figures, the verdict on
synthetic figures, the summary's warnings."""

import json

import pytest

from contract.lateness import Lateness
from experiments import fidelity as F

OK_FIGURES = {
    "cpu": {"saturated_share": 0.1},
    "ports": {"rate_ratio_min": 0.99, "worst_port": {"port": "l1:3"}, "lateness": {"n": 5000, "p99_ms": 1.2}},
    "agents": {"pacing": {"n": 5000, "p99_ms": 1.0}, "dcqcn_timer": {"n": 500, "p90_ms": 0.8}},
}


def figures(**changes):
    """OK_FIGURES with "part.key" = value changes."""
    out = json.loads(json.dumps(OK_FIGURES))
    for key, value in changes.items():
        part, _, name = key.partition("__")
        out[part][name] = value
    return out


def test_all_within_the_thresholds_is_ok():
    v = F.verdict(OK_FIGURES)
    assert v["verdict"] == "ok" and v["reasons"] == [] and v["not_measured"] == []
    assert {c["check"] for c in v["checks"]} == {"cpu_saturated_share", "port_rate_ratio", "twin_late_p99_ms",
                                                 "pacing_late_p99_ms", "timer_late_p90_ms"}


@pytest.mark.parametrize("change, check", [
    ({"cpu__saturated_share": 0.8}, "cpu_saturated_share"),
    ({"ports__rate_ratio_min": 0.9}, "port_rate_ratio"),
    ({"ports__lateness": {"n": 5000, "p99_ms": 4.0}}, "twin_late_p99_ms"),
    ({"agents__pacing": {"n": 5000, "p99_ms": 7.5}}, "pacing_late_p99_ms"),
    ({"agents__dcqcn_timer": {"n": 500, "p90_ms": 2.6}}, "timer_late_p90_ms"),
])
def test_one_check_over_its_threshold_degrades_the_run_and_says_why(change, check):
    v = F.verdict(figures(**change))
    assert v["verdict"] == "degraded" and len(v["reasons"]) == 1 and v["reasons"][0].startswith(check)
    (failed,) = [c for c in v["checks"] if c["ok"] is False]
    assert failed["check"] == check


def test_the_reason_names_the_figure_the_limit_and_the_worst_port():
    v = F.verdict(figures(ports__rate_ratio_min=0.9))
    assert v["reasons"] == ["port_rate_ratio 0.9 < 0.95: lowest achieved / configured rate of a switch port "
                            "while backlogged (l1:3)"]


def test_the_timer_limit_is_the_jobs_timer_floor_unless_set():
    fig = figures(agents__dcqcn_timer={"n": 500, "p90_ms": 4.0})
    assert F.verdict(fig)["verdict"] == "degraded"                       # floor 2.5 ms
    assert F.verdict(fig, timer_floor_ms=5.0)["verdict"] == "ok"          # a job with timer_floor_ms = 5
    assert F.verdict(fig, F.Thresholds(timer_late_p90_ms=10.0))["verdict"] == "ok"


def test_unmeasured_figures_are_skipped_not_failed():
    v = F.verdict({"cpu": None, "ports": None, "agents": {"pacing": {"n": 999, "p99_ms": 50.0},
                                                           "dcqcn_timer": {"n": 99, "p90_ms": 50.0}}})
    assert v["verdict"] == "ok"
    # too few samples beyond the quantile to judge it (10: a p99 needs 1000, a p90 100);
    # bmv2 has no port figures, DCQCN off no timer events
    assert set(v["not_measured"]) == {c["check"] for c in v["checks"]}
    v = F.verdict({"agents": {"pacing": {"n": 1000, "p99_ms": 50.0}, "dcqcn_timer": {"n": 100, "p90_ms": 50.0}}})
    assert [c["check"] for c in v["checks"] if c["ok"] is False] == ["pacing_late_p99_ms", "timer_late_p90_ms"]


def test_thresholds_are_recorded_with_the_verdict(tmp_path):
    (tmp_path / "agents").mkdir()
    out = F.assess(tmp_path, {}, {"saturated_share": 0.9})
    assert out["verdict"] == "degraded" and out["thresholds"]["cpu_saturated_share"] == 0.5
    assert out["figures"]["cpu"] == {"saturated_share": 0.9} and out["figures"]["ports"] is None


# --- /proc -----------------------------------------------------------------

def test_proc_parsers():
    stat = "cpu  100 5 50 800 20 3 2 10 0 0\ncpu0 50 2 25 400 10 1 1 5 0 0\n"
    assert F.parse_proc_stat(stat) == (100 + 50 + 3 + 2 + 10, 990)        # nice's 5 jiffies yield
    psi = "some avg10=1.00 avg60=0.50 avg300=0.10 total=123456\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
    assert F.parse_psi_some_us(psi) == 123456
    assert F.parse_schedstat("2000000 500000 40\n") == (2_000_000, 500_000, 40)
    with pytest.raises(ValueError):
        F.parse_proc_stat("intr 1 2 3\n")


def sample(t, busy, total, psi, procs):
    return F.Sample(t, busy, total, psi, procs)


def test_cpu_figures_from_samples():
    # 2 s in four 0.5 s intervals of 100 jiffies each: 50, 96, 100, 60 busy
    busy = [0, 50, 146, 246, 306]
    samples = [sample(0.5 * i, busy[i], 100 * i, 1_000_000 + 100_000 * i,
                      {10: (int(0.2e9) * i, int(0.05e9) * i, 100 * i),          # an agent
                       20: (int(0.1e9) * min(i, 2), 0, 10 * min(i, 2))})          # a switch that exited
               for i in range(5)]
    f = F.cpu_figures(samples, {10: "agents", 20: "switches"})
    assert f["window_s"] == 2.0 and f["samples"] == 5
    assert f["machine_busy"] == pytest.approx(306 / 400)
    assert f["saturated_share"] == pytest.approx(0.5)          # the 96 and 100 intervals
    assert f["pressure_some"] == pytest.approx(0.4 / 2.0)
    a, s = f["roles"]["agents"], f["roles"]["switches"]
    assert a["cpu_s"] == pytest.approx(0.8) and a["wait_s"] == pytest.approx(0.2)
    assert a["wait_share"] == pytest.approx(0.2) and a["wait_per_slice_ms"] == pytest.approx(0.5)
    assert s["cpu_s"] == pytest.approx(0.2) and s["processes"] == 1      # what its last sample saw
    assert f["run_cpu_s"] == pytest.approx(1.0) and f["run_cores"] == pytest.approx(0.5)
    assert F.cpu_figures(samples[:1], {}) is None


# --- twins and agents -----------------------------------------------------------

def lateness_record(*xs):
    h = Lateness()
    for x in xs:
        h.add(x)
    return h.as_dict()


def test_port_figures_judge_only_ports_with_enough_backlog():
    ports = {"l1": {"ports": {"1": {"fidelity": {"busy_s": 2.0, "rate_ratio": 0.97,
                                                 "lateness": lateness_record(0.001, 0.002)}},
                              "2": {"fidelity": {"busy_s": 0.05, "rate_ratio": 0.5,
                                                 "lateness": lateness_record(0.004)}},
                              "3": {"rx": 1}}},                      # unlimited: no figures
             "p1": {"error": "ConnectionRefusedError: ..."}}
    f = F.port_figures(ports)
    assert f["ports_with_rate"] == 2 and f["ports_judged"] == 1
    assert f["rate_ratio_min"] == 0.97 and f["worst_port"]["port"] == "l1:1"
    assert f["lateness"]["n"] == 3 and f["lateness"]["max_ms"] == pytest.approx(4.0)
    assert "buckets" not in f["lateness"]
    assert F.port_figures({}) is None


def test_agent_figures_merge_the_stats_events(tmp_path):
    d = tmp_path / "agents"
    d.mkdir()
    for r, late in enumerate((0.001, 0.009)):
        lines = [{"kind": "step_end", "t": 1}, {"kind": "stats", "t": 2, "counters": {},
                                                  "lateness": {"pacing": lateness_record(late, late),
                                                               "dcqcn_timer": lateness_record()}}]
        (d / f"rank{r}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    (d / "rank2.jsonl").write_text('{"kind": "stats", "t": 3, "counters": {}}\n')     # a TCP agent
    events = F.last_stats_events(d)
    assert len(events) == 3
    f = F.agent_figures(events)
    assert f["agents"] == 2 and f["pacing"]["n"] == 4 and f["pacing"]["max_ms"] == pytest.approx(9.0)
    assert f["pacing"]["worst_agent_p99_ms"] == pytest.approx(9.0)
    assert f["dcqcn_timer"]["n"] == 0 and f["dcqcn_timer"]["worst_agent_p99_ms"] is None
    assert F.agent_figures(events[2:]) is None


def test_summary_warns_per_variant_of_degraded_runs():
    runs = [("baseline", {"verdict": "ok"}),
            ("baseline", {"verdict": "degraded", "reasons": ["cpu_saturated_share 0.9 > 0.5: ..."]}),
            ("symphony", {"verdict": "ok"}), ("symphony", None)]
    (line,) = F.warnings_for(runs)
    assert line.startswith("warning: fidelity degraded in 1 of 2 baseline run(s) (cpu_saturated_share)")
    assert F.warnings_for(runs[2:]) == []
