"""What the runner and CLI tests share: a fake network whose 'agents' are
small local processes (no root, no Mininet), and the config they run."""

import json
import os
import subprocess
import sys
import time

import pytest

from experiments import config as C

# A stand-in for hosts.agent: reads the job file, logs `ready`, waits for the
# start file (--start-file, with the agent's own functions), writes
# schema-valid events, behaves as FAKE_MODE says: ok | wrong | hang | fail3 |
# full (rank 1 finds the disk full) | unready (rank 1 never gets ready).
FAKE_AGENT = r"""
import os, sys, time
from pathlib import Path
from contract.events import EventLog
from contract.tags import steps_per_iteration
from hosts.agent import sleep_until, wait_for_start
from hosts.job import load_job
args = sys.argv[1:]
job = load_job(args[args.index("--job") + 1]); rank = int(args[args.index("--rank") + 1])
log_dir = args[args.index("--log-dir") + 1]
start_file = Path(args[args.index("--start-file") + 1]) if "--start-file" in args else None
mode = os.environ.get("FAKE_MODE", "ok")
n = job.n_ranks
spi = steps_per_iteration(n)
with EventLog(os.path.join(log_dir, f"rank{rank}.jsonl"), job.job, rank) as log:
    if mode == "unready" and rank == 1:
        time.sleep(1000)
    log.emit("ready", 0, 0)
    start = {}
    if start_file is not None:
        at_ns, seen_ns = wait_for_start(start_file, 40.0)
        _, woke_ns = sleep_until(at_ns)
        start = {"start": {"at_ns": at_ns, "seen_ns": seen_ns, "woke_ns": woke_ns}}
    for it in range(job.iterations):
        log.emit("iter_start", it, it * spi, **(start if it == 0 else {}))
        for k in range(spi):
            step = it * spi + k
            log.emit("step_start", it, step, k=k, phase="rs" if k < n - 1 else "ag", send_chunk=0, recv_chunk=0)
            time.sleep(0.01 + 0.002 * rank)
            log.emit("step_end", it, step, k=k, phase="rs" if k < n - 1 else "ag", bytes=100)
        if mode == "hang":
            time.sleep(1000)
        if mode == "fail3" and rank == 1:
            log.emit("error", it, step, reason="waited 5 s for step 3 data from rank 0")
            sys.exit(3)
        if mode == "full" and rank == 1:
            print("hosts.agent rank 1: cannot write its records (rank1.jsonl): No space left on device",
                  file=sys.stderr)
            sys.exit(4)
        log.emit("iter_end", it, step, exact=(mode != "wrong" or rank != 0))
sys.exit(1 if mode == "wrong" and rank == 0 else 0)
"""


class FakeNet:
    """What the runner uses of TestbedNetwork."""
    instances = []

    def __init__(self, plan, run_dir, target, die_after=None, mode="ok", hang_after=None):
        self.plan, self.run_dir, self.target_req = plan, run_dir, target
        self.target = "fake"
        self.warnings = []
        self.procs = []
        self.rates = []
        self.die_after = die_after
        self.hang_after = hang_after
        self.mode = mode
        self.started = None
        self.stopped = False
        FakeNet.instances.append(self)

    def __enter__(self):
        self.started = time.monotonic()
        return self

    def __exit__(self, *exc):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
            p.wait()
        self.stopped = True

    def popen(self, host, args, **kw):
        assert args[1:3] == ["-m", "hosts.agent"]
        env = dict(os.environ, FAKE_MODE=self.mode)
        p = subprocess.Popen([sys.executable, "-c", FAKE_AGENT, *args[3:]], env=env, **kw)
        self.procs.append(p)
        return p

    def set_link_rate(self, link, rate):
        if self.hung_switches():
            raise TimeoutError("p1: no answer on its control socket within 10 s")
        self.rates.append((link, rate))

    def _up_for(self, seconds):
        """Whether the agents have been up (every one has logged) that long
        (a loaded machine can take a second to start four interpreters)."""
        logs = [self.run_dir / "agents" / f"rank{r}.jsonl" for r in range(4)]
        if seconds is not None and all(p.exists() and p.stat().st_size for p in logs):
            self.up = getattr(self, "up", None) or time.monotonic()
            return time.monotonic() - self.up > seconds
        return False

    def dead_switches(self):
        return [("p1", -9)] if self._up_for(self.die_after) else []

    def hung_switches(self):
        # stopped hang_after seconds after the agents are up: its control socket no longer answers
        if self._up_for(self.hang_after):
            return [("p1", "stopped (process 4242 in state T: SIGSTOP or a debugger)")]
        return []

    def dump_switches(self, out_dir):
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / "p1.json").write_text(json.dumps({"switch": "p1", "counters": {}}))


@pytest.fixture
def fake_net():
    """The FakeNet class, its instance list emptied."""
    FakeNet.instances = []
    return FakeNet


@pytest.fixture
def fake_spec():
    """fake_spec(repeats=1, variants=None, transport="udp", **runner): a
    4-rank job on a leaf-spine with a squeeze and a straggler."""
    def make(repeats=1, variants=None, transport="udp", **runner):
        raw = {
            "name": "fake", "seed": 3, "repeats": repeats,
            "topology": {"kind": "leafspine", "hosts": 4, "leaves": 2, "spines": 1, "host_rate_mbit": 10},
            "jobs": [{"ranks": 4, "message_bytes": 4000, "iterations": 2, "transport": transport}],
            "ecn": {"kmin": 3, "kmax": 9, "pmax": 0.5},
            "dcqcn": {"preset": "emulation"},
            "jitter": [{"kind": "rate", "rank": 1, "start_s": [0.0, 0.05], "duration_s": 0.1, "fraction": 0.5},
                       {"kind": "compute", "rank": 2, "iter": 1, "delay_s": 0.2}],
            "runner": {"run_deadline_s": 20, **runner},
        }
        if variants is not None:
            raw["variants"] = variants
        return C.resolve(raw)
    return make
