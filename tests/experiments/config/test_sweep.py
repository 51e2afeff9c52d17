"""Sweeps: the cross product of the axes, each point resolved on its own."""

import copy

import pytest

from experiments import config as C


def test_sweep_points_cross_product(base):
    raw = base
    raw["jitter"] = [{"kind": "rate", "rank": 1, "start_s": 0.1, "duration_s": 1, "fraction": 0.5}]
    raw["sweep"] = {"jitter.0.fraction": [0.25, 0.5], "symphony.threshold": [0, 2, 4]}
    points = C.sweep_points(raw)
    assert len(points) == 6
    fr = sorted({(cfg.jitter[0]["fraction"], cfg.symphony.threshold) for _, cfg in points})
    assert fr == [(0.25, 0), (0.25, 2), (0.25, 4), (0.5, 0), (0.5, 2), (0.5, 4)]
    assert points[0][0] == "fraction0.25_threshold0"
    assert all(cfg.sweep == {} for _, cfg in points)
    assert points[0][1].sweep_point == {"jitter.0.fraction": 0.25, "symphony.threshold": 0}


def test_sweep_point_is_validated(base):
    raw = base
    raw["sweep"] = {"symphony.p_sym": [0.5, 3.0]}
    with pytest.raises(C.ConfigError, match="symphony.p_sym"):
        C.sweep_points(copy.deepcopy(raw))


def test_a_default_the_file_does_not_spell_out_can_be_swept(base):
    base["sweep"] = {"ecn.kmax": [20, 30]}         # (Kmin is derived: 13 packets here)
    assert [spec.ecn.kmax for _, spec in C.sweep_points(base)] == [20, 30]


def test_symphony_track_can_be_swept_and_a_bad_one_is_refused(base):
    base["sweep"] = {"symphony.track": ["path", "leaves"]}
    points = C.sweep_points(copy.deepcopy(base))
    assert [(label, spec.symphony.track) for label, spec in points] == [("trackpath", "path"),
                                                                      ("trackleaves", "leaves")]
    base["sweep"] = {"symphony.track": ["path", "spines"]}
    with pytest.raises(C.ConfigError, match=r"^sweep point trackspines: symphony\.track: unknown track 'spines'"):
        C.sweep_points(base)


def test_no_sweep_table(base):
    with pytest.raises(C.ConfigError, match=r"^sweep: --sweep given but the config has no \[sweep\] table$"):
        C.sweep_points(base)
