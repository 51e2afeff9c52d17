"""What every test module shares: one way to gate tests on the machine.

- ``@pytest.mark.root``: needs root (network namespaces, Mininet, raw sockets);
  skipped with the reason where the suite does not run as root.
- ``@pytest.mark.bmv2``: needs the BMv2 toolchain (simple_switch, p4c,
  p4-utils); skipped with what is missing and where it comes from (the VM).
  Where the toolchain is installed, these tests run and must pass, on the
  program compiled from today's source: the session builds it (`make p4`)
  when it is missing or stale, once, before the first test.
- ``SYMPHONY_ABSENT=bmv2,tofino,netem`` (or ``all``) makes those tools look
  missing, so a machine that has them runs the suite as one without them
  would (contract/absent.py).

Helpers shared by several test modules live in tests/harness/.
"""

import os

import pytest

from contract.absent import absent_parts
from topologies.switch.targets import bmv2_skip_reason, build_bmv2_program

ROOT_REASON = "needs root (network namespaces, Mininet, raw sockets): run the suite with sudo"
BMV2_REASON = bmv2_skip_reason()       # empty where the toolchain is installed


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.get_closest_marker("root") and os.geteuid() != 0:
            item.add_marker(pytest.mark.skip(reason=ROOT_REASON))
        if item.get_closest_marker("bmv2") and BMV2_REASON:
            item.add_marker(pytest.mark.skip(reason=BMV2_REASON))


def pytest_sessionstart(session):
    try:
        absent_parts()      # a misspelt SYMPHONY_ABSENT would hide nothing, silently
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None
    if not BMV2_REASON:
        build_bmv2_program()

pytest_plugins = ["tests.harness.fixtures"]
