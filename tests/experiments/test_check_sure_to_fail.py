"""`check` (and `run`, before anything starts) refuses with one line and
exit 2 every config that is sure to fail (issue 24, item 3; the rules:
experiments/feasible.py), keeps its resolved TOML on stdout when it accepts,
and warns on stderr, going on, when a run would take over an hour.  Each
config below passed `check` and failed every run before."""

from __future__ import annotations

import tomllib

import pytest

from contract import exits
from experiments import cli, cli_common, feasible, plan
from experiments import config as C
from tests.harness import REPO

CI4 = (REPO / "experiments" / "configs" / "ci4.toml").read_text()
VICTIM = (REPO / "experiments" / "configs" / "victim_straggle8.toml").read_text()


def warnings(err: list[str]) -> list[str]:
    """check's stderr without its notes (the targets, --scale auto's K: experiments/cli_check.py)."""
    return [line for line in err if not line.startswith("note: ")]


def ci4(*changes: tuple[str, str], base: str = CI4) -> str:
    text = base
    for old, new in changes:
        assert old in text, old
        text = text.replace(old, new)
    return text


DEADLINES = 'transport = "udp"\n[jobs.deadlines]\n'
SURE_TO_FAIL = {
    # values the agents' own job file refuses (it used to fail every run at its start, exit 3)
    "a straggle over an hour": (
        ci4(("delay_s = 0.3", "delay_s = 4000")),
        "config error: jitter[1].delay_s: at most 3600 s (a straggle the agents' job file accepts), got 4000"),
    # a link delay of 1 s: the derived deadlines count no link delay
    "a link delay of 1 s": (
        ci4(("queue_depth_pkts = 64", "queue_depth_pkts = 64\nhost_delay_ms = 1000")),
        "config error: jobs[0].deadlines.run_s: 21.06 s (derived: 10 x the run's bandwidth bound at 5 Mbit/s, the "
        "job's share of its busiest queue + 15 s; link delays are not counted: set [jobs.deadlines] run_s) is "
        "shorter than the oracle's ideal run of job 1 (24.73 s, repeat 1) at the config's rates and delays: every "
        "run would fail"),
    # the same delay in the victim scenario: the fluid ideal fits, the transport's window does not
    "a link delay of 1 s with a window of 16 packets": (
        ci4(("host_rate_mbit = 20\n", "host_rate_mbit = 20\nhost_delay_ms = 1000\n"),
            ("iterations = 1\n", "iterations = 1\n[jobs.udp]\nwindow_packets = 16\n"), base=VICTIM),
        "config error: jobs[0].deadlines.step_s: 15.53 s (derived: 10 x a step's bandwidth bound at 2.5 Mbit/s, "
        "the job's share of its busiest queue + 5 s; link delays are not counted: set [jobs.deadlines] step_s) is "
        "shorter than a step's least time (46 s) with the transport's window (191 packets of 1400 bytes, 16 in "
        "flight per round trip of 4000 ms): every run would fail"),
    # a slow fabric: the derived deadlines assume the job's share of it, and the runner's 90 s does not fit
    "a fabric at 0.01 Mbit/s": (
        ci4(("fabric_rate_mbit = 10", "fabric_rate_mbit = 0.01")),
        "config error: runner.run_deadline_s: 90 s is shorter than the oracle's ideal run of job 1 (576 s, repeat 1) "
        "at the config's rates and delays: every run would fail"),
    # so slow that the flow model cannot take it (its float steps stop): the closed-form floor, at once
    "a fabric at 1e-9 Mbit/s": (
        ci4(("fabric_rate_mbit = 10", "fabric_rate_mbit = 1e-9")),
        "config error: runner.run_deadline_s: 90 s is shorter than the run's least time (2.88e+09 s: 12 steps of "
        "2.4e+08 s) at the path's rate (30000 bytes at 1e-09 Mbit/s, 0 ms of link delay): every run would fail"),
    "every link at 0.01 Mbit/s": (
        ci4(("host_rate_mbit = 10", "host_rate_mbit = 0.01"), ("fabric_rate_mbit = 10", "fabric_rate_mbit = 0.01")),
        "config error: runner.run_deadline_s: 90 s is shorter than the oracle's ideal run of job 1 (576 s, repeat 1) "
        "at the config's rates and delays: every run would fail"),
    "a step deadline shorter than the ideal step": (
        ci4(('transport = "udp"', DEADLINES + "step_s = 0.001")),
        "config error: jobs[0].deadlines.step_s: 0.001 s is shorter than the oracle's ideal step (0.3539 s: rank 3 "
        "waiting for step 6, repeat 1) at the config's rates and delays: every run would fail"),
    "a run deadline shorter than the ideal run": (
        ci4(('transport = "udp"', DEADLINES + "run_s = 0.5")),
        "config error: jobs[0].deadlines.run_s: 0.5 s is shorter than the oracle's ideal run of job 1 (0.8978 s, "
        "repeat 1) at the config's rates and delays: every run would fail"),
    "netem loss of 100 % for the whole run": (
        ci4() + '\n[[jitter]]\nkind = "netem"\nlink = "h1-l1"\nstart_s = 0\nduration_s = 1000\nloss_pct = 100\n',
        "config error: jitter[2].loss_pct: 100 % loss on h1-l1 from 0 to 1000 s (repeat 1) keeps job 1's first step "
        "from rank 0 to rank 1 from arriving within its deadline (15.78 s): every run would fail"),
    # every run failed making its jitter schedule
    "a jitter entry picking a link class the topology lacks": (
        (REPO / "experiments" / "configs" / "nohelp_star.toml").read_text()
        + '\n[[jitter]]\nkind = "rate"\npick = "fabric"\nstart_s = 0\nduration_s = 1\nfraction = 0.5\n',
        "config error: jitter: no fabric link to pick from in this topology (repeat 1's schedule)"),
    "a straggle longer than the run deadline": (
        ci4(("delay_s = 0.3", "delay_s = 200")),
        "config error: jitter[1].delay_s: a straggle of 200 s (repeat 1) is no shorter than the runner's deadline "
        "(90 s): every run would fail"),
}


