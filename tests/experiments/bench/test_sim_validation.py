"""experiments/bench/sim_validation.py's arithmetic: the change repeat by
repeat and the emulation against the simulation on the same schedules
(the bench itself runs batches and prints; it asserts nothing)."""

from __future__ import annotations

import json
import math

import pytest

from contract import exits
from experiments.bench import sim_validation
from experiments.bench.sim_validation import paired, repeat_changes


def test_a_repeats_change_is_its_own_symphony_run_against_its_own_baseline():
    ccts = {(1, "baseline"): {"1": 2.0, "2": 1.0}, (1, "symphony"): {"1": 2.2, "2": 0.5},
            (2, "baseline"): {"1": 2.0, "2": None}, (2, "symphony"): {"1": 1.0, "2": 0.4},
            (3, "baseline"): {"1": 4.0}}                     # its Symphony run was not ok: no change
    assert repeat_changes(ccts) == {"1": {1: pytest.approx(10.0), 2: pytest.approx(-50.0)},
                                    "2": {1: pytest.approx(-50.0)}}


def test_paired_differences_over_the_repeats_both_have():
    p = paired({1: 10.0, 2: -20.0, 3: 5.0, 4: 0.0}, {1: 4.0, 2: -30.0, 3: 1.0})
    assert p["repeats"] == [1, 2, 3] and p["diff_points"] == [6.0, 10.0, 4.0]
    assert p["diff_mean_points"] == pytest.approx(20 / 3)
    assert p["diff_se_points"] == pytest.approx(math.sqrt(((6 - 20 / 3) ** 2 + (10 - 20 / 3) ** 2
                                                           + (4 - 20 / 3) ** 2) / 2) / math.sqrt(3))
    assert p["sim_change_std_points"] == pytest.approx(18.8237, abs=1e-3)         # std of 4, -30, 1
    one = paired({1: 10.0}, {1: 4.0})
    assert one["diff_mean_points"] == 6.0 and one["diff_se_points"] is None


def test_an_interrupted_batch_stops_the_bench_with_its_rows_so_far(monkeypatch, tmp_path, capsys):
    calls = []

    def interrupted(args, points, *rest, **kw):
        calls.append(points[0][1].name)
        return exits.INTERRUPTED
    monkeypatch.setattr(sim_validation, "run_points", interrupted)
    out = tmp_path / "rows.json"
    config = sim_validation.CONFIGS / "ci4.toml"
    code = sim_validation.main(["--config", str(config), "--config", str(config), "--out", str(tmp_path),
                                "--json", str(out)])
    assert code == exits.INTERRUPTED
    assert calls == ["ci4"]                       # the second config never started
    assert json.loads(out.read_text()) == []
    assert "interrupted during ci4.toml" in capsys.readouterr().err
