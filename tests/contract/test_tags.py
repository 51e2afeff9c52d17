from hypothesis import given
from hypothesis import strategies as st

from contract import tags


def test_tag_port_examples():
    assert tags.tag_port(0) == 0xC000
    assert tags.tag_port(0x3FFF) == 0xFFFF
    assert tags.tag_port(0x4000) == 0xC000
    assert tags.port_tag(0xC005) == 5
    assert tags.port_tag(4791) is None


@given(st.integers(min_value=0, max_value=2**32))
def test_tag_round_trip(step):
    assert tags.port_tag(tags.tag_port(step)) == step & tags.TAG_MASK


@given(st.integers(0, 2**14 - 1), st.integers(1, 2**13 - 1))
def test_serial_after_across_wrap(a, d):
    b = (a + d) % 2**14
    assert tags.serial_after(b, a, 14)
    assert not tags.serial_after(a, b, 14)
    assert tags.serial_diff(b, a, 14) == d


def test_tag_width_mask_and_half_per_mode():
    assert (tags.tag_bits(False), tags.tag_mask(False), tags.tag_half(False)) == (14, 0x3FFF, 0x2000)
    assert (tags.tag_bits(True), tags.tag_mask(True), tags.tag_half(True)) == (6, 0x3F, 0x20)
    assert tags.tag_mask(False) == tags.TAG_MASK and tags.tag_mask(True) == tags.DSCP_TAG_MASK


def test_steps_per_iteration_and_global_step():
    assert [tags.steps_per_iteration(n) for n in (2, 3, 8)] == [2, 4, 14]
    assert tags.ring_step(0, 0, 4) == 0
    assert tags.ring_step(2, 5, 4) == 2 * 6 + 5
