"""The lateness histogram agents and twins record (contract/lateness.py):
quantiles within a bucket's width above the true value, merging, the record
read back."""

import pytest

from contract.lateness import FLOOR_S, Lateness, bucket_of, merged, upper_edge_s


def test_quantiles_are_upper_bucket_edges_never_below_the_truth():
    h = Lateness()
    xs = [i * 1e-4 for i in range(1, 1001)]         # 0.1 .. 100 ms, uniform
    for x in xs:
        h.add(x)
    for q, true in ((0.5, xs[499]), (0.9, xs[899]), (0.99, xs[989])):
        got = h.quantile_s(q)
        assert true <= got <= true * 2 ** 0.25 + 1e-12
    assert h.quantile_s(1.0) == pytest.approx(0.1) and h.max == pytest.approx(0.1)
    assert h.n == 1000 and h.total == pytest.approx(sum(xs))


def test_small_and_negative_samples_are_bucket_zero():
    h = Lateness()
    for x in (-1.0, 0.0, FLOOR_S / 2):
        h.add(x)
    assert h.counts == {0: 3} and h.quantile_s(0.99) <= FLOOR_S and h.max == FLOOR_S / 2
    assert Lateness().quantile_s(0.5) is None and Lateness().as_dict()["p99_ms"] is None


def test_buckets_are_four_per_octave():
    assert bucket_of(FLOOR_S) == 1 and bucket_of(2 * FLOOR_S) == 5
    for b in range(1, 60):
        edge = upper_edge_s(b)
        assert bucket_of(edge * 0.999) == b and bucket_of(edge * 1.001) == b + 1


def test_record_round_trip_and_merge():
    a, b = Lateness(), Lateness()
    for x in (1e-3, 2e-3, 3e-3):
        a.add(x)
    for x in (10e-3, 20e-3):
        b.add(x)
    rec = a.as_dict()
    assert rec["n"] == 3 and rec["max_ms"] == pytest.approx(3.0) and rec["mean_ms"] == pytest.approx(2.0)
    back = Lateness.from_dict(rec)
    assert back.counts == a.counts and back.n == 3 and back.max == pytest.approx(a.max)
    m = merged([a.as_dict(), b.as_dict(), None, {}])
    assert m.n == 5 and m.max == pytest.approx(0.02) and m.quantile_s(0.5) == upper_edge_s(bucket_of(3e-3))
