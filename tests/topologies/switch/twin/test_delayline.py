"""The twin's delay line on a virtual clock: netem's delay, jitter (uniform,
normal, pareto, paretonormal, with correlation), loss, reordering and limit,
over a few thousand frames each; its tables are iproute2's; it does no I/O."""

from __future__ import annotations

import ast
import math
import statistics
from pathlib import Path

import pytest

from topologies.spec.netem import DISTRIBUTIONS, NetemParams
from topologies.switch.twin import delayline as D
from topologies.switch.twin.delayline import DelayLine, expected_delay, tabledist

TC_LIBS = (Path("/usr/lib/tc"), Path("/usr/lib/x86_64-linux-gnu/tc"), Path("/usr/lib64/tc"), Path("/usr/share/tc"))
N = 4000


def run(line: DelayLine, n: int = N, gap: float = 0.001) -> dict:
    """Push n frames, one every `gap` s, waking exactly when the line says:
    {"delays": [s per frame out, in order out], "order": [frame index out]}."""
    sent, out_order, delays = {}, [], []
    t, i = 0.0, 0

    def collect(now):
        for f in line.pop_due(now):
            k = int.from_bytes(f, "big")
            out_order.append(k)
            delays.append(now - sent[k])

    while i < n or len(line):
        nxt = i * gap if i < n else math.inf
        due = line.deadline()
        if due is not None and due <= nxt:
            t = max(t, due)
            collect(t)
            continue
        t = nxt
        f = i.to_bytes(4, "big")
        if line.push(f, t):
            sent[i] = t
        i += 1
        collect(t)
    return {"delays": delays, "order": out_order}


def test_a_fixed_delay_is_exact_and_keeps_order():
    line = DelayLine(1, NetemParams(delay_ms=5))
    r = run(line, 500)
    assert r["order"] == list(range(500))
    assert all(d == pytest.approx(0.005, abs=1e-9) for d in r["delays"])
    assert line.stats == {"in": 500, "out": 500, "lost": 0, "reordered": 0, "limit_drops": 0}


@pytest.mark.parametrize("dist", DISTRIBUTIONS)
def test_jitter_mean_and_spread_are_the_distributions(dist):
    p = NetemParams(delay_ms=10, jitter_ms=3, distribution=dist)
    mean, std = expected_delay(p)
    r = run(DelayLine(f"jitter-{dist}", p))
    got = [d * 1e3 for d in r["delays"]]
    assert statistics.fmean(got) == pytest.approx(mean, abs=0.15)
    assert statistics.pstdev(got) == pytest.approx(std, rel=0.08)
    # frames leave in the order of their send times, as netem's tfifo: a
    # jitter wider than the 1 ms gap between frames reorders them
    assert r["order"] != sorted(r["order"])
    # the distributions themselves: uniform is delay +- jitter with std
    # jitter/sqrt(3); normal's std is the jitter; pareto's tables are narrower
    want = {"uniform": 3 / math.sqrt(3), "normal": 3.0, "pareto": 2.46, "paretonormal": 2.50}[dist]
    assert std == pytest.approx(want, rel=0.01)
    if dist == "uniform":
        assert 7.0 <= min(got) and max(got) < 13.0


def test_negative_draws_are_sent_at_once():
    p = NetemParams(delay_ms=1, jitter_ms=4, distribution="normal")
    r = run(DelayLine(3, p))
    assert min(r["delays"]) == 0.0
    mean, _ = expected_delay(p)
    assert mean > 1.0             # the clipped draws pull the mean up
    assert statistics.fmean(r["delays"]) * 1e3 == pytest.approx(mean, abs=0.15)


@pytest.mark.parametrize("loss", [0.5, 2.0, 10.0])
def test_loss_rate(loss):
    line = DelayLine(f"loss-{loss}", NetemParams(delay_ms=2, loss_pct=loss))
    r = run(line, 20000)
    rate = 100 * line.stats["lost"] / 20000
    assert rate == pytest.approx(loss, abs=max(0.5, 0.15 * loss))
    assert len(r["order"]) == 20000 - line.stats["lost"] and r["order"] == sorted(r["order"])


def test_reorder_sends_that_share_at_once_ahead_of_the_held_ones():
    line = DelayLine(5, NetemParams(delay_ms=10, reorder_pct=25))
    r = run(line, N)
    share = line.stats["reordered"] / N
    assert share == pytest.approx(0.25, abs=0.03)
    at_once = [d for d in r["delays"] if d == 0.0]
    assert len(at_once) == line.stats["reordered"]
    assert all(d == 0.0 or d == pytest.approx(0.010) for d in r["delays"])
    # a frame sent at once overtakes the (up to ten) held before it
    k = next(k for k, d in zip(r["order"], r["delays"], strict=True) if d == 0.0 and k > 20)
    pos = r["order"].index(k)
    assert [j for j in r["order"][pos + 1:pos + 12] if j < k]


def lag1(xs):
    m = statistics.fmean(xs)
    return sum((a - m) * (b - m) for a, b in zip(xs, xs[1:], strict=False)) / sum((a - m) ** 2 for a in xs)


