"""A straggler's NIC keeps receiving while its host computes: the agent
drives its transport through a straggle delay (Transport.idle), so the
predecessor's step is received and acknowledged, as in the simulation.
Before, the agent slept in time.sleep and the predecessor's flow stalled
at its in-flight limit until the straggler woke.  Real agents on loopback
addresses (no root)."""

import pytest

from hosts.job import JobSpec, RankSpec, Straggle, dump_job
from hosts.udp.params import UdpParams
from tests.hosts.test_agent_start import events, run_together

DELAY_S = 1.5
PACKETS = 60       # a step's chunk, in packets: far past the in-flight limit below
WINDOW = 8


@pytest.mark.parametrize("transport,port", [("udp", 5770), ("tcp", 5776)])
def test_a_stragglers_predecessor_finishes_its_first_step_while_the_straggler_computes(tmp_path, transport,
                                                                                         port):
    ranks = tuple(RankSpec(r, f"127.0.9.{11 + r}") for r in range(3))
    spec = JobSpec(job=9, data_port=port, message_bytes=3 * PACKETS * 1400, iterations=1, ranks=ranks,
                   transport=transport, udp=UdpParams(window_packets=WINDOW),
                   straggle=(Straggle(rank=2, iter=0, delay_s=DELAY_S),))
    dump_job(spec, tmp_path / "job.toml")
    at_ns = run_together(tmp_path, 3)
    # rank 1 sends step 0 to rank 2, the straggler, and receives it from rank 0
    end0 = next(e["t"] for e in events(tmp_path, 1) if e["kind"] == "step_end" and e["step"] == 0)
    woke = next(e["t"] for e in events(tmp_path, 2) if e["kind"] == "iter_start")
    assert woke - at_ns >= DELAY_S * 1e9
    assert end0 - at_ns < DELAY_S * 1e9 / 3, (end0 - at_ns) / 1e9
    assert all(e["exact"] for r in range(3) for e in events(tmp_path, r) if e["kind"] == "iter_end")
