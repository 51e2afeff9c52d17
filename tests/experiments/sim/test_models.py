"""What the simulation models rather than runs, held against what the
emulation runs: a host's NIC (tc htb at the link's rate in the emulation; a
queue at that rate in the simulation, experiments/sim/host.py) and the
cross traffic (the blaster process; the simulation sends its datagrams at
their own times by the blaster's own rule, packets_due)."""

from __future__ import annotations

import json
import socket
import sys
from statistics import median

import pytest

from experiments.jitter.blaster import IP_UDP_HEADERS, blast, packets_before
from experiments.sim.engine import Engine
from experiments.sim.frames import HEADERS, Framer
from experiments.sim.host import SimHost
from experiments.sim.network import SimCross
from tests.harness import REPO

RATE_MBIT = 10
PAYLOAD = 1400                      # a 1442-byte frame: 1.154 ms at 10 Mbit/s
N = 120
RECEIVER = r"""
import json, socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((sys.argv[1], 7000)); s.settimeout(5)
print("ready", flush=True)
times = []
try:
    while len(times) < int(sys.argv[2]):
        s.recv(65536); times.append(time.monotonic_ns())
except socket.timeout:
    pass
print(json.dumps(times), flush=True)
"""
SENDER = r"""
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 22)
for _ in range(int(sys.argv[2])):
    s.sendto(bytes(int(sys.argv[3])), (sys.argv[1], 7000))
"""


def modelled_spacing_s() -> float:
    """A burst through the simulation's NIC: the gap between two arrivals."""
    engine = Engine()
    host = SimHost(engine, "h1", Framer("00:00:00:00:00:01", "10.0.0.1", {"10.0.0.2": "00:00:00:00:00:02"}),
                   RATE_MBIT * 1e6)
    arrivals = []
    host.connect(lambda port, frame: arrivals.append(engine.now), 1)
    for _ in range(N):
        host.send(host.framer.udp(bytes([10, 0, 0, 2]), 9, 7000, 0, bytes(PAYLOAD)))
    engine.run()
    assert len(arrivals) == N
    return median(b - a for a, b in zip(arrivals, arrivals[1:], strict=False))


@pytest.mark.root
def test_the_nics_model_paces_a_burst_as_tc_htb_does(lab_factory):
    lab = lab_factory(2, RATE_MBIT)
    rx = lab.popen(1, [sys.executable, "-c", RECEIVER, lab.hosts[1].ip, str(N)], stdout=-1, text=True, cwd=REPO)
    assert rx.stdout.readline().strip() == "ready"
    lab.exec(0, sys.executable, "-c", SENDER, lab.hosts[1].ip, str(N), str(PAYLOAD))
    times = json.loads(rx.stdout.readline())
    rx.wait(10)
    assert len(times) == N, f"{len(times)} of {N} datagrams arrived"
    measured = median((b - a) / 1e9 for a, b in zip(times, times[1:], strict=False))
    modelled = modelled_spacing_s()
    assert modelled == pytest.approx((PAYLOAD + HEADERS) * 8 / (RATE_MBIT * 1e6))
    # htb counts the frame as the model does (Ethernet header on, no FCS)
    assert measured == pytest.approx(modelled, rel=0.05), (measured, modelled)


def test_the_blasters_rule_is_the_simulations():
    """The blaster, on loopback in real time, sends what packets_due owes by
    each of its ticks and, however late its last tick, what was owed before
    the end; the simulation sends each datagram at its own time: over a
    window both send the same number."""
    rate, size, duration = 8.0, 1000, 0.4
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sink:
        sink.bind(("127.0.0.1", 0))
        sent = blast("127.0.0.1", rate, duration, size, False, port=sink.getsockname()[1])
    interval = size * 8 / (rate * 1e6)
    assert sent == packets_before(duration, interval) == 400
    engine = Engine()

    class Net:
        pass
    net = Net()
    net.engine = engine
    host = SimHost(engine, "h1", Framer("00:00:00:00:00:01", "10.0.0.1", {"10.0.0.2": "00:00:00:00:00:02"}),
                   None, depth=10**6)
    frames = []
    host.connect(lambda port, frame: frames.append(len(frame)), 1)
    net.hosts = {"h1": host}
    cross = SimCross(net)
    cross.start({"id": 0, "src": "h1", "start_s": 0.0, "end_s": duration,
                 "params": {"dst_ip": "10.0.0.2", "rate_mbit": rate, "packet_bytes": size, "ect": False}})
    engine.run()
    assert len(frames) == sent
    assert frames[0] == size - IP_UDP_HEADERS + HEADERS
