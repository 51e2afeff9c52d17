"""Fuzzing `check` (issue 24): mutated shipped configs (experiments/bench/
fuzz_check.py, where the mutations and the property are defined, and a
longer sample runs as a benchmark).  The property: `check` refuses a
mutant with exit 2 and one line, or accepts it (its resolved TOML on
stdout, nothing but warnings and notes on stderr) and a run of it ends ok.  A short
sample here: the checks in this process, two accepted short runs for real."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from experiments.bench import fuzz_check as F

CHECKS = 60          # about 2 s of `check`
RUNS = 2             # about 15 s of runs on the soft target
RUN_BUDGET_S = 10.0


@settings(max_examples=CHECKS, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(sample=st.integers(min_value=0, max_value=2**31))
def test_check_refuses_a_mutated_config_in_one_line_or_accepts_it(sample):
    base, raw, what = F.mutant(sample)
    verdict = F.verdict(raw)
    assert F.violation(verdict) is None, (sample, base, what, verdict)


@pytest.mark.root
@pytest.mark.slow
def test_mutated_configs_check_accepts_then_run(capsys):
    doc = F.fuzz(n=60, seed=0, runs=RUNS, budget_s=RUN_BUDGET_S, say=lambda line: None)
    assert doc["violations"] == []
    assert doc["ran"] == doc["ran_ok"] == RUNS
    assert doc["refused"] and doc["accepted"]
