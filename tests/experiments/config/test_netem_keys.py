"""A netem [[jitter]] entry's keys as tc-netem has them: distribution,
correlation_pct, reorder_pct (defaults filled, ranges drawn like the other
numbers), and a one-line error naming the key for what netem refuses."""

import pytest

from experiments import config as C
from experiments.jitter import schedule as J


def netem(**keys):
    return {"kind": "netem", "host": "h2", "start_s": 1, "duration_s": 1, **keys}


def test_defaults_are_netems(base):
    base["jitter"] = [netem(delay_ms=5)]
    entry = C.resolve(base).jitter[0]
    assert entry["distribution"] == "uniform" and entry["correlation_pct"] == 0.0 and entry["reorder_pct"] == 0.0


def test_keys_reach_the_schedule_and_leave_the_other_draws_alone(base):
    base["jitter"] = [netem(delay_ms=[1, 9], jitter_ms=2, loss_pct=1),
                      {"kind": "rate", "pick": "any", "start_s": [0, 3], "duration_s": 1, "fraction": 0.5}]
    plain = J.make_schedule(C.resolve(base), 1)
    base["jitter"][0].update(distribution="paretonormal", correlation_pct=[10, 20], reorder_pct=5)
    more = J.make_schedule(C.resolve(base), 1)
    p = more[0]["params"] if more[0]["kind"] == "netem" else more[1]["params"]
    assert p["distribution"] == "paretonormal" and 10 <= p["correlation_pct"] <= 20 and p["reorder_pct"] == 5
    for a, b in zip(plain, more, strict=True):
        assert (a["start_s"], a["end_s"], a["link"]) == (b["start_s"], b["end_s"], b["link"])
        new = {"distribution", "correlation_pct", "reorder_pct"}
        assert {k: v for k, v in b["params"].items() if k not in new} == \
            {k: v for k, v in a["params"].items() if k not in new}


@pytest.mark.parametrize("keys, key, message", [
    ({"delay_ms": 5, "distribution": "gauss"}, "jitter[0].distribution", "unknown distribution 'gauss'"),
    ({"delay_ms": 5, "distribution": "normal"}, "jitter[0].distribution", "needs delay_ms > 0 and jitter_ms > 0"),
    ({"jitter_ms": 2, "distribution": "pareto"}, "jitter[0].distribution", "needs delay_ms > 0"),
    ({"delay_ms": [0, 5], "jitter_ms": 1, "distribution": "normal"}, "jitter[0].distribution", "needs delay_ms"),
    ({"loss_pct": 1, "reorder_pct": 10}, "jitter[0].reorder_pct", "reordering needs delay_ms > 0"),
    ({"delay_ms": 5, "reorder_pct": 101}, "jitter[0].reorder_pct", "must be <= 100"),
    ({"delay_ms": 5, "correlation_pct": -1}, "jitter[0].correlation_pct", "must be >= 0"),
    ({"delay_ms": 5, "correlation_pct": "high"}, "jitter[0].correlation_pct", "expected a number"),
    ({"delay_ms": 5, "jitter_ms": 3000}, "jitter[0].jitter_ms", "must be <= 2147"),
    ({"delay_ms": 5, "distribution": 3}, "jitter[0].distribution", "expected a string"),
])
def test_what_netem_refuses_is_one_line_naming_the_key(base, keys, key, message):
    base["jitter"] = [netem(**keys)]
    with pytest.raises(C.ConfigError) as err:
        C.resolve(base)
    msg = str(err.value)
    assert msg.startswith(key + ":") and message in msg and "\n" not in msg, msg
