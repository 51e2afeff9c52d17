"""Fixtures several test folders use (registered by tests/conftest.py)."""

import pytest

from topologies.network.lab import Lab


@pytest.fixture
def lab_factory():
    """Make namespace labs; every one is removed at the end of the test,
    whether it passed or failed."""
    labs = []

    def make(n_hosts, rate_mbit=None):
        lab = Lab(n_hosts, rate_mbit)
        labs.append(lab)
        return lab

    yield make
    for lab in labs:
        lab.close()