@pytest.mark.parametrize("dist", ["uniform", "normal"])
def test_correlation_is_the_kernels(dist):
    """netem correlates the 32-bit draws, then takes them modulo 2 x jitter
    (uniform) or the table's 4096 entries: below 100 % the delays come out
    practically uncorrelated and as wide as without; at 100 % every frame
    gets the first draw.  The twin does the same (docs/topologies.md)."""
    def delays(corr):
        p = NetemParams(delay_ms=20, jitter_ms=5, distribution=dist, correlation_pct=corr)
        # 50 ms between frames: no reordering, so out order is draw order
        return run(DelayLine(7, p), N, gap=0.05)["delays"]

    plain, corr, full = delays(0), delays(75), delays(100)
    assert abs(lag1(plain)) < 0.06 and abs(lag1(corr)) < 0.06
    assert statistics.pstdev(corr) == pytest.approx(statistics.pstdev(plain), rel=0.08)
    assert len({round(d, 9) for d in full}) == 1


def test_limit_drops_what_does_not_fit():
    line = DelayLine(1, NetemParams(delay_ms=100, limit=10))
    assert [line.push(bytes([i]), 0.0) for i in range(12)] == [True] * 10 + [False, False]
    assert line.stats["limit_drops"] == 2 and len(line) == 10


def test_same_seed_same_draws_and_a_change_keeps_held_frames():
    p = NetemParams(delay_ms=10, jitter_ms=5, loss_pct=5)
    assert run(DelayLine("s", p), 500) == run(DelayLine("s", p), 500)
    assert run(DelayLine("s", p), 500) != run(DelayLine("t", p), 500)
    line = DelayLine(1, NetemParams(delay_ms=50))
    line.push(b"a", 0.0)
    line.set(NetemParams(delay_ms=1))
    line.push(b"b", 0.0)
    assert line.pop_due(0.001) == [b"b"] and line.deadline() == pytest.approx(0.05)
    line.set(NetemParams())
    assert not line.active and line.pop_due(0.05) == [b"a"]


def test_tabledist_is_the_kernels_integer_arithmetic():
    # uniform: rnd % 2 sigma + mu - sigma
    assert tabledist(1000, 100, 0, None) == 900 and tabledist(1000, 100, 199, None) == 1099
    assert tabledist(1000, 0, 12345, None) == 1000
    # table: rounds (sigma % 8192) * t / 8192 half away from zero, truncating
    dist = (8192, -8192, 4096, -1)
    assert tabledist(10_000_000, 2_000_000, 0, dist) == 12_000_000
    assert tabledist(10_000_000, 2_000_000, 1, dist) == 8_000_000
    assert tabledist(10_000_000, 2_000_000, 2, dist) == 11_000_000
    assert tabledist(10_000_000, 2_000_000, 3, dist) == 10_000_000 - 244
    assert tabledist(0, 10, 7, dist) == 0 + _c_trunc(10 * -1 - 4096, 8192)


def _c_trunc(a, b):
    return int(a / b)


@pytest.mark.parametrize("name", ["normal", "pareto", "paretonormal"])
def test_tables_are_iproute2s(name):
    t = D.table(name)
    assert len(t) == 4096 and all(-32768 <= v <= 32767 for v in t) and list(t) == sorted(t)
    shipped = next((d / f"{name}.dist" for d in TC_LIBS if (d / f"{name}.dist").is_file()), None)
    if shipped is None:
        pytest.skip(f"no {name}.dist installed (iproute2's tc lib directory) to compare with")
    values = [int(x, 0) for line in shipped.read_text().splitlines()
              if line.strip() and not line.startswith("#") for x in line.split()]
    assert list(t) == values


def test_the_delay_line_does_no_io():
    """Only computation: no sockets, files, clocks or processes."""
    tree = ast.parse(Path(D.__file__).read_text())
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert imported <= {"__future__", "functools", "heapq", "math", "random", "collections",
                        "topologies.spec.netem"}, imported
    calls = {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    assert not calls & {"open", "print", "input"}


@pytest.mark.parametrize("kw, message", [
    ({"delay_ms": -1}, "delay_ms must be a finite number >= 0"),
    ({"loss_pct": 101}, "loss_pct must be <= 100"),
    ({"jitter_ms": float("nan")}, "jitter_ms must be a finite number"),
    ({"distribution": "gamma"}, "distribution 'gamma' is unknown"),
    ({"reorder_pct": 5}, "reorder_pct needs delay_ms > 0"),
    ({"jitter_ms": 1, "distribution": "normal"}, "needs delay_ms > 0"),
    ({"delay_ms": 1, "limit": 0}, "limit must be an integer >= 1"),
])
def test_bad_params_are_one_line_errors(kw, message):
    with pytest.raises(ValueError, match=message) as e:
        NetemParams(**kw)
    assert "\n" not in str(e.value)
    with pytest.raises(ValueError, match="unknown field 'delay'"):
        NetemParams.from_dict({"delay": 1})
