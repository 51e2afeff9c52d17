"""Agents between real network namespaces: one agent process per namespace,
veth pairs through a Linux bridge (topologies.network.lab.Lab)."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from contract import events, tags
from hosts.job import Deadlines, JobSpec, RankSpec, dump_job
from hosts.udp.params import FaultParams
from tests.harness import REPO

pytestmark = [pytest.mark.root]


def make_job(lab, tmp_path, hosts, message_bytes, iterations=3, **kw):
    spec = JobSpec(job=kw.pop("job", 11), data_port=kw.pop("data_port", 5200),
                   message_bytes=message_bytes, iterations=iterations,
                   ranks=tuple(RankSpec(r, lab.hosts[h].ip, f"h{h}") for r, h in enumerate(hosts)),
                   seed=kw.pop("seed", 3), **kw)
    path = tmp_path / "job.toml"
    dump_job(spec, path)
    return spec, path


def start_agent(lab, host, job_path, rank, log_dir):
    err = open(log_dir / f"rank{rank}.stderr", "w")
    return lab.popen(host, [sys.executable, "-m", "hosts.agent", "--job", str(job_path),
                            "--rank", str(rank), "--log-dir", str(log_dir)],
                     cwd=REPO, stdout=subprocess.DEVNULL, stderr=err)


def wait_all(procs, timeout):
    end = time.monotonic() + timeout
    codes = []
    for p in procs:
        codes.append(p.wait(timeout=max(0.1, end - time.monotonic())))
    return codes


def read_log(log_dir, rank):
    out = []
    for line in (log_dir / f"rank{rank}.jsonl").read_text().splitlines():
        ev = json.loads(line)
        events.validate(ev)
        out.append(ev)
    return out


def check_records(evs, n, iterations, rank, job):
    spi = 2 * (n - 1)
    assert all(e["rank"] == rank and e["job"] == job for e in evs)
    for it in range(iterations):
        mine = [e for e in evs if e["iter"] == it and e["kind"] in ("step_start", "step_end")]
        expect = []
        for k in range(spi):
            step = tags.ring_step(it, k, n)
            expect += [("step_start", k, step), ("step_end", k, step)]
        assert [(e["kind"], e["k"], e["step"]) for e in mine] == expect
        for e in mine:
            assert e["send_chunk"] == (rank - e["k"]) % n if e["kind"] == "step_start" else True
        starts = [e for e in evs if e["iter"] == it and e["kind"] == "iter_start"]
        ends = [e for e in evs if e["iter"] == it and e["kind"] == "iter_end"]
        assert len(starts) == 1 and len(ends) == 1 and ends[0]["exact"] is True
        assert starts[0]["t"] <= mine[0]["t"] and mine[-1]["t"] <= ends[0]["t"]
    ts = [e["t"] for e in evs]
    assert ts == sorted(ts)


def run_ring(lab_factory, tmp_path, n, message_bytes, iterations=3, **kw):
    lab = lab_factory(n)
    spec, path = make_job(lab, tmp_path, list(range(n)), message_bytes, iterations, **kw)
    log_dir = tmp_path / "agents"
    log_dir.mkdir()
    procs = [start_agent(lab, r, path, r, log_dir) for r in range(n)]
    codes = wait_all(procs, 120)
    for r in range(n):
        assert codes[r] == 0, (log_dir / f"rank{r}.stderr").read_text()
    return spec, log_dir


@pytest.mark.parametrize("n", [2, 3, 4, 8])
def test_exact_allreduce_between_namespaces(lab_factory, tmp_path, n):
    elems = 30_001                     # N = 2, 3, 4, 8 do not divide it
    assert elems % n
    spec, log_dir = run_ring(lab_factory, tmp_path, n, 4 * elems, iterations=3)
    for r in range(n):
        evs = read_log(log_dir, r)
        check_records(evs, n, 3, r, spec.job)
        stats = [e for e in evs if e["kind"] == "stats"]
        assert len(stats) == 1 and stats[0]["counters"]["rx_data"] > 0


def test_loss_duplication_reordering_still_exact(lab_factory, tmp_path):
    n = 4
    spec, log_dir = run_ring(lab_factory, tmp_path, n, 4 * 50_001, iterations=3,
                             faults=FaultParams(drop=0.05, duplicate=0.01, reorder=0.02, seed=5))
    for r in range(n):
        evs = read_log(log_dir, r)
        check_records(evs, n, 3, r, spec.job)
        rtx = [e for e in evs if e["kind"] == "retransmit"]
        assert rtx, f"rank {r} logged no retransmit under 5% loss"
        c = [e for e in evs if e["kind"] == "stats"][0]["counters"]
        assert c["fault_drop"] > 0 and c["fault_dup"] > 0 and c["fault_reorder"] > 0
        assert sum(c.get("retransmit_" + why, 0) for why in ("gap", "timeout", "probe")) \
            == len(rtx)


@pytest.mark.parametrize("which", ["step", "run"])
def test_missing_predecessor_hits_the_deadline(lab_factory, tmp_path, which):
    lab = lab_factory(2)
    dl = Deadlines(step_s=1.5, run_s=30.0) if which == "step" else Deadlines(30.0, 1.5)
    spec, path = make_job(lab, tmp_path, [0, 1], 40_000, iterations=2, deadlines=dl)
    log_dir = tmp_path / "agents"
    log_dir.mkdir()
    t0 = time.monotonic()
    proc = start_agent(lab, 1, path, 1, log_dir)       # rank 0 never starts
    code = proc.wait(timeout=30)
    elapsed = time.monotonic() - t0
    assert code == 3
    assert 1.5 <= elapsed < 1.5 + 5.0
    evs = read_log(log_dir, 1)
    err = [e for e in evs if e["kind"] == "error"]
    assert len(err) == 1
    e = err[0]
    assert e["waiting_for"] == "data" and e["peer"] == 0 and e["step"] == 0
    assert e["deadline"] == which and "rank 0" in e["reason"]
    stderr = (log_dir / "rank1.stderr").read_text().strip().splitlines()
    assert len(stderr) == 1 and "deadline" in stderr[0]
    # it kept probing the successor (rank 0) with its step-0 data
    assert any(ev["kind"] == "retransmit" for ev in evs)
    assert evs[-1]["kind"] == "stats"


def test_sigterm_keeps_records_and_counters(lab_factory, tmp_path):
    lab = lab_factory(2)
    spec, path = make_job(lab, tmp_path, [0, 1], 40_000, iterations=2)
    log_dir = tmp_path / "agents"
    log_dir.mkdir()
    proc = start_agent(lab, 1, path, 1, log_dir)       # waits for rank 0 forever
    log1 = log_dir / "rank1.jsonl"
    end = time.monotonic() + 20
    while not (log1.exists() and "step_start" in log1.read_text()):
        assert time.monotonic() < end
        time.sleep(0.05)
    # the agent runs under `ip netns exec`, which execs it: same pid
    os.kill(proc.pid, signal.SIGTERM)
    assert proc.wait(timeout=10) == 143
    evs = read_log(log_dir, 1)
    assert [e["kind"] for e in evs][:3] == ["ready", "iter_start", "step_start"]
    assert evs[-1]["kind"] == "stats"


INTRUDER = r"""
import socket, struct, sys
from contract import tags
from hosts import wire
src_ip, dst_ip, port, job, count, kind = sys.argv[1:7]
port, job, count = int(port), int(job), int(count)
if kind == "data":
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((src_ip, tags.tag_port(0)))
    for i in range(count):
        pkt = wire.pack_data_header(job, 0, 0, 0, 1400) + bytes(1400)
        s.sendto(pkt, (dst_ip, port))
