"""The twin switch (topologies/switch/twin/switch.py; the process itself:
test_netns.py) and its delay lines without raw sockets, on a virtual clock:
queue first, then delay (the line never changes how fast the queue drains
nor the queue depth the pipeline sees), the ingress line before the
pipeline, set_netem over the control protocol and its one-line errors; the
distribution tables built only when a line needs one."""

from __future__ import annotations

import itertools
import json

import pytest

from topologies.spec.netem import NetemParams
from topologies.switch.twin import delayline as D
from topologies.switch.twin import packets
from topologies.switch.twin.control import handle_request
from topologies.switch.twin.core import SHORT_QUEUE, SwitchCore
from topologies.switch.twin.queues import EgressQueue
from topologies.switch.twin.switch import QUEUE_WAKE_S, TwinSwitch

FRAME = 1000            # bytes: 1 ms on an 8 Mb/s port


class Rig:
    """A twin with ports 1 and 2 (no sockets): 10.0.0.2 is behind port 2."""

    def __init__(self, tmp_path):
        self.sw = TwinSwitch("d", {}, str(tmp_path / "c.sock"), offloads_off=False)
        # the data path of core.SwitchCore with two ports and no sockets
        SwitchCore.__init__(self.sw, "d", {1: "a", 2: "b"}, 64)
        self.sw.pipeline.table_add("forward", "ipv4_forward", ["10.0.0.2/32"], ["00:00:00:00:00:02", "2"])
        self.now = 0.0
        self.sent: list[tuple[int, float, bytes]] = []
        self.depths: list[tuple[float, int]] = []      # the queue depth the pipeline's egress saw
        self.sw.transmit = lambda port, frame, now: self.sent.append((port, self.now, frame))
        egress = self.sw.pipeline.egress

        def spy(pkt, qdepth):
            self.depths.append((self.now, qdepth))
            return egress(pkt, qdepth)
        self.sw.pipeline.egress = spy

    def frame(self, i: int) -> bytes:
        return packets.build("10.0.0.1", "10.0.0.2", ident=i, frame_len=FRAME)

    def run(self, arrivals: list[tuple[float, int]], until: float) -> None:
        """Frames arriving on port 1 at the given times; the loop's own
        schedule (next_timeout) in between."""
        pending = sorted(arrivals)
        while self.now < until:
            nxt = min(self.now + self.sw.next_timeout(self.now), pending[0][0] if pending else until)
            self.now = max(self.now, nxt)
            while pending and pending[0][0] <= self.now:
                self.sw.arrive(1, self.frame(pending.pop(0)[1]), self.now)
            self.sw.drain(self.now)

    def close(self):
        self.sw.close()


@pytest.fixture
def rig(tmp_path):
    r = Rig(tmp_path)
    yield r
    r.close()


def ident(frame: bytes) -> int:
    return int.from_bytes(frame[18:20], "big")


def queue_run(tmp_path, netem: NetemParams | None):
    r = Rig(tmp_path)
    r.sw.set_queue_rate_bps(8e6, 2)
    if netem:
        r.sw.set_netem(netem.as_dict(), 2)
    r.run([(0.0005 * i, i) for i in range(40)], until=0.2)     # 2 frames per ms into a 1 ms/frame port
    r.close()
    return r


def test_queue_first_then_delay(tmp_path):
    plain = queue_run(tmp_path, None)
    delayed = queue_run(tmp_path, NetemParams(delay_ms=5))
    # the pipeline saw the same queue depths at the same times: the line
    # holds frames after the queue, never in it
    assert delayed.depths == plain.depths and max(d for _, d in plain.depths) >= 15
    # every frame leaves the queue as before and the port 5 ms later (the
    # queue's wake-ups are rounded, the line's exact: a line's wake-up may
    # let a queued frame go up to one rounding sooner than without it)
    assert [ident(f) for _, _, f in delayed.sent] == [ident(f) for _, _, f in plain.sent] == list(range(40))
    for (_, t0, _), (_, t1, _) in zip(plain.sent, delayed.sent, strict=True):
        assert 0.005 - QUEUE_WAKE_S - 1e-6 <= t1 - t0 <= 0.005 + 1e-6
    # still 8 Mb/s, 1 ms per 1000-byte frame: a frame woken late may be
    # followed sooner (the queue catches up), never ahead of its slot
    start = delayed.sent[5][1]
    assert all(t - start >= 0.001 * k - 1e-6 for k, (_, t, _) in enumerate(delayed.sent[5:]))
    assert delayed.sent[-1][1] - start <= 0.001 * (len(delayed.sent) - 6) + QUEUE_WAKE_S + 1e-6


