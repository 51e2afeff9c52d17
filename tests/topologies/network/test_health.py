"""A hung switch told apart from a dead one (issue 18, item 8's point): a
stopped switch (SIGSTOP) is reported by TestbedNetwork.hung_switches at
once, one whose control socket leaves a ping unanswered after
UNRESPONSIVE_S; neither is dead.  The probe never blocks the caller."""

from __future__ import annotations

import os
import signal
import socket
import struct
import time

import pytest

from tests.harness.specs import make_net
from topologies.network.health import BMV2_PING, TWIN_PING, ControlProbe, stopped, thrift_call


class Clock:
    def __init__(self):
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def listener(tmp_path):
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    path = str(tmp_path / "ctl.sock")
    srv.bind(path)
    srv.listen(4)
    yield srv, path
    srv.close()


def test_a_switch_that_never_answers_is_waited_on_without_blocking(listener):
    _, path = listener                      # accepts (the kernel's backlog), never reads or answers
    clock = Clock()
    probe = ControlProbe(socket.AF_UNIX, path, TWIN_PING, interval_s=0.5, clock=clock)
    assert probe.waiting_s() == 0.0         # the first ping goes out
    for waited in (0.4, 1.0, 6.0):
        clock.t = 100.0 + waited
        t0 = time.monotonic()
        assert probe.waiting_s() == pytest.approx(waited)
        assert time.monotonic() - t0 < 0.01
    probe.close()


def test_an_answer_clears_the_wait_and_the_next_ping_waits_its_interval(listener):
    srv, path = listener
    clock = Clock()
    probe = ControlProbe(socket.AF_UNIX, path, TWIN_PING, interval_s=0.5, clock=clock)
    probe.waiting_s()
    conn, _ = srv.accept()
    assert conn.recv(4096) == TWIN_PING
    clock.t += 2.0
    assert probe.waiting_s() == pytest.approx(2.0)
    conn.sendall(b'{"id": 0, "result": "s1"}\n')
    time.sleep(0.05)
    assert probe.waiting_s() == 0.0         # answered; a new ping went out
    conn.close()
    nxt, _ = srv.accept()
    assert nxt.recv(4096) == TWIN_PING
    clock.t += 0.2
    assert probe.waiting_s() == pytest.approx(0.2)
    nxt.close()
    probe.close()


def test_nothing_listening_counts_as_unanswered(tmp_path):
    clock = Clock()
    probe = ControlProbe(socket.AF_UNIX, str(tmp_path / "none.sock"), TWIN_PING, interval_s=0.5, clock=clock)
    assert probe.waiting_s() == 0.0
    clock.t += 3.0
    assert probe.waiting_s() == pytest.approx(3.0)


def test_the_thrift_ping_is_a_multiplexed_binary_call():
    msg = thrift_call("standard", "bm_get_config_md5", seqid=7)
    version, n = struct.unpack("!Ii", msg[:8])
    assert version == 0x80010001 and msg[8:8 + n] == b"standard:bm_get_config_md5"
    assert struct.unpack("!i", msg[8 + n:12 + n]) == (7,) and msg[12 + n:] == b"\x00"
    assert BMV2_PING == thrift_call("standard", "bm_get_config_md5")


def test_stopped_reads_the_process_state():
    assert stopped(os.getpid()) is None and stopped(None) is None


TARGETS = [pytest.param("soft", marks=pytest.mark.root),
           pytest.param("bmv2", marks=[pytest.mark.root, pytest.mark.bmv2])]


@pytest.mark.parametrize("target", TARGETS)
def test_a_stopped_switch_is_hung_not_dead(tmp_path, target):
    net = make_net("dumbbell", 2, jobs=(2,), target=target, run_dir=tmp_path)
    with net:
        s1 = net.net.get("s1")
        t0 = time.monotonic()
        for _ in range(10):                 # both switches answer their pings
            assert net.hung_switches() == []
            time.sleep(0.05)
        assert (time.monotonic() - t0 - 0.5) / 10 < 0.02     # a call costs milliseconds
        assert answers(s1) and answers(net.net.get("s2"))
        os.kill(s1.switch_pid, signal.SIGSTOP)
        try:
            assert stopped(s1.switch_pid) or _wait_stopped(s1.switch_pid)
            hung = net.hung_switches()
            assert [name for name, _ in hung] == ["s1"] and "stopped" in hung[0][1], hung
            assert net.dead_switches() == []
            assert answers(s1) is False     # its control socket leaves pings unanswered too
        finally:
            os.kill(s1.switch_pid, signal.SIGCONT)
        deadline = time.monotonic() + 5
        while net.hung_switches() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert net.hung_switches() == [] and net.dead_switches() == []
        ping = net.cmd("h1", "ping", "-c", "1", "-W", "2", net.topo.host("h2").ip)
        assert ping.returncode == 0, ping.stdout + ping.stderr


def answers(switch) -> bool:
    """Whether the switch answers one ping on its control socket within 0.3 s."""
    clock = Clock()
    probe = switch.probe()
    probe.clock, probe.next_at, probe.interval_s = clock, clock.t, 60.0
    probe.waiting_s()                       # the ping goes out
    time.sleep(0.3)
    clock.t += 1.0
    waited = probe.waiting_s()              # 0.0 once answered (and no new ping due), else 1.0
    probe.close()
    return waited == 0.0


def _wait_stopped(pid: int) -> bool:
    deadline = time.monotonic() + 2
    while not stopped(pid) and time.monotonic() < deadline:
        time.sleep(0.01)
    return bool(stopped(pid))
