"""Reading a live agent's records while it runs (the tests that start agents
in namespaces and watch their jsonl grow)."""

import json
import time


def read_records(path):
    """The complete lines of an agent's jsonl so far ([] before it exists)."""
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            pass          # a line being written
    return out


def wait_for(pred, timeout, what):
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)
