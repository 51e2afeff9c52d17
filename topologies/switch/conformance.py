"""Run the conformance vectors of p4/tests/ against a target.

One runner, three targets:
- TwinTarget: the twin's pure pipeline (always available);
- TwinProcessTarget: the twin process on veths, same wire path as BMv2 (root);
- Bmv2Target: simple_switch running build/bmv2/symphony.json, packets sent
  and received on veth pairs through AF_PACKET sockets, control through
  p4-utils' SimpleSwitchThriftAPI; a packet's queue condition is made real by
  slowing the egress port (set_queue_rate) and queueing filler packets in
  front of it.  It needs root, simple_switch, the compiled program and
  p4-utils: ``bmv2_missing()`` says what is absent.

The vector format is described in p4/tests/README.md.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from contract.tags import tag_dscp, tag_port
from topologies.network.intf import switch_port_commands
from topologies.network.names import PREFIX, check_ifname, new_lab_id
from topologies.network.shell import sh as _sh
from topologies.switch import program as symphony_state
from topologies.switch.targets import BMV2_JSON, REPO_ROOT
from topologies.switch.twin import packets
from topologies.switch.twin.client import TwinClient
from topologies.switch.twin.pipeline import Pipeline
from topologies.switch.twin.switch import ETH_P_ALL, PACKET_OUTGOING

VECTOR_DIR = REPO_ROOT / "p4" / "tests"

HELPERS = {
    "add_flow": symphony_state.add_flow,
    "install_job": symphony_state.install_job,
    "install_queue_ecn": symphony_state.install_queue_ecn,
    "install_sym_ecn": symphony_state.install_sym_ecn,
}
CLIENT_METHODS = {"table_add", "table_set_default", "table_clear", "register_write", "register_reset"}
PACKET_FIELDS = {"src", "dst", "proto", "sport", "dport", "ecn", "dscp", "ttl", "frame_len", "payload_len",
                 "eth_src", "eth_dst", "vihl", "ethertype", "frag_offset"}


class VectorError(ValueError):
    """A vector file that does not follow p4/tests/README.md."""


@dataclass
class Vector:
    file: str
    name: str
    why: str
    setup: list
    flows: dict
    steps: list
    registers: dict = field(default_factory=dict)
    counters: dict = field(default_factory=dict)

    @property
    def id(self) -> str:
        return f"{Path(self.file).stem}:{self.name}"


def load_vectors(directory: Path = VECTOR_DIR) -> list[Vector]:
    out = []
    for path in sorted(Path(directory).glob("*.json")):
        try:
            data = json.loads(path.read_text())
        except json.JSONDecodeError as e:
            raise VectorError(f"{path.name}: not JSON ({e})") from None
        for v in data.get("vectors", []):
            for key in ("name", "steps"):
                if key not in v:
                    raise VectorError(f"{path.name}: a vector lacks {key!r}")
            out.append(Vector(path.name, v["name"], v.get("why", ""), data.get("setup", []) + v.get("setup", []),
                              data.get("flows", {}), v["steps"], v.get("registers", {}), v.get("counters", {})))
    return out


def apply_call(client, call: list) -> None:
    method, *args = call
    if method in HELPERS:
        HELPERS[method](client, *args)
    elif method in CLIENT_METHODS:
        getattr(client, method)(*args)
    else:
        raise VectorError(f"unknown call {method!r}")


def step_frame(step: dict, flows: dict) -> tuple[int, bytes]:
    """(ingress port, frame) of a packet step."""
    if "hex" in step:
        return int(step.get("port", 1)), bytes.fromhex(step["hex"])
    base = dict(flows[step["flow"]]) if "flow" in step else {}
    base.update({k: v for k, v in step.items() if k in PACKET_FIELDS or k == "port"})
    port = int(base.pop("port", 1))
    base.pop("port", None)
    if "step" in step:
        # the step tag where the flow's transport carries it (contract.tags)
        if base.get("proto", "udp") == "tcp":
            base["dscp"] = tag_dscp(int(step["step"]))
        else:
            base["sport"] = tag_port(int(step["step"]))
    kwargs = {k: v for k, v in base.items() if k in PACKET_FIELDS}
    kwargs.setdefault("frame_len", 100)
    frame = packets.build(**kwargs)
    if "truncate" in step:
        frame = frame[: int(step["truncate"])]
    return port, frame


def check_output(expect: dict, out: tuple[int, bytes] | None) -> list[str]:
    if expect.get("drop"):
        return [] if out is None else [f"expected a drop, got a packet on port {out[0]}"]
    if out is None:
        return ["expected a packet, it was dropped"]
    port, frame = out
    got = packets.fields(frame)
    got["port"] = port
    return [f"{k}: expected {v!r}, got {got.get(k)!r}" for k, v in expect.items() if got.get(k) != v]


def check_state(target, registers: dict, counters: dict) -> list[str]:
    errors = []
    for name, cells in registers.items():
        for index, value in cells.items():
            got = target.register_read(name, int(index))
            if got != value:
                errors.append(f"register {name}[{index}]: expected {value}, got {got}")
    for name, cells in counters.items():
        for index, value in cells.items():
            got = target.counter_packets(name, int(index))
            if got != value:
                errors.append(f"counter {name}[{index}]: expected {value} packets, got {got}")
    return errors


def run_vector(vector: Vector, target) -> list[str]:
    """Failures of one vector on a target (empty: it passed)."""
    target.reset()
    for call in vector.setup:
        apply_call(target.client, call)
    errors = []
    for i, step in enumerate(vector.steps):
        where = f"step {i}"
        if "call" in step:
            apply_call(target.client, step["call"])
        elif "registers" in step:
            errors += [f"{where}: {e}" for e in check_state(target, step["registers"], {})]
        else:
            port, frame = step_frame(step, vector.flows)
            out = target.send(port, frame, int(step.get("qdepth", 0)), step.get("expect", {}))
            if out is SKIPPED:
                continue
            errors += [f"{where}: {e}" for e in check_output(step.get("expect", {}), out)]
    errors += [f"end: {e}" for e in check_state(target, vector.registers, vector.counters)]
    return errors


SKIPPED = object()   # a step the target cannot express (e.g. a frame too short for a wire)


class TwinTarget:
    """The twin's pure pipeline; the queue condition is given directly."""

    def __init__(self, seed: int = 0):
        self.seed = seed
        self.client = Pipeline(seed)

    def reset(self) -> None:
        self.client = Pipeline(self.seed)

    def send(self, port: int, frame: bytes, qdepth: int, expect: dict):
        out_port, out, _ = self.client.process(port, frame, qdepth)
        return None if out is None else (out_port, out)

    def register_read(self, name: str, index: int) -> int:
        return self.client.register_read(name, index)

    def counter_packets(self, name: str, index: int) -> int:
        return self.client.counter_read(name, index).packets


