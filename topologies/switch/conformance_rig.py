"""The conformance rig: the vectors of p4/tests/ run over the wire
(topologies.switch.conformance.run_vector), against a switch process on veth
pairs, packets in and out through AF_PACKET sockets.

- Bmv2Target: simple_switch running build/bmv2/symphony.json (rebuilt with
  `make p4` when stale: topologies.switch.targets.build_bmv2_program),
  control through p4-utils' SimpleSwitchThriftAPI (topologies.switch.bmv2);
  a packet's queue condition is made real by queueing filler packets in
  front of it behind a held one (how, and why that way: Bmv2Target).  It
  needs root, simple_switch and p4-utils
  (topologies.switch.targets.bmv2_skip_reason says what is absent).
- TwinProcessTarget: the twin process (python3 -m topologies.switch.twin),
  the same wire path, control through TwinClient (root).

A rig registers with a state file before its first veth, so `make clean-net`
leaves a live rig alone and removes a dead one's veths and switch; close()
removes them, closes the switch's control client and stops the switch.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time

from topologies.network.intf import switch_port_commands
from topologies.network.names import check_ifname
from topologies.network.shell import sh, stop_child
from topologies.network.state import StateFile
from topologies.switch.bmv2 import Bmv2Client, free_tcp_port, is_ctrl_frame, simple_switch_command
from topologies.switch.conformance import SKIPPED, TargetTooSlow
from topologies.switch.targets import BMV2_JSON, REPO_ROOT, build_bmv2_program
from topologies.switch.twin import packets
from topologies.switch.twin.client import TwinClient
from topologies.switch.twin.sockets import PACKET_OUTGOING, open_port_socket

FILLER_NET = "198.18.0.{port}"       # benchmark range (RFC 2544), never a vector's address
FILLER_SRC = "198.18.0.254"
FAST_PPS = 1_000_000                 # "unlimited" on both targets: 1 us a packet
# fillers are not ECN-capable (never marked, never counted); above BMv2's
# control-frame size they share the data queue (p4/v1model/main.p4)
FILLER_BYTES = 200


class WireTarget:
    """A switch process on veth pairs sym<id>s<p> (switch side) / sym<id>t<p>
    (tester side): packets go in and come out through AF_PACKET sockets, as
    on a real wire.  Subclasses start the switch and set self.client, and
    say how they hold an egress queue at a given depth (hold_queue)."""

    def __init__(self, ports=(1, 2, 3, 4), wait_s: float = 0.25):
        self.ports = list(ports)
        self.wait_s = wait_s
        # registered before any veth exists: `make clean-net` leaves a live
        # rig alone and removes a dead one's veths and switch (state.py)
        self.state = StateFile.claim("conformance rig")
        self.id = self.state.id
        self.prefix = self.state.data["prefix"]
        self.proc = None
        self.client = None
        self.socks: dict[int, socket.socket] = {}
        self.received: list[tuple[int, bytes, float]] = []     # (port, frame, time.monotonic())
        self.ident = 0
        try:
            for p in self.ports:
                sw, tester = check_ifname(self.switch_if(p)), check_ifname(f"{self.prefix}t{p}")
                sh("ip", "link", "add", sw, "type", "veth", "peer", "name", tester)
                for dev in (sw, tester):
                    for args in switch_port_commands(dev):
                        sh(*args, check=False)
                    sh("ip", "link", "set", dev, "up")
                self.socks[p] = open_port_socket(tester)         # as the twin opens its ports
            self.start()
        except BaseException:
            self.close()
            raise

    def switch_if(self, port: int) -> str:
        return f"{self.prefix}s{port}"

    def start(self) -> None:
        raise NotImplementedError

    def slower(self) -> bool:
        """Hold queues longer after a TargetTooSlow; False when it cannot."""
        return False

    def reset(self) -> None:
        self.client.reset_state()
        for p in self.ports:
            # fillers to 198.18.0.<p> leave on port p; not ECT, untagged
            self.client.table_add("forward", "ipv4_forward", [f"{FILLER_NET.format(port=p)}/32"],
                                  ["02:00:00:00:ff:00", str(p)])

    # --- frames out of the switch -------------------------------------------------
    def _collect(self) -> None:
        now = time.monotonic()
        for p, s in self.socks.items():
            while True:
                try:
                    data, addr = s.recvfrom(65535)
                except BlockingIOError:
                    break
                if addr[2] != PACKET_OUTGOING:
                    self.received.append((p, data, now))

    def _wait_for(self, match, timeout: float):
        """The first frame out of the switch that match(port, frame) accepts,
        as (port, frame, time received); None after timeout.  Frames before
        it stay in self.received."""
        deadline = time.monotonic() + timeout
        while True:
            self._collect()
            for i, (p, data, t) in enumerate(self.received):
                if match(p, data):
                    del self.received[i]
                    return p, data, t
            if time.monotonic() > deadline:
                return None
            time.sleep(0.001)

    # --- fillers --------------------------------------------------------------------
    @staticmethod
    def _is_filler(frame: bytes) -> bool:
        return len(frame) >= 34 and frame[12:14] == b"\x08\x00" and frame[30:33] == bytes([198, 18, 0])

    def filler(self, out_port: int, frame_len: int = FILLER_BYTES) -> tuple[bytes, int]:
        """A filler frame that the switch sends out of out_port, and its IPv4
        identification (unique within a target)."""
        self.ident = (self.ident + 1) & 0xFFFF
        frame = packets.build(FILLER_SRC, FILLER_NET.format(port=out_port), sport=1, dport=9, ecn=0,
                              frame_len=frame_len, ident=self.ident)
        return frame, self.ident

    def _is_ident(self, ident: int):
        return lambda p, data: self._is_filler(data) and int.from_bytes(data[18:20], "big") == ident

    def hold_queue(self, port: int, frame: bytes, qdepth: int, egress: int) -> float:
        """Send `frame` in on `port` so that it finds `qdepth` packets in
        `egress`'s queue; returns how long its release may take."""
        raise NotImplementedError

    def send(self, port: int, frame: bytes, qdepth: int, expect: dict):
        if len(frame) < 14:
            return SKIPPED              # the kernel refuses frames shorter than an Ethernet header
        self._collect()
        self.received.clear()
        egress = expect.get("port")
        wait = self.wait_s
        if qdepth and egress:
            wait += self.hold_queue(port, frame, qdepth, egress)
        else:
            self.socks[port].send(frame)
        got = self._wait_for(lambda p, data: not self._is_filler(data), wait)
        return None if got is None else got[:2]

    def register_read(self, name: str, index: int) -> int:
        return int(self.client.register_read(name, index))

    def counter_packets(self, name: str, index: int) -> int:
        return int(self.client.counter_read(name, index).packets)

    def close(self) -> None:
        for s in self.socks.values():
            s.close()
        self.socks = {}
        if self.client is not None:
            with contextlib.suppress(OSError):
                self.client.close()     # its sockets (Bmv2Client: p4-utils' Thrift connections)
        stop_child(self.proc, 5)
        for p in self.ports:
            sh("ip", "link", "del", self.switch_if(p), check=False)
        self.state.remove()

    def spawn(self, args: list[str]) -> subprocess.Popen:
        """The switch process, recorded in the rig's state file as it starts."""
        return self.state.spawn(args, "conformance switch", stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, cwd=REPO_ROOT)


