"""What a config asks of this machine: the memory of a run's agents, all
at once, against what the machine has available."""

import pytest

from contract import p4names
from experiments import config as C
from experiments.bench.cluster import cluster
from experiments.config import schema as S
from experiments.config.machine import (
    agents_memory_bytes,
    available_memory_bytes,
    check_memory,
    emulation_refusal,
)
from hosts.job import AGENT_BASE_BYTES


def test_the_need_is_every_agent_of_every_job(base):
    base["jobs"][0].update(ranks=2, message_bytes=10**8)
    base["jobs"].append({"ranks": 2, "message_bytes": 2 * 10**8, "iterations": 1})
    spec = C.resolve(base)
    # (N + 2 + 2/N) x S per agent at N = 2: 5 S; job 1's second iteration holds 5 S more
    assert agents_memory_bytes(spec) == 4 * AGENT_BASE_BYTES + 2 * 10 * 10**8 + 2 * 5 * 2 * 10**8


def test_more_than_the_machine_has_is_refused_naming_the_job(base):
    base["jobs"][0].update(message_bytes=4 * 10**8)
    spec = C.resolve(base)
    need = agents_memory_bytes(spec)
    check_memory(spec, available=need)
    with pytest.raises(C.ConfigError) as err:
        check_memory(spec, available=need - 1)
    assert str(err.value) == (
        f"jobs[0].message_bytes: the run's agents would need {need / 1e9:.2f} GB of memory at once (4 agents of "
        f"{need / 4e9:.2f} GB in job 1: an agent holds every rank's input to check the result, about "
        f"(N + 2 + 2/N) x message_bytes), and this machine has {(need - 1) / 1e9:.2f} GB available")


def test_available_memory_is_read_from_the_kernel(tmp_path):
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:       24684092 kB\nMemFree:        23758532 kB\nMemAvailable:   24213660 kB\n")
    assert available_memory_bytes(meminfo) == 24213660 * 1024
    assert available_memory_bytes(tmp_path / "absent") > 0       # the physical memory instead



def test_the_simulation_takes_a_cluster_the_emulation_refuses():
    spec = C.resolve(cluster(1024))
    assert spec.topology.hosts == 1024 and spec.topology.leaves == 32
    assert emulation_refusal(spec) == ("topology.hosts: at most 250 for the emulation (a network namespace "
                                       "each), got 1024; --target sim can")
    raw = cluster(128)
    raw["topology"]["leaves"] = 32
    assert emulation_refusal(C.resolve(raw)).startswith("topology.leaves: at most 16 for the emulation")
    assert emulation_refusal(C.resolve(cluster(64))) is None


def test_every_host_has_its_own_route_in_the_forward_table():
    # the control plane installs a /32 per host on every switch
    assert S.MAX_HOSTS <= p4names.FORWARD_SIZE
    raw = cluster(64)
    raw["topology"]["hosts"] = S.MAX_HOSTS + 1
    with pytest.raises(C.ConfigError, match="topology.hosts"):
        C.resolve(raw)