def test_a_backlogged_slow_port_sends_on_its_slots_whatever_wakes_the_loop(rig):
    """A port slower than the wake-up grid (1.25 ms a frame here) needs no
    grid: a frame received 0.2 ms before each departure must not put that
    departure off (it did, by 0.8 ms: the grid counted from the wake-up),
    or the next switch's port of the same rate reads a queue that is not
    there."""
    rig.sw.set_queue_rate_bps(6.4e6, 2)
    slot = FRAME * 8 / 6.4e6
    burst = [(0.0, i) for i in range(10)]                         # a standing backlog
    wakers = [(slot * k - 0.0002, 10 + k) for k in range(2, 40)]  # just before each departure
    rig.run(burst + wakers, until=slot * 40)
    times = [t for _, t, _ in rig.sent]
    assert len(times) >= 35
    assert times == pytest.approx([slot * (k + 1) for k in range(len(times))], abs=1e-9)


def test_a_backlogged_fast_port_is_still_woken_at_most_once_a_grid(rig):
    """The grid's purpose stays: a port faster than it (0.5 ms a frame) is
    woken at most once per QUEUE_WAKE_S while it holds a backlog, and sends
    what is due then (two frames), never ahead of their slots."""
    rig.sw.set_queue_rate_bps(16e6, 2)
    rig.run([(0.0, i) for i in range(40)], until=0.03)
    times = sorted({t for _, t, _ in rig.sent})
    backlogged = times[:(40 - SHORT_QUEUE) // 2]
    assert all(b - a >= QUEUE_WAKE_S - 1e-9 for a, b in itertools.pairwise(backlogged))
    assert all(t >= 0.0005 * (k + 1) - 1e-9 for k, (_, t, _) in enumerate(rig.sent))


def test_ingress_line_holds_frames_before_the_pipeline(rig):
    rig.sw.set_netem(NetemParams(delay_ms=3).as_dict(), 1, "ingress")
    rig.run([(0.0, 0), (0.001, 1)], until=0.01)
    # the pipeline (queue depth taken in its egress) saw them 3 ms late; unlimited port: out at once
    assert [t for t, _ in rig.depths] == pytest.approx([0.003, 0.004])
    assert [(p, t) for p, t, _ in rig.sent] == [(2, pytest.approx(0.003)), (2, pytest.approx(0.004))]
    stats = rig.sw.port_stats()["ports"]["1"]
    assert stats["netem_ingress"]["delay_ms"] == 3 and stats["netem_ingress"]["out"] == 2
    assert "netem_egress" not in stats


def test_netem_off_again_and_loss_counted(rig):
    rig.sw.set_netem(NetemParams(delay_ms=2, loss_pct=100).as_dict(), 2)
    rig.run([(0.0, 0)], until=0.01)
    assert rig.sent == [] and rig.sw.port_stats()["ports"]["2"]["netem_egress"]["lost"] == 1
    rig.sw.set_netem({}, 2)
    rig.run([(0.02, 1)], until=0.03)
    assert [(t, ident(f)) for _, t, f in rig.sent] == [(pytest.approx(0.02), 1)]


def test_lines_are_seeded_by_switch_port_and_direction(tmp_path):
    a, b = (TwinSwitch("s1", {}, str(tmp_path / f"{x}.sock"), seed=4) for x in "ab")
    for sw in (a, b):
        sw.queues = {1: EgressQueue(), 2: EgressQueue()}
        sw.set_netem({"delay_ms": 5, "jitter_ms": 2}, None)
        sw.set_netem({"delay_ms": 5, "jitter_ms": 2}, 1, "ingress")
    draws = [[line.rng.random() for line in (sw.lines["egress"][1], sw.lines["egress"][2], sw.lines["ingress"][1])]
             for sw in (a, b)]
    assert draws[0] == draws[1] and len(set(draws[0])) == 3
    a.close()
    b.close()


def req(sw, method, *args, **kwargs):
    return handle_request(sw, json.dumps({"id": 3, "method": method, "args": list(args), "kwargs": kwargs}))


@pytest.mark.parametrize("args, message", [
    (({"delay_ms": -1}, 2), "delay_ms must be a finite number >= 0"),
    (({"delay_ms": 1, "distribution": "zipf"}, 2), "distribution 'zipf' is unknown"),
    (({"delay": 1}, 2), "unknown field 'delay'"),
    (({"delay_ms": 1}, 9), "no port 9"),
    (({"delay_ms": 1}, 2, "sideways"), "direction must be one of egress, ingress"),
])
def test_set_netem_bad_requests_are_one_line_errors(rig, args, message):
    reply = req(rig.sw, "set_netem", *args)
    assert message in reply["error"] and "\n" not in reply["error"]


def test_set_netem_request_and_reset(rig):
    assert req(rig.sw, "set_netem", {"delay_ms": 4, "jitter_ms": 1, "distribution": "pareto"}) == \
        {"id": 3, "result": None}                       # no port: every port
    assert set(rig.sw.lines["egress"]) == {1, 2}
    assert rig.sw.lines["egress"][2].params == NetemParams(4, 1, distribution="pareto")
    rig.sw.reset_state()
    assert rig.sw.lines == {"egress": {}, "ingress": {}}


def test_a_distribution_table_is_built_when_a_line_first_draws_from_it(tmp_path):
    """A twin starts without building netem's tables (normal's costs ~0.1 s
    of CPU per process); a line with a distribution but no jitter draws
    nothing from it; the first jittered one builds it, once for all lines,
    the same as ever."""
    D.table.cache_clear()
    sw = TwinSwitch("t", {}, str(tmp_path / "c.sock"), offloads_off=False)
    sw.queues = {1: EgressQueue(), 2: EgressQueue()}
    try:
        assert D.table.cache_info().currsize == 0
        sw.set_netem({"delay_ms": 5, "distribution": "normal"}, 1)
        assert D.table.cache_info().currsize == 0
        sw.set_netem({"delay_ms": 5, "jitter_ms": 1, "distribution": "normal"}, None)     # ports 1 and 2
        assert (D.table.cache_info().misses, D.table.cache_info().hits) == (1, 1)
    finally:
        sw.close()
    assert D.table("normal") == D.table.__wrapped__("normal")    # deterministic: a fresh build is the same


def test_a_bunch_reads_the_depths_its_link_would_have_delivered(rig):
    """Ten frames that a late wake-up hands over at one instant on a link of
    8 Mb/s (1 ms a frame) into a port of 1 frame per 2.4 ms read the depths
    of frames delivered 1 ms apart (the k-th at k ms, frames starting
    every 2.4 ms), not 0..8 as a burst no link can deliver; no later than
    the port's catch-up bound (4 full frames, 6 ms), which a bunch does
    not outlast."""
    rig.sw.set_queue_rate_bps(8e6, 1)
    rig.sw.set_queue_rate_bps(FRAME * 8 / 0.0024, 2)
    rig.run([(0.0, i) for i in range(10)], until=0.001)
    assert rig.sw.queues[1].catch_up_s == pytest.approx(0.006)
    assert [d for _, d in rig.depths] == [0, 0, 1, 1, 2, 2, 3] + [4, 5, 6]    # the last three read at 6 ms


def test_frames_the_link_spaced_read_the_depth_now(tmp_path):
    """Frames that arrive no closer than the link's frame time, and frames
    on a port without a bit rate, read the queue as it is when they
    arrive."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    spaced, unrated = Rig(tmp_path / "a"), Rig(tmp_path / "b")
    try:
        spaced.sw.set_queue_rate_bps(8e6, 1)
        for r in (spaced, unrated):
            r.sw.set_queue_rate_bps(4e6, 2)           # 2 ms a frame
        spaced.run([(0.0011 * i, i) for i in range(6)], until=0.007)
        unrated.run([(0.0, i) for i in range(4)], until=0.001)    # port 1 unlimited: nothing to space by
    finally:
        spaced.close()
        unrated.close()
    assert [d for _, d in spaced.depths] == [0, 0, 0, 1, 1, 2]    # arriving at 0, 1.1 .. 5.5 ms, starting every 2 ms
    assert [d for _, d in unrated.depths] == [0, 0, 1, 2]