class Bmv2Target(WireTarget):
    """simple_switch running build/bmv2/symphony.json, Thrift control through
    p4-utils' SimpleSwitchThriftAPI (made strict by topologies.switch.bmv2).

    The queue depth a packet sees: simple_switch stamps enq_qdepth with the
    number of packets in the egress queue when ingress enqueues it
    (SimpleSwitch::enqueue), and its rate limiter (QueueingLogicPriRL) gives
    every packet its departure time when it is pushed: max(now, the previous
    packet's departure + 1/rate).  A rate change touches only packets pushed
    after it, so a queue held at 1 packet/s keeps what it holds for seconds.
    hold_queue therefore holds only the first filler, with a departure
    `hold_s` away, and lets the rest queue behind it at full rate:

    1. a plug filler at full rate leaves at once (its departure is now);
    2. rate 1/hold_s: filler 1 departs hold_s after the plug; a probe to
       another port, once it is out, proves filler 1 is queued (one ingress
       thread, in order);
    3. full rate again: fillers 2..q and the packet queue behind filler 1
       (departures filler 1's + k us), so the packet sees exactly q;
    4. a second probe after the packet proves it was enqueued; when it came
       out before the plug's send time + hold_s, no filler can have left yet,
       so the depth was exact, else TargetTooSlow (the vector runs again
       with a longer hold).
    All fillers and the packet leave hold_s after the plug."""

    def __init__(self, ports=(1, 2, 3, 4), wait_s: float = 0.3, hold_pps: int = 5):
        self.hold_pps = hold_pps
        super().__init__(ports, wait_s)

    @property
    def hold_s(self) -> float:
        return 1.0 / self.hold_pps

    def start(self) -> None:
        build_bmv2_program()
        self.thrift_port = free_tcp_port()
        # nanomsg notifications in the rig's socket directory, which clean-net removes after a crash
        self.ipc = str(self.state.make_sock_dir() / "notifications.ipc")
        ports = {p: self.switch_if(p) for p in self.ports}
        self.proc = self.spawn(simple_switch_command(self.thrift_port, ports, str(BMV2_JSON), self.ipc))
        self.client = Bmv2Client.connect(self.thrift_port, "conformance", str(BMV2_JSON), proc=self.proc)

    def slower(self) -> bool:
        if self.hold_pps <= 1:
            return False
        self.hold_pps = max(1, self.hold_pps // 2)
        return True

    def reset(self) -> None:
        super().reset()
        for p in self.ports:
            self.client.set_queue_rate(FAST_PPS, p)
            self.client.set_queue_depth(64, p)

    def _expect(self, ident: int, what: str, timeout: float = 2.0) -> float:
        got = self._wait_for(self._is_ident(ident), timeout)
        if got is None:
            raise RuntimeError(f"simple_switch: the {what} did not come out within {timeout:.0f} s")
        return got[2]

    @staticmethod
    def queue_of(frame: bytes) -> int:
        """The priority queue the program puts a frame in (p4/v1model/main.p4):
        1 for a control-size frame that is not ECN-capable, else 0."""
        return int(is_ctrl_frame(frame))

    def hold_queue(self, port: int, frame: bytes, qdepth: int, egress: int) -> float:
        tx = self.socks[port]
        other = next(p for p in self.ports if p != egress)
        # the fillers wait in the packet's own queue: enq_qdepth counts that one
        size = 64 if self.queue_of(frame) else FILLER_BYTES
        plug, plug_id = self.filler(egress, size)
        t0 = time.monotonic()
        tx.send(plug)
        self._expect(plug_id, "plug filler")
        self.client.set_queue_rate(self.hold_pps, egress)           # every queue of the port
        tx.send(self.filler(egress, size)[0])
        probe, probe_id = self.filler(other)
        tx.send(probe)
        self._expect(probe_id, "first probe")
        self.client.set_queue_rate(FAST_PPS, egress)
        for _ in range(qdepth - 1):
            tx.send(self.filler(egress, size)[0])
        tx.send(frame)
        probe, probe_id = self.filler(other)
        tx.send(probe)
        t_probe = self._expect(probe_id, "second probe")
        if t_probe >= t0 + self.hold_s:
            raise TargetTooSlow(f"queue hold of {self.hold_s:.2f} s too short: the packet was enqueued "
                                f"{t_probe - t0:.3f} s after the plug")
        return self.hold_s


class TwinProcessTarget(WireTarget):
    """The twin as a process (python3 -m topologies.switch.twin) on veths, driven
    through TwinClient: the same wire path the BMv2 target uses."""

    def start(self) -> None:
        sock = str(self.state.make_sock_dir() / "twin.sock")
        args = [sys.executable, "-m", "topologies.switch.twin", "--name", "conformance", "--control", sock]
        for p in self.ports:
            args += ["--port", f"{p}={self.switch_if(p)}"]
        self.proc = self.spawn(args)
        self.client = TwinClient.wait(sock, timeout=10, proc=self.proc)

    def hold_queue(self, port: int, frame: bytes, qdepth: int, egress: int) -> float:
        """The twin's set_queue_rate restarts its pacing clock, so a queue
        held at 1 packet/s lets go of everything when the rate goes up: the
        first of qdepth + 1 fillers leaves at once, the packet finds qdepth."""
        tx = self.socks[port]
        self.client.set_queue_rate(1, egress)
        for _ in range(qdepth + 1):
            tx.send(self.filler(egress)[0])
        time.sleep(0.02)
        tx.send(frame)
        time.sleep(0.02)
        self.client.set_queue_rate(FAST_PPS, egress)
        return 0.0
