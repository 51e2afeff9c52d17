"""The conformance vectors of p4/tests/ and the runner that checks a target
against them (the format: p4/tests/README.md).

A target has a control ``client`` with SimpleSwitchThriftAPI's methods,
``reset()``, ``send(port, frame, qdepth, expect)`` (the packet out as
(port, frame), None when dropped, SKIPPED when the target cannot express the
step), ``register_read`` and ``counter_packets``.  Here: TwinTarget, the
twin's pure pipeline, where a packet's queue depth is given directly.  The
targets that take the wire path (the twin process and BMv2's simple_switch
on veths) are the conformance rig's (topologies/switch/conformance_rig.py);
a wire target that was too slow to make a queue depth exact raises
TargetTooSlow, and run_vector runs the vector again after ``slower()``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from contract.tags import tag_dscp, tag_port
from topologies.switch import program as symphony_state
from topologies.switch.targets import REPO_ROOT
from topologies.switch.twin import packets
from topologies.switch.twin.pipeline import Pipeline

VECTOR_DIR = REPO_ROOT / "p4" / "tests"

HELPERS = {
    "add_flow": symphony_state.add_flow,
    "install_job": symphony_state.install_job,
    "install_queue_ecn": symphony_state.install_queue_ecn,
    "install_sym_ecn": symphony_state.install_sym_ecn,
}
CLIENT_METHODS = {"table_add", "table_set_default", "table_clear", "register_write", "register_reset"}
PACKET_FIELDS = {"src", "dst", "proto", "sport", "dport", "ecn", "dscp", "ttl", "frame_len", "payload_len",
                 "eth_src", "eth_dst", "vihl", "ethertype", "frag_offset", "ip_flags"}


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


class TargetTooSlow(RuntimeError):
    """The switch was too slow for the queue hold to give the exact depth;
    run_vector runs the vector again with a longer hold."""


SKIPPED = object()   # a step the target cannot express (e.g. a frame too short for a wire)


def run_vector(vector: Vector, target) -> list[str]:
    """Failures of one vector on a target (empty: it passed).  A wire target
    too slow for its queue hold (TargetTooSlow) holds longer and runs the
    vector again from its reset."""
    while True:
        try:
            return _run_vector_once(vector, target)
        except TargetTooSlow:
            if not target.slower():
                raise


def _run_vector_once(vector: Vector, target) -> list[str]:
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

