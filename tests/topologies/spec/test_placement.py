"""Placement: ring order across switches, sharing when short, what cannot be placed."""

import pytest

from tests.harness.specs import place, topo
from topologies.spec.placement import JobRequest, PlacedJob, place_jobs
from topologies.spec.routes import route
from topologies.spec.topo import TopoError


def leafspine(hosts=8, leaves=2, spines=2):
    return topo("leafspine", hosts, 20, leaves=leaves, spines=spines)


def test_interleaved_placement_makes_every_ring_flow_cross_the_fabric():
    t = leafspine(hosts=8, leaves=2, spines=2)
    job, = place(t, 4)
    assert job == PlacedJob(1, 5000, "udp", ("h1", "h5", "h2", "h6"))
    assert [t.host(h).ip for h in job.hosts] == ["10.0.0.1", "10.0.0.5", "10.0.0.2", "10.0.0.6"]
    for src, dst, port in job.ring_flows():
        assert len(route(t, src, dst)) == 3 and port == 5000
    assert job.ring_flows()[-1] == ("h6", "h1", 5000)


def test_packed_placement_and_explicit_hosts():
    t = leafspine(hosts=8, leaves=2, spines=2)
    packed, given = place_jobs(t, [JobRequest(1, 4, 5000, placement="packed"),
                                   JobRequest(2, 3, 5010, "tcp", hosts=("h8", "h1", "h4"))])
    assert packed.hosts == ("h1", "h2", "h3", "h4")
    assert given == PlacedJob(2, 5010, "tcp", ("h8", "h1", "h4"))


def test_two_jobs_get_distinct_hosts_and_share_when_short():
    t = leafspine(hosts=4, leaves=2, spines=1)
    a, b = place(t, 2, 4)
    assert set(a.hosts) == {"h1", "h3"}
    assert len(set(b.hosts)) == 4      # shares h1, h3 with job 1
    assert (a.data_port, b.data_port) == (5000, 5010)
    assert (a.job, b.job) == (1, 2)


@pytest.mark.parametrize("jobs, key", [
    ([JobRequest(1, 1, 5000)], r"jobs\[0\]\.ranks"),
    ([JobRequest(1, 9, 5000)], r"jobs\[0\]\.ranks"),
    ([JobRequest(1, 2, 5000, hosts=("h1", "h99"))], r"jobs\[0\]\.hosts"),
    ([JobRequest(1, 2, 5000, hosts=("h1", "h1"))], r"jobs\[0\]\.hosts"),
    ([JobRequest(1, 3, 5000, hosts=("h1", "h2"))], r"jobs\[0\]\.ranks"),
    ([JobRequest(1, 2, 5000, placement="spread")], r"jobs\[0\]\.placement"),
    ([JobRequest(1, 2, 5000), JobRequest(2, 2, 5001)], r"jobs\[1\]\.data_port"),
    ([JobRequest(3, 2, 5000), JobRequest(3, 2, 5010)], r"jobs\[1\]\.job"),
])
def test_what_cannot_be_placed_names_the_key(jobs, key):
    with pytest.raises(TopoError, match=key):
        place_jobs(leafspine(), jobs)