# --- BMv2 -------------------------------------------------------------------

FILLER_NET = "198.18.0.{port}"       # benchmark range (RFC 2544), never a vector's address


class WireTarget:
    """A switch process on veth pairs sym<id>s<p> (switch side) / sym<id>t<p>
    (tester side): packets go in and come out through AF_PACKET sockets, as
    on a real wire.  Subclasses start the switch and set self.client."""

    def __init__(self, ports=(1, 2, 3, 4), wait_s: float = 0.25):
        self.ports = list(ports)
        self.wait_s = wait_s
        self.id = new_lab_id()
        self.prefix = f"{PREFIX}{self.id}"
        self.proc = None
        self.client = None
        self.socks: dict[int, socket.socket] = {}
        try:
            for p in self.ports:
                sw, tester = check_ifname(self.switch_if(p)), check_ifname(f"{self.prefix}t{p}")
                _sh("ip", "link", "add", sw, "type", "veth", "peer", "name", tester)
                for dev in (sw, tester):
                    for args in switch_port_commands(dev):
                        _sh(*args, check=False)
                    _sh("ip", "link", "set", dev, "up")
                s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
                s.bind((tester, ETH_P_ALL))
                s.setblocking(False)
                self.socks[p] = s
            self.start()
        except BaseException:
            self.close()
            raise

    def switch_if(self, port: int) -> str:
        return f"{self.prefix}s{port}"

    def start(self) -> None:
        raise NotImplementedError

    def reset(self) -> None:
        self.client.reset_state()
        for p in self.ports:
            # fillers to 198.18.0.<p> leave on port p; not ECT, untagged
            self.client.table_add("forward", "ipv4_forward", [f"{FILLER_NET.format(port=p)}/32"],
                                  ["02:00:00:00:ff:00", str(p)])

    def _drain(self) -> list[tuple[int, bytes]]:
        out = []
        for p, s in self.socks.items():
            while True:
                try:
                    data, addr = s.recvfrom(65535)
                except BlockingIOError:
                    break
                if addr[2] != PACKET_OUTGOING:
                    out.append((p, data))
        return out

    @staticmethod
    def _is_filler(frame: bytes) -> bool:
        return len(frame) >= 34 and frame[12:14] == b"\x08\x00" and frame[30:33] == bytes([198, 18, 0])

    def send(self, port: int, frame: bytes, qdepth: int, expect: dict):
        if len(frame) < 14:
            return SKIPPED              # the kernel refuses frames shorter than an Ethernet header
        self._drain()
        egress = expect.get("port")
        held = bool(qdepth and egress)
        if held:
            # hold the egress queue (1 packet/s: the first filler leaves at
            # once) and put qdepth fillers in front of the packet
            self.client.set_queue_rate(1, egress)
            filler = packets.build("198.18.0.254", FILLER_NET.format(port=egress), sport=1, dport=9,
                                   ecn=0, frame_len=64)
            for _ in range(qdepth + 1):
                self.socks[port].send(filler)
            time.sleep(0.02)
        self.socks[port].send(frame)
        if held:
            time.sleep(0.02)
            self.client.set_queue_rate(1_000_000, egress)
        deadline = time.monotonic() + self.wait_s
        while time.monotonic() < deadline:
            for p, data in self._drain():
                if not self._is_filler(data):
                    return p, data
            time.sleep(0.002)
        return None

    def register_read(self, name: str, index: int) -> int:
        return int(self.client.register_read(name, index))

    def counter_packets(self, name: str, index: int) -> int:
        return int(self.client.counter_read(name, index).packets)

    def close(self) -> None:
        for s in self.socks.values():
            s.close()
        self.socks = {}
        if self.client is not None and hasattr(self.client, "close"):
            try:
                self.client.close()
            except Exception:
                pass
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for p in self.ports:
            _sh("ip", "link", "del", self.switch_if(p), check=False)