def cli_lines(args, capsys) -> tuple[int, list[str], str]:
    code = cli.main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, err.strip().splitlines(), out


@pytest.mark.parametrize("what", sorted(SURE_TO_FAIL))
def test_check_and_run_refuse_a_config_sure_to_fail_in_one_line(tmp_path, capsys, monkeypatch, what):
    # "auto" as where BMv2 is not installed: the twin applies netem jitter
    # itself, where BMv2 on a kernel without sch_netem would leave it out
    # (and 100 % loss would then fail nothing)
    for module in (plan, cli_common):
        monkeypatch.setattr(module, "resolve_target", lambda target: "soft")
    text, line = SURE_TO_FAIL[what]
    path = tmp_path / "c.toml"
    path.write_text(text)
    for command in ("check", "run"):        # run refuses it before anything starts (no root needed for that)
        code, err, out = cli_lines([command, path], capsys)
        assert (code, err, out) == (exits.USAGE, [line], ""), command


def test_a_loss_the_runs_outlast_or_below_100_percent_is_accepted(tmp_path, capsys):
    """Only what is sure: 99 % loss, or 100 % for less than a step's deadline, may still let a run through."""
    for entry in ("loss_pct = 99\nduration_s = 1000", "loss_pct = 100\nduration_s = 2"):
        path = tmp_path / "c.toml"
        path.write_text(CI4 + f'\n[[jitter]]\nkind = "netem"\nlink = "h1-l1"\nstart_s = 0\n{entry}\n')
        code, err, out = cli_lines(["check", path], capsys)
        assert code == exits.OK and warnings(err) == [], err
        assert tomllib.loads(out)["jitter"][2]["kind"] == "netem"


def test_every_shipped_config_is_accepted_without_a_word(capsys):
    """The shipped configs and the victim bench's untuned family."""
    for path in sorted([*(REPO / "experiments" / "configs").glob("*.toml"),
                        *(REPO / "experiments" / "bench" / "family").glob("*.toml")]):
        code, err, out = cli_lines(["check", path], capsys)
        assert code == exits.OK and warnings(err) == [], (path.name, err)
        assert tomllib.loads(out)["name"]


def test_a_run_over_an_hour_is_warned_about_on_stderr_and_check_goes_on(tmp_path, capsys):
    """50 MB x 10,000 iterations: derived deadlines of 69 days fit, so it
    is no certain failure; its cost is said, the resolved config printed."""
    path = tmp_path / "c.toml"
    path.write_text(ci4(("message_bytes = 120000", "message_bytes = 50000000"),
                        ("iterations = 2", "iterations = 10000"),
                        ("run_deadline_s = 90", "run_deadline_s = 100000000")))
    code, err, out = cli_lines(["check", path], capsys)
    assert code == exits.OK
    assert warnings(err) == [
        "warning: a run of ci4 would take about 13.9 days (the oracle's ideal at the config's rates and "
        "delays, and about 5 s to set up and tear down); its 2 run(s): about 27.8 days; going on"]
    assert tomllib.loads(out)["jobs"][0]["iterations"] == 10000


def test_a_deadline_close_to_the_ideal_is_a_warning_not_a_refusal(tmp_path, capsys):
    """nohelp_straggler's run ideally takes 8.48 s; with 10 s for the runner
    a run may fail (one did in the fuzzing), but need not: warned about."""
    path = tmp_path / "c.toml"
    path.write_text(ci4(("run_deadline_s = 120", "run_deadline_s = 10"),
                        base=(REPO / "experiments" / "configs" / "nohelp_straggler.toml").read_text()))
    code, err, out = cli_lines(["check", path], capsys)
    assert code == exits.OK and tomllib.loads(out)["runner"]["run_deadline_s"] == 10
    assert warnings(err) == [
        "warning: runner.run_deadline_s (10 s) is less than 1.5 x the oracle's ideal run of job 1 (8.48 s, "
        "repeat 1): runs have taken up to 1.3 x the ideal, their agents seconds to start, so a run may "
        "fail; going on"]


def test_the_expected_wall_time_of_a_run_is_the_ideal_and_its_overhead():
    spec = C.resolve(tomllib.loads(CI4))
    a = feasible.assess(spec)
    assert a.warnings == [] and a.run_s == pytest.approx(0.8978 + feasible.RUN_OVERHEAD_S, abs=1e-3)
