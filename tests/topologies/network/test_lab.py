"""The namespace lab: hosts reach each other, close() leaves nothing, and
clean-net leaves a live lab alone."""

import pytest

from topologies.network import cleanup
from topologies.network.shell import list_links, list_netns

pytestmark = pytest.mark.root


def test_hosts_reach_each_other_and_nothing_is_left(lab_factory):
    lab = lab_factory(3)
    r = lab.exec(0, "ping", "-c", "1", "-W", "2", lab.hosts[2].ip, check=False)
    assert r.returncode == 0, r.stdout + r.stderr
    names = [h.netns for h in lab.hosts] + [lab.bridge]
    lab.close()
    assert not set(names) & (set(list_netns()) | set(list_links()))


def test_cleanup_after_a_failing_body(lab_factory):
    made = []
    try:
        lab = lab_factory(2)
        made = [h.netns for h in lab.hosts]
        raise RuntimeError("a test failing half-way")
    except RuntimeError:
        lab.close()
    assert not set(made) & set(list_netns())


def test_clean_net_leaves_a_live_lab_alone(lab_factory):
    lab = lab_factory(2)
    assert cleanup.main([]) == 0
    assert {h.netns for h in lab.hosts} <= set(list_netns())
    r = lab.exec(0, "ping", "-c", "1", "-W", "2", lab.hosts[1].ip, check=False)
    assert r.returncode == 0