elif kind == "ack":
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((src_ip, 0))
    for i in range(count):
        s.sendto(wire.pack_ack(job, 0, 0, 0, 0, wire.ACK_COMPLETE), (dst_ip, port + 1))
        s.sendto(wire.pack_cnp(job, 0, 0), (dst_ip, port + 1))
else:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((src_ip, 0))
    for i in range(count):
        s.sendto(bytes([i]) * (i + 1), (dst_ip, port))
"""


def test_packets_from_wrong_address_or_job_are_dropped(lab_factory, tmp_path):
    lab = lab_factory(3)                      # hosts 0, 1 run the job; host 2 intrudes
    spec, path = make_job(lab, tmp_path, [0, 1], 4 * 20_001, iterations=2, job=21)
    log_dir = tmp_path / "agents"
    log_dir.mkdir()
    victim = start_agent(lab, 1, path, 1, log_dir)
    # rank 1 binds its ports before it logs iter_start; rank 0 is not started
    log1 = log_dir / "rank1.jsonl"
    end = time.monotonic() + 20
    while not (log1.exists() and "iter_start" in log1.read_text()):
        assert time.monotonic() < end and victim.poll() is None, "rank 1 did not start"
        time.sleep(0.05)
    h0, h1, h2 = (h.ip for h in lab.hosts)
    port = str(spec.data_port)

    def intrude(host, src, kind, job, count):
        r = lab.exec(host, sys.executable, "-c", INTRUDER, src, h1, port, str(job), str(count),
                     kind)
        assert r.returncode == 0, r.stderr

    intrude(2, h2, "data", 21, 30)            # right job, wrong address
    intrude(0, h0, "data", 22, 30)            # right address, wrong job
    intrude(2, h2, "ack", 21, 10)             # ACKs/CNPs not from the successor
    intrude(2, h2, "junk", 21, 25)            # not our packets at all
    time.sleep(0.3)
    proc0 = start_agent(lab, 0, path, 0, log_dir)
    codes = wait_all([proc0, victim], 60)
    assert codes == [0, 0], (log_dir / "rank1.stderr").read_text()
    evs = read_log(log_dir, 1)
    check_records(evs, 2, 2, 1, 21)
    c = [e for e in evs if e["kind"] == "stats"][0]["counters"]
    assert c["drop_peer"] >= 30 + 20, c       # data from h2, ACKs and CNPs from h2
    assert c["drop_job"] >= 30, c
    assert c["drop_truncated"] + c.get("drop_bad_magic", 0) >= 25 - 2, c


def test_peers_starting_at_different_times(lab_factory, tmp_path):
    # the last rank starts first: its first packets go to a rank that is not
    # listening yet, and it retransmits until that rank is up
    n = 3
    lab = lab_factory(n)
    spec, path = make_job(lab, tmp_path, list(range(n)), 4 * 10_001, iterations=2)
    log_dir = tmp_path / "agents"
    log_dir.mkdir()
    procs = []
    for r in reversed(range(n)):
        procs.append(start_agent(lab, r, path, r, log_dir))
        time.sleep(0.7)
    assert wait_all(procs, 60) == [0] * n
    for r in range(n):
        check_records(read_log(log_dir, r), n, 2, r, spec.job)
    first = read_log(log_dir, n - 1)
    assert any(e["kind"] == "retransmit" and e["why"] == "timeout" and e["iter"] == 0
               for e in first)


def test_wrong_result_exits_1(lab_factory, tmp_path):
    # rank 1 reads a job file with another seed: its data is not what rank 0
    # expects, so both sums differ from the references and both ranks say so
    lab = lab_factory(2)
    spec, path = make_job(lab, tmp_path, [0, 1], 4 * 1001, iterations=2, seed=3)
    other = tmp_path / "other"
    other.mkdir()
    _, path1 = make_job(lab, other, [0, 1], 4 * 1001, iterations=2, seed=4)
    log_dir = tmp_path / "agents"
    log_dir.mkdir()
    procs = [start_agent(lab, 0, path, 0, log_dir), start_agent(lab, 1, path1, 1, log_dir)]
    assert wait_all(procs, 60) == [1, 1]
    for r in range(2):
        ends = [e for e in read_log(log_dir, r) if e["kind"] == "iter_end"]
        assert [e["exact"] for e in ends] == [False, False]
