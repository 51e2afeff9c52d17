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


# --- BMv2 gate (issue 8): one shared rule for every test that needs simple_switch/p4c.
# Use `@needs_bmv2` (or `pytestmark = needs_bmv2`) or the `@pytest.mark.bmv2` marker:
# both skip with the same reason where the toolchain is missing, and both are selected
# by `pytest -m bmv2`.  In the VM (`vagrant up`, docs/vm.md) they run.
from topologies.targets import bmv2_available, bmv2_skip_reason  # noqa: E402

BMV2_REASON = bmv2_skip_reason() or "BMv2 toolchain installed"
needs_bmv2 = pytest.mark.skipif(not bmv2_available(), reason=BMV2_REASON)


@pytest.hookimpl(tryfirst=True)  # before -m selection, so needs_bmv2 tests count as bmv2
def pytest_collection_modifyitems(config, items):
    for item in items:
        gated = any(m.kwargs.get("reason") == BMV2_REASON for m in item.iter_markers("skipif"))
        if gated and item.get_closest_marker("bmv2") is None:
            item.add_marker(pytest.mark.bmv2)
        elif item.get_closest_marker("bmv2") is not None and not gated:
            # first in line, so where the toolchain is missing the report names the VM;
            # a test's own skipif still applies where BMv2 is installed
            item.add_marker(needs_bmv2, append=False)
