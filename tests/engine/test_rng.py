"""The compiled generator (engine/src/rng.hpp) draws what CPython's
random.Random draws, for int seeds and for the str seeds the delay lines
use (their init key computed by experiments.sim.compiled_switch.init_key)."""

from __future__ import annotations

import random

import pytest

import symphony_engine as E
from experiments.sim.compiled_switch import init_key

INT_SEEDS = [0, 1, 42, 2**32 - 1, 2**32 + 5, 2**64 + 3, 3**80, -7]
STR_SEEDS = ["", "0", "0:s1:2:egress", "17:leaf-3:12:ingress", "ünïcode ✓"]


@pytest.mark.parametrize("seed", INT_SEEDS + STR_SEEDS, ids=repr)
def test_first_thousand_draws_equal_pythons(seed):
    py, cc = random.Random(seed), E.Rng(init_key(seed))
    assert [cc.genrand_uint32() for _ in range(1000)] == [py.getrandbits(32) for _ in range(1000)]


@pytest.mark.parametrize("seed", [0, 7, "3:s2:1:egress"], ids=repr)
def test_getrandbits_of_mixed_widths_equal_pythons(seed):
    """getrandbits(k) keeps the top k bits of one draw: the pipeline's
    16-bit draws and the delay lines' 32-bit ones interleave in one stream."""
    py, cc = random.Random(seed), E.Rng(init_key(seed))
    widths = [16, 16, 32, 1, 31, 8, 0] * 200
    assert [cc.getrandbits(k) for k in widths] == [py.getrandbits(k) for k in widths]


def test_init_key_is_cpythons():
    assert init_key(0) == [0]
    assert init_key(2**32) == [0, 1]
    assert init_key(-5) == [5]
    # a different key gives a different stream (the key reaches the generator)
    assert E.Rng([1]).genrand_uint32() != E.Rng([0]).genrand_uint32()
