"""Fuzzing `check` (issue 24): mutated shipped configs (experiments/bench/
fuzz_check.py, where the mutations and the property are defined, and a
longer sample runs as a benchmark).  The property: `check` refuses a
mutant with exit 2 and one line, or accepts it (its resolved TOML on
stdout, nothing but warnings and notes on stderr) and a run of it ends ok.  A short
sample here: the checks in this process, two accepted short runs for real.
And the same property on structure (issue 49): any TOML document, a shipped
config with any part of it of another shape, any text."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from experiments import config as C
from experiments.bench import fuzz_check as F
from experiments.config import schema as S

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


# --- structure (issue 49, item 6): arbitrary TOML documents and types, not only
# mutated values of the shipped configs ------------------------------------------------

KNOWN = sorted(S.TOP_KEYS | S.TOPO_KEYS | S.JOB_KEYS | S.ECN_KEYS | S.SYMPHONY_KEYS | S.RUNNER_KEYS
               | set().union(*S.JITTER_KEYS.values()) | {"preset", "window_packets", "step_s", "run_s"})
KEYS = st.one_of(st.sampled_from(KNOWN), st.text(max_size=8))
SCALARS = st.one_of(st.booleans(), st.integers(min_value=-2**63, max_value=2**63 - 1), st.floats(),
                    st.text(max_size=12), st.datetimes(timezones=st.none() | st.just(dt.UTC)), st.dates(),
                    st.times())
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=3),
                      max_leaves=12)
STRUCTURE = settings(max_examples=CHECKS, deadline=None, derandomize=True,
                     suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


def _held(v: F.Verdict, what) -> None:
    assert F.violation(v) is None, (what, v)


CI4 = C.load_raw(next(c for c in F.CONFIGS if c.stem == "ci4"))


@STRUCTURE
@given(doc=st.dictionaries(KEYS, VALUES, max_size=6))
# a key that holds a line break of str.splitlines' (\x1c) made two lines of the refusal
@example(doc={**CI4, "dcqcn": {"preset": "emulation", "step\x1cms": {}}})
@example(doc={**CI4, "ecn": {"kmax\u2028": 1}})
def test_check_holds_on_any_toml_document(doc):
    _held(F.verdict(doc), doc)


@STRUCTURE
@given(data=st.data(), config=st.sampled_from(F.CONFIGS))
def test_check_holds_on_a_shipped_config_with_any_part_of_it_retyped(data, config):
    """A table, an array or a value of a shipped config replaced by anything
    (a table for a number, an array of tables for a table, a date), or a
    key of any name added to one of its tables."""
    raw = C.load_raw(config)
    raw.pop("sweep", None)
    nodes = list(F.nodes(raw))
    path, _ = data.draw(st.sampled_from(nodes))
    F.graft(raw, path, data.draw(VALUES), data.draw(KEYS) if data.draw(st.booleans()) else None)
    _held(F.verdict(raw), (config.stem, path))


@STRUCTURE
@given(text=st.text(max_size=200) | st.binary(max_size=200).map(lambda b: b.decode("latin-1")))
@example(text="x = " + "[" * 5000 + "]" * 5000)       # the parser's RecursionError: a traceback and exit 1
@example(text="x = 1" + "0" * 5000)                    # past the digits Python converts: a ValueError
def test_check_holds_on_any_text(text):
    _held(F.verdict_text(text), text)
