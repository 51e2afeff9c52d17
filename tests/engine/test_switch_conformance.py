"""The conformance vectors of p4/tests/ through the compiled pipeline, read
by the twin's own runner (topologies.switch.conformance.run_vector): the
frames become descriptors (compiled_switch.from_frame, which reports the
malformed ones' drops as the twin's parser names them) and the packets out
frames again (to_frame), so every vector runs, none is skipped.  Beyond the
vectors' own expectations, the whole state after each vector (registers,
counters, drops, tables) equals the twin pipeline's."""

from __future__ import annotations

import pytest

import symphony_engine as E
from experiments.sim.compiled_switch import CompiledPipeline, from_frame, init_key, to_frame
from tests.topologies.switch.test_conformance import assert_flips_reported
from topologies.switch import program
from topologies.switch.conformance import TwinTarget, load_vectors, run_vector
from topologies.switch.twin import packets

VECTORS = load_vectors()
IDS = [v.id for v in VECTORS]


class CompiledTarget:
    """conformance.TwinTarget's interface on the compiled pipeline."""

    def __init__(self, seed: int = 0):
        self.seed = seed
        self.reset()

    def reset(self) -> None:
        self.client = CompiledPipeline(E.Pipeline(init_key(self.seed)))

    def send(self, port: int, frame: bytes, qdepth: int, expect: dict):
        pkt = from_frame(frame)
        if isinstance(pkt, str):
            self.client.compiled.count_drop(pkt)
            return None
        out = self.client.compiled.process(port, pkt, qdepth)
        if out is None:
            return None
        egress_port, dst_mac, sent = out
        return egress_port, to_frame(frame, dst_mac, sent)

    def register_read(self, name: str, index: int) -> int:
        return self.client.register_read(name, index)

    def counter_packets(self, name: str, index: int) -> int:
        return self.client.counter_read(name, index).packets


def test_every_vector_is_run():
    assert len(VECTORS) >= 20
    assert any(s.get("hex") is not None or "truncate" in s for v in VECTORS for s in v.steps)


@pytest.mark.parametrize("vector", VECTORS, ids=IDS)
def test_vector_on_compiled_pipeline(vector):
    target = CompiledTarget()
    failures = run_vector(vector, target)
    assert not failures, "\n".join(failures)
    twin = TwinTarget()
    assert not run_vector(vector, twin)
    assert target.client.dump() == twin.client.dump()


def test_runner_sees_the_compiled_pipelines_answers():
    """Not vacuous: a flipped expected ECN and register value fail on the compiled pipeline too."""
    assert_flips_reported(CompiledTarget())


@pytest.mark.parametrize("seed", [1, 5, 123])
def test_marking_draws_follow_the_seed_as_the_twins(seed):
    """With probabilities strictly between 0 and 1 the marks are the
    generator's: over many packets the compiled pipeline marks exactly
    the packets the twin marks, for several seeds."""
    targets = [CompiledTarget(seed), TwinTarget(seed)]
    for t in targets:
        t.client.table_add("forward", "ipv4_forward", ["10.0.0.2/32"], ["00:00:0a:00:00:02", "2"])
        program.add_flow(t.client, "10.0.0.1", "10.0.0.2", 5000, 0, 0, 2, 0, 1)
        program.install_job(t.client, 0, [0], 0)
        program.install_queue_ecn(t.client, 2, 20, 0.4)
        program.install_sym_ecn(t.client, 1, 0.5, 0)
    outs = [[], []]
    for i in range(400):
        frame = packets.build("10.0.0.1", "10.0.0.2", sport=0xC000 | (i // 3), ecn=1 + i % 2, frame_len=100 + i)
        for t, out in zip(targets, outs, strict=True):
            got = t.send(1, frame, i % 25, {})
            out.append(got[1][15] & 3)
    assert outs[0] == outs[1]
    assert 0 < outs[0].count(3) < len(outs[0])
    assert targets[0].client.dump() == targets[1].client.dump()
