"""Removal by name prefix: what runs in a namespace is killed, then the
namespace and the prefixed interfaces go; names under a kept prefix stay."""

import subprocess
import time

import pytest

from topologies.network.names import PREFIX
from topologies.network.shell import list_links, list_netns, remove_by_prefix, sh
from topologies.network.state import StateFile

pytestmark = pytest.mark.root


def test_remove_by_prefix_kills_deletes_and_keeps():
    state = StateFile.claim("shell test")      # as every lab: clean-net leaves these names alone
    lab = state.id
    gone_ns, kept_ns = f"{PREFIX}-{lab}-a", f"{PREFIX}-{lab}-keep"
    veth = f"{PREFIX}{lab}v"
    try:
        for ns in (gone_ns, kept_ns):
            sh("ip", "netns", "add", ns)
        sh("ip", "link", "add", veth, "type", "veth", "peer", "name", veth + "p")
        sleeper = subprocess.Popen(["ip", "netns", "exec", gone_ns, "sleep", "1000"])
        time.sleep(0.2)
        removed = remove_by_prefix(f"{PREFIX}-{lab}-", f"{PREFIX}{lab}", keep=[kept_ns])
        assert sleeper.wait(timeout=5) != 0               # killed, not finished
        assert gone_ns in removed and kept_ns not in removed and veth in removed
        assert gone_ns not in list_netns() and kept_ns in list_netns()
        assert not [x for x in list_links() if x.startswith(f"{PREFIX}{lab}")]
    finally:
        remove_by_prefix(f"{PREFIX}-{lab}-", f"{PREFIX}{lab}")
        state.remove()
    assert not [ns for ns in list_netns() if ns.startswith(f"{PREFIX}-{lab}-")]
