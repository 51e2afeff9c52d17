import pytest


@pytest.fixture
def base() -> dict:
    """A small valid raw config (a fresh dict for every test to change)."""
    return {
        "name": "t",
        "topology": {"kind": "leafspine", "hosts": 4, "leaves": 2, "spines": 1, "host_rate_mbit": 20},
        "jobs": [{"ranks": 4, "message_bytes": 40000, "iterations": 2}],
    }
