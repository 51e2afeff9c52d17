"""TwinClient (topologies/switch/twin/client.py) apart from the twin: wait()
retries a twin that does not answer its ping properly on a new connection
and closes each one it gives up on.  (Over a real control socket:
test_control.py; against the twin process: test_netns.py.)"""

from __future__ import annotations

import gc
import socket
import threading
import warnings

import pytest

from topologies.switch.twin.client import TwinClient, TwinClientError


def test_wait_closes_each_connection_it_gives_up_on(tmp_path):
    path = str(tmp_path / "c.sock")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(16)
    server.settimeout(0.05)
    answered = []
    stop = threading.Event()

    def answer_out_of_order():
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            with conn:
                conn.recv(4096)
                conn.sendall(b'{"id": -1, "result": "x"}\n')        # not the ping's id
                answered.append(1)

    thread = threading.Thread(target=answer_out_of_order, daemon=True)
    thread.start()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ResourceWarning)
            with pytest.raises(TwinClientError, match="did not answer within"):
                TwinClient.wait(path, timeout=0.3)
            gc.collect()
    finally:
        stop.set()
        thread.join(2)
        server.close()
    assert len(answered) >= 2                                        # it tried again
    assert [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)] == []
