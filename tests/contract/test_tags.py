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
