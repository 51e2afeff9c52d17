"""Pure ring AllReduce logic, no sockets."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contract.tags import steps_per_iteration
from hosts import ring
from tests.harness.ring_model import simulate


def test_chunk_bounds_cover_and_balance():
    b = ring.chunk_bounds(10, 4)
    assert b == [(0, 3), (3, 6), (6, 8), (8, 10)]
    for n_elems, n in [(7, 3), (100, 8), (8, 8), (1001, 7)]:
        b = ring.chunk_bounds(n_elems, n)
        assert b[0][0] == 0 and b[-1][1] == n_elems
        assert all(b[i][1] == b[i + 1][0] for i in range(n - 1))
        sizes = [e - s for s, e in b]
        assert max(sizes) - min(sizes) <= 1


def test_plan_follows_design():
    n = 4
    for r in range(n):
        for k in range(steps_per_iteration(n)):
            p = ring.plan(r, n, k)
            assert p.send_chunk == (r - k) % n
            assert p.recv_chunk == (r - k - 1) % n
            assert p.phase == ("rs" if k < n - 1 else "ag")
            # what r receives is what its predecessor sends at the same step
            assert ring.plan((r - 1) % n, n, k).send_chunk == p.recv_chunk
    with pytest.raises(ValueError):
        ring.plan(0, 4, 6)


def test_send_at_next_step_is_what_arrived():
    # rank r sends at step k+1 the chunk it received (and folded) at step k
    n = 5
    for r in range(n):
        for k in range(steps_per_iteration(n) - 1):
            assert ring.plan(r, n, k + 1).send_chunk == ring.plan(r, n, k).recv_chunk


def _bits(a):
    return np.asarray(a, dtype=ring.DTYPE).view(np.uint32)


@pytest.mark.parametrize("n", [2, 3, 4, 8])
@pytest.mark.parametrize("n_elems", [1001, 4099, 12347])
def test_simulated_ring_is_bit_exact(n, n_elems):
    assert n_elems % n  # sizes N does not divide
    for it in range(3):
        inputs = [ring.make_input(9, it, r, n_elems) for r in range(n)]
        ref = ring.ring_order_sum(inputs)
        outs = simulate(inputs)
        for out in outs:
            assert np.array_equal(_bits(out), _bits(ref))
        # and it is the sum: close to a float64 sum (float32 rounding only)
        exact64 = np.sum(np.array(inputs, dtype=np.float64), axis=0)
        assert np.allclose(ref, exact64, rtol=1e-5, atol=1e-5 * n)


def test_order_matters_so_the_check_can_fail():
    # a plain numpy sum uses another order: for some elements it differs in the
    # last bit, which is why the reference must follow the ring
    n, n_elems = 8, 4099
    inputs = [ring.make_input(1, 0, r, n_elems) for r in range(n)]
    naive = inputs[0].copy()
    for x in inputs[1:]:
        naive = naive + x
    assert not np.array_equal(_bits(naive), _bits(ring.ring_order_sum(inputs)))


def test_wrong_received_data_is_detected():
    n, n_elems = 3, 301
    inputs = [ring.make_input(2, 0, r, n_elems) for r in range(n)]
    ranks = [ring.RingRank(r, n, x) for r, x in enumerate(inputs)]
    for k in range(steps_per_iteration(n)):
        sent = [bytearray(rk.send_bytes(k)) for rk in ranks]
        if k == 1:
            sent[0][0] ^= 1          # one flipped bit on one link
        for r, rk in enumerate(ranks):
            rk.apply(k, sent[(r - 1) % n])
    ref = ring.ring_order_sum(inputs)
    assert not all(np.array_equal(_bits(rk.buf), _bits(ref)) for rk in ranks)


def test_apply_rejects_wrong_size():
    rk = ring.RingRank(0, 2, np.zeros(5, dtype=np.float32))
    with pytest.raises(ValueError):
        rk.apply(0, b"\0" * 4)


@settings(max_examples=30, deadline=None)
@given(st.integers(2, 9), st.integers(0, 300), st.integers(0, 2**31))
def test_ring_matches_reference_property(n, extra, seed):
    n_elems = n + extra
    inputs = [ring.make_input(seed, 0, r, n_elems) for r in range(n)]
    ref = ring.ring_order_sum(inputs)
    for out in simulate(inputs):
        assert np.array_equal(_bits(out), _bits(ref))


def test_bandwidth_bound():
    # 4 ranks, 1 MB, 8 Mbit/s: 2*3/4 * 1e6*8/8e6 = 1.5 s
    assert ring.bandwidth_bound_s(1_000_000, 4, 8e6) == pytest.approx(1.5)
