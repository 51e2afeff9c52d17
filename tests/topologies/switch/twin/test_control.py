"""The twin's control protocol (topologies/switch/twin/control.py) without
raw sockets (a switch with no ports): requests map to the pipeline and queue
settings, bad requests get one-line errors, and random bytes on the control
line never raise."""

from __future__ import annotations

import json
import select
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from topologies.switch.twin import packets
from topologies.switch.twin.client import TwinClient, TwinClientError
from topologies.switch.twin.control import handle_request
from topologies.switch.twin.core import SwitchCore
from topologies.switch.twin.pipeline import Pipeline
from topologies.switch.twin.queues import EgressQueue
from topologies.switch.twin.switch import TwinSwitch


@pytest.fixture
def switch(tmp_path):
    sw = TwinSwitch("t1", {}, str(tmp_path / "c.sock"), offloads_off=False)
    yield sw
    sw.close()


def req(sw, method, *args, **kwargs):
    return handle_request(sw, json.dumps({"id": 7, "method": method, "args": list(args), "kwargs": kwargs}))


def test_requests_reach_the_pipeline(switch):
    assert req(switch, "table_add", "forward", "ipv4_forward", ["10.0.0.2/32"], ["00:00:0a:00:00:02", "2"]) == \
        {"id": 7, "result": 0}
    assert req(switch, "register_write", "frontier", 1, 9)["result"] is None
    assert req(switch, "register_read", "frontier", 1)["result"] == 9
    assert req(switch, "counter_read", "pkts", 0)["result"] == [0, 0]
    assert req(switch, "ping")["result"] == "t1"


@pytest.mark.parametrize("line, message", [
    (b"not json", "bad request"),
    (b"[1, 2]", "bad request"),
    (json.dumps({"id": 1, "method": "rm_rf"}).encode(), "unknown method"),
    (json.dumps({"id": 1, "method": ["ping"]}).encode(), "unknown method"),     # once a crash: unhashable
    (json.dumps({"id": 1, "method": "register_read", "args": ["nope", 0]}).encode(), "unknown register"),
    (json.dumps({"id": 1, "method": "set_queue_rate", "args": [100, 3]}).encode(), "no port 3"),
    (json.dumps({"id": 1, "method": "set_queue_rate_bps", "args": [8e6, 3]}).encode(), "no port 3"),
    (json.dumps({"id": 1, "method": "table_add", "args": ["forward"]}).encode(), "missing"),
])
def test_bad_requests_get_one_line_errors(switch, line, message):
    reply = handle_request(switch, line)
    assert message in reply["error"] and "\n" not in reply["error"]


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.binary(max_size=300),
                 st.builds(lambda m, a: json.dumps({"id": 1, "method": m, "args": a}).encode(),
                           st.sampled_from(["table_add", "register_write", "register_read", "counter_read",
                                            "set_queue_depth", "set_queue_rate", "set_queue_rate_bps",
                                            "table_set_default", "x"]),
                           st.lists(st.one_of(st.integers(-5, 70000), st.text(max_size=12), st.none(),
                                              st.lists(st.text(max_size=8), max_size=3)), max_size=6))))
def test_random_control_lines_never_raise(line):
    sw = TwinSwitch.__new__(TwinSwitch)          # the request handler needs no sockets
    sw.name, sw.queues, sw.stats = "f", {}, {}
    sw.pipeline = Pipeline()
    reply = handle_request(sw, line)
    assert ("error" in reply) != ("result" in reply)


def test_client_over_the_unix_socket(switch):
    # run() installs signal handlers, which only the main thread may do: serve by hand instead
    stop = threading.Event()

    def serve():
        control = switch.control
        while not stop.is_set():
            for fd in select.select([control.listener.fileno(), *control.conns], [], [], 0.05)[0]:
                if fd == control.listener.fileno():
                    control.accept()
                elif fd in control.conns:
                    control.serve(fd)

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    try:
        c = TwinClient.wait(switch.control_path, timeout=5)
        c.table_add("forward", "ipv4_forward", ["10.0.0.0/8"], ["00:00:00:00:00:01", "1"])
        c.register_write("flow_step", 3, 42)
        assert c.register_read("flow_step", 3) == 42
        assert c.counter_read("sym_marks", 3).packets == 0
        with pytest.raises(TwinClientError, match="fit in 16 bits"):
            c.register_write("flow_step", 3, 1 << 20)
        c.close()
    finally:
        stop.set()
        t.join(2)


def test_queue_rate_in_packets_or_bits_per_port():
    sw = TwinSwitch.__new__(TwinSwitch)          # queue settings need no sockets
    sw.name, sw.queues = "q", {1: EgressQueue(), 2: EgressQueue()}
    assert req(sw, "set_queue_rate_bps", 8e6, 2) == {"id": 7, "result": None}
    assert (sw.queues[2].bps, sw.queues[2].pps) == (8e6, None) and sw.queues[1].unlimited
    assert "result" in req(sw, "set_queue_rate", 100)              # no port: every port, in packets/s
    assert [(q.pps, q.bps) for q in sw.queues.values()] == [(100, None), (100, None)]
    assert "bits/s" in req(sw, "set_queue_rate_bps", 0, 1)["error"]


def test_a_control_lane_puts_an_ack_ahead_of_queued_data_through_the_pipeline():
    class Core(SwitchCore):
        def transmit(self, port, frame, now):
            self.sent.append(len(frame))

    def run(lane):
        core = Core("s", {1: "in", 2: "out"})
        core.sent = []
        handle_request(core, json.dumps({"id": 1, "method": "table_add", "args": [
            "forward", "ipv4_forward", ["10.0.0.2/32"], ["00:00:0a:00:00:02", "2"]]}))
        handle_request(core, json.dumps({"id": 2, "method": "set_queue_rate_bps", "args": [1e6, 2]}))
        reply = handle_request(core, json.dumps({"id": 3, "method": "set_ctrl_lane", "args": [lane, 2]}))
        assert reply == {"id": 3, "result": None}
        for _ in range(3):
            core.arrive(1, packets.build("10.0.0.1", "10.0.0.2", ecn=2, frame_len=1462), 0.0)
        core.arrive(1, packets.build("10.0.0.1", "10.0.0.2", ecn=0, frame_len=70), 0.0)
        now = 0.0
        while (due := core.next_due()) is not None:
            now = max(now, due)
            core.drain(now)
        return core.sent

    assert run(True) == [1462, 70, 1462, 1462]
    assert run(False) == [1462, 1462, 1462, 70]
