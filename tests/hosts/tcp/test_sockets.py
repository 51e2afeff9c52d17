"""The TCP transport's sockets: the step tag in the DSCP, then a 3-rank
AllReduce over TCP between namespaces with the tag read off the wire by the
cemarker harness."""

import json
import subprocess
import sys

import pytest

from contract.tags import tag_dscp
from hosts.tcp.sockets import CONGESTION_CONTROL, tos_for_step
from tests.harness import REPO
from tests.harness.cemarker import MarkerLab


def test_tos_carries_the_tag_in_dscp_and_leaves_ecn_to_the_kernel():
    for step in (0, 1, 63, 64, 1000):
        tos = tos_for_step(step)
        assert tos >> 2 == tag_dscp(step) and tos & 0b11 == 0


def job_text(ips, iterations):
    ranks = "".join(f'\n[[ranks]]\nrank = {r}\nip = "{ip}"\n' for r, ip in enumerate(ips))
    return (f"job = 4\ndata_port = 6000\nmessage_bytes = 600000\niterations = {iterations}\n"
            f"transport = \"tcp\"\nseed = 9\n{ranks}\n[dcqcn]\npreset = \"off\"\n")


def run_ring(lab, tmp_path, iterations, mark=None):
    (tmp_path / "job.toml").write_text(job_text(lab.ips, iterations))
    if mark:
        lab.marker.mark(mark, dport=6000)
    repo = str(REPO)
    procs = [lab.popen(r, [sys.executable, "-m", "hosts.agent", "--job", str(tmp_path / "job.toml"),
                           "--rank", str(r), "--log-dir", str(tmp_path)], cwd=repo)
             for r in range(3)]
    codes = [p.wait(timeout=120) for p in procs]
    logs = [[json.loads(line) for line in (tmp_path / f"rank{r}.jsonl").read_text().splitlines()]
            for r in range(3)]
    return codes, logs, lab.marker.stats()


@pytest.mark.root
def test_allreduce_over_tcp_is_exact_and_dscp_carries_the_step(tmp_path):
    iterations, n = 3, 3
    steps = iterations * 2 * (n - 1)
    with MarkerLab(n, rate_mbit=50) as lab:
        codes, logs, stats = run_ring(lab, tmp_path, iterations, mark=0.05)
        ips = lab.ips
    assert codes == [0, 0, 0], f"agents exited {codes}"
    ends = [e for log in logs for e in log if e["kind"] == "iter_end"]
    assert len(ends) == n * iterations and all(e["exact"] for e in ends)
    for r in range(n):
        flow = stats["flows"][f"{ips[r]}>{ips[(r + 1) % n]}/6/6000"]
        # every data segment of the edge carried its step's tag, steps in order
        assert flow["dscp_seq"] == [tag_dscp(s) for s in range(steps)], flow["dscp_seq"]
        # the handshake carries the step before the first: a switch that read
        # step 0 off a SYN would count a flow that has sent nothing as started
        assert flow["syn_dscp"] == tag_dscp(-1)
        assert flow["ect"] > 0            # ECN negotiated: data segments are ECT
        assert flow["marked"] > 0         # and the marker's CE reached them
        # the kernels reacted: the receiver echoed ECE, the sender answered CWR
        acks = [f for k, f in stats["flows"].items()
                if k.startswith(f"{ips[(r + 1) % n]}>{ips[r]}/6/")]
        assert sum(f["ece"] for f in acks) > 0 and flow["cwr"] > 0
        counters = [e for e in logs[r] if e["kind"] == "stats"][-1]["counters"]
        assert counters["ecn_sysctl"] == 1 and counters["ecn_negotiated"] == 1
        assert counters["tos_changes"] == steps      # one per step, the first from the handshake's tag
        # a congestion control that reacts to ECE, whatever the namespace's
        # default (bbr ignores it); DCQCN off: no CNPs, no pacing of ours
        assert counters[f"cc_{CONGESTION_CONTROL.decode()}"] == 1
        assert "pacing_changes" not in counters and "tx_cnp" not in counters


@pytest.mark.root
def test_missing_successor_is_a_deadline_naming_the_connection(tmp_path):
    with MarkerLab(2) as lab:
        # rank 1 never starts: rank 0 can neither connect nor be connected to
        text = job_text(lab.ips, 1) + "\n[deadlines]\nstep_s = 1.5\nrun_s = 5.0\n"
        (tmp_path / "job.toml").write_text(text)
        repo = str(REPO)
        proc = lab.popen(0, [sys.executable, "-m", "hosts.agent", "--job", str(tmp_path / "job.toml"),
                             "--rank", "0", "--log-dir", str(tmp_path)], cwd=repo,
                         stderr=subprocess.PIPE, text=True)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 3, err
    (error,) = [json.loads(x) for x in (tmp_path / "rank0.jsonl").read_text().splitlines()
                if json.loads(x)["kind"] == "error"]
    assert "connection" in error["reason"] and lab.ips[1] in error["reason"], error["reason"]
