"""summary.json without an analysis of every run (it failed, or a second
Ctrl-C): the run list only, and the exit code says the worst that happened."""

from pathlib import Path

from experiments import summary as SU
from experiments.supervise import RunResult


def test_without_analysis_the_run_list_only(fake_spec):
    results = [RunResult(Path("/x/a-baseline-rep1"), "baseline", 1, status="ok"),
               RunResult(Path("/x/a-symphony-rep1"), "symphony", 1, status="failed", reason="deadline")]
    s = SU.summary(fake_spec(), results, [None, None], interrupted=False)
    assert s["variants"] == {} and s["cct_change_pct"] is None and s["experiment"] == "fake"
    assert s["runs"] == [
        {"run": "a-baseline-rep1", "variant": "baseline", "repeat": 1, "status": "ok", "reason": "",
         "wrong_result": False},
        {"run": "a-symphony-rep1", "variant": "symphony", "repeat": 1, "status": "failed", "reason": "deadline",
         "wrong_result": False}]
    assert SU.exit_code(results, False) == SU.EXIT_FAILED
    assert SU.exit_code(results, True) == SU.EXIT_INTERRUPTED
    results[0].wrong = True
    assert SU.exit_code(results, True) == SU.EXIT_WRONG
    assert SU.exit_code(results[:0], False) == SU.EXIT_OK
