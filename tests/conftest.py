import os

import pytest

from topologies.nslab import Lab

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root for network namespaces")


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