class Bmv2Target(WireTarget):
    """simple_switch running build/bmv2/symphony.json, Thrift control through
    p4-utils' SimpleSwitchThriftAPI."""

    def __init__(self, ports=(1, 2, 3, 4), thrift_port: int = 9190, wait_s: float = 0.3):
        self.thrift_port = thrift_port
        super().__init__(ports, wait_s)

    def start(self) -> None:
        # p4-utils is optional (only with the BMv2 toolchain)
        from p4utils.utils.sswitch_thrift_API import SimpleSwitchThriftAPI  # noqa: PLC0415

        if not BMV2_JSON.exists():
            subprocess.run(["make", "p4"], cwd=REPO_ROOT, check=True)
        args = ["simple_switch", "--thrift-port", str(self.thrift_port), "--device-id", "0"]
        for p in self.ports:
            args += ["-i", f"{p}@{self.switch_if(p)}"]
        self.proc = subprocess.Popen(args + [str(BMV2_JSON)], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + 10
        while True:
            try:
                self.client = SimpleSwitchThriftAPI(self.thrift_port, json_path=str(BMV2_JSON))
                return
            except Exception:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    raise RuntimeError("simple_switch did not answer on its Thrift port") from None
                time.sleep(0.2)

    def reset(self) -> None:
        super().reset()
        for p in self.ports:
            self.client.set_queue_rate(1_000_000, p)
            self.client.set_queue_depth(64, p)


class TwinProcessTarget(WireTarget):
    """The twin as a process (python3 -m topologies.switch.twin) on veths, driven
    through TwinClient: the same wire path the BMv2 target uses."""

    def start(self) -> None:
        self.tmp = tempfile.mkdtemp(prefix="symconf")
        sock = os.path.join(self.tmp, "twin.sock")
        args = [sys.executable, "-m", "topologies.switch.twin", "--name", "conformance", "--control", sock]
        for p in self.ports:
            args += ["--port", f"{p}={self.switch_if(p)}"]
        self.proc = subprocess.Popen(args, cwd=REPO_ROOT, start_new_session=True)
        self.client = TwinClient.wait(sock, timeout=10, proc=self.proc)

    def close(self) -> None:
        super().close()
        if getattr(self, "tmp", None):
            shutil.rmtree(self.tmp, ignore_errors=True)

