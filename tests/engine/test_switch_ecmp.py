"""ECMP on the compiled pipeline and the twin: the same hash (contract/ecmp.py)
and, with the control plane's entries for a multi-spine fabric, the same
egress port for the same packet."""

from __future__ import annotations

import random

import symphony_engine as E
from contract import ecmp
from experiments.sim.compiled_switch import CompiledPipeline, from_frame, init_key
from tests.harness.specs import topo
from topologies.switch import controlplane as cp
from topologies.switch.twin import packets
from topologies.switch.twin.pipeline import Pipeline


def test_compiled_hash_is_contracts():
    rng = random.Random(7)
    for _ in range(2000):
        t = (rng.getrandbits(32), rng.getrandbits(32), rng.choice((0, 6, 17)), rng.getrandbits(16),
             rng.getrandbits(16))
        mask = rng.choice(tuple(ecmp.SPORT_MASKS.values()))
        assert E.ecmp_hash(*t) == ecmp.flow_hash(*t)
        assert E.ecmp_bucket(*t, mask) == ecmp.bucket(*t, mask)


def install_forwarding(client, plan) -> None:
    for e in plan.forward:
        if e.group is None:
            client.table_add("forward", "ipv4_forward", [e.prefix], [e.dst_mac, str(e.port)])
        else:
            client.table_add("forward", "ecmp_forward", [e.prefix], [e.dst_mac, str(e.group), str(e.sport_mask)])
    for g in plan.ecmp:
        client.table_add("ecmp_select", "ecmp_port", [str(g.group), str(g.bucket)], [str(g.port)])


def test_same_packet_same_port_on_twin_and_compiled():
    for routing in ("ecmp", "ecmp-flow"):
        t = topo("leafspine", 8, 10, leaves=2, spines=4, routing=routing)
        plan = cp.plan(t, [], cp.SymphonyParams())["l1"]
        assert plan.ecmp and len(plan.ecmp) == ecmp.BUCKETS      # one group: the four uplinks
        twin, compiled = Pipeline(), CompiledPipeline(E.Pipeline(init_key(0)))
        install_forwarding(twin, plan)
        install_forwarding(compiled, plan)
        rng = random.Random(3)
        seen = set()
        for _ in range(500):
            src, dst = rng.choice(t.hosts[:4]), rng.choice(t.hosts[4:])
            proto = rng.choice(("udp", "tcp"))
            frame = packets.build(src=src.ip, dst=dst.ip, proto=proto, sport=rng.getrandbits(16),
                                  dport=rng.getrandbits(16), frame_len=100)
            port, _, _ = twin.process(1, frame)
            out = compiled.compiled.process(1, from_frame(frame), 0)
            assert out is not None and out[0] == port
            seen.add(port)
        assert len(seen) == 4 if routing == "ecmp" else len(seen) >= 1


def test_ecmp_entries_fill_every_bucket():
    t = topo("leafspine", 6, 10, leaves=3, spines=3, routing="ecmp")
    plans = cp.plan(t, [], cp.SymphonyParams())
    leaf = plans["l2"]                       # h3, h4 on ports 1, 2; the spines on 3, 4, 5
    assert [g.port for g in leaf.ecmp] == [ecmp.pick((3, 4, 5), b) for b in range(ecmp.BUCKETS)]
    assert not plans["p1"].ecmp              # a spine has one way down to each leaf
    remote = [e for e in leaf.forward if e.group is not None]
    assert remote and all(e.group == 0 and e.sport_mask == 0xFFFF for e in remote)
