"""DCQCN over TCP on real sockets.

On loopback (no root): the maximum pacing rate the transport sets holds a
connection to that rate with no fq qdisc, which a cut of the DCQCN rate
relies on.  Between namespaces (root): a 3-rank TCP ring whose edge 0 -> 1
the cemarker harness CE-marks for a while; the receiver counts every mark,
its CNPs come at most one per interval, the sender's rate falls below half
of line rate, the marker sees the flow held to that rate, and the rate
comes back after the marks stop.  Prints the figures (pytest -s, or -rP).
"""

import socket
import sys
import threading
import time
from itertools import pairwise

import pytest

from hosts.job import load_job
from hosts.rank import rate_control
from hosts.tcp.reaction import TCP_WIRE_OVERHEAD, pacing_bytes_per_s
from hosts.tcp.sockets import CONGESTION_CONTROL, set_max_pacing_rate
from tests.harness import REPO
from tests.harness.agentlogs import read_records, wait_for
from tests.harness.cemarker import MarkerLab

MSS = 1448


def drain(conn, got, stop):
    conn.settimeout(0.05)
    while not stop.is_set():
        try:
            data = conn.recv(1 << 16)
        except TimeoutError:
            continue
        if not data:
            return
        got.append((time.monotonic(), len(data)))


def paced_bytes(rate_bps, seconds):
    """Bytes a connection paced at rate_bps (wire bits, hosts.tcp.reaction)
    delivers over loopback in `seconds`, counted from its first 0.1 s on."""
    listener = socket.create_server(("127.0.0.1", 0))
    tx = socket.socket()
    tx.setsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG, MSS)   # loopback's MSS is 64 kB
    tx.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, CONGESTION_CONTROL)
    tx.connect(listener.getsockname())
    conn, _ = listener.accept()
    got, stop = [], threading.Event()
    reader = threading.Thread(target=drain, args=(conn, got, stop))
    reader.start()
    try:
        set_max_pacing_rate(tx, pacing_bytes_per_s(rate_bps, MSS))
        tx.settimeout(0.05)
        t0 = time.monotonic()
        while time.monotonic() - t0 < seconds + 0.1:
            try:
                tx.send(b"\0" * 65536)
            except TimeoutError:
                pass
    finally:
        stop.set()
        reader.join()
        for s in (tx, conn, listener):
            s.close()
    return sum(n for t, n in got if t0 + 0.1 <= t < t0 + 0.1 + seconds)


@pytest.mark.parametrize("rate_bps", [2e6, 8e6])
def test_the_pacing_rate_holds_a_connection_without_fq(rate_bps):
    seconds = 0.6
    got = paced_bytes(rate_bps, seconds)
    want = rate_bps / 8 * MSS / (MSS + TCP_WIRE_OVERHEAD) * seconds
    print(f"\npaced at {rate_bps / 1e6:g} Mbit/s on the wire: {got * 8 / seconds / 1e6:.2f} Mbit/s "
          f"of payload over loopback (expected {want * 8 / seconds / 1e6:.2f})")
    # unpaced, loopback carries gigabits a second
    assert 0.8 * want <= got <= 1.1 * want


# --- a marked ring edge between namespaces --------------------------------------

LINE_MBIT = 20
LINE = LINE_MBIT * 1e6
DATA_PORT = 6100
MARK_S = 0.2


def job_text(ips):
    # DCQCN as the victim configs set it (20 ms periods, the target clamped
    # at each decrease): a loaded 2-core machine wakes a receiver every few
    # ms, so shorter periods let the rate recover between two CNPs
    ranks = "".join(f'\n[[ranks]]\nrank = {r}\nip = "{ip}"\n' for r, ip in enumerate(ips))
    return (f"job = 5\ndata_port = {DATA_PORT}\nmessage_bytes = 1500000\niterations = 6\n"
            f"transport = \"tcp\"\nseed = 3\n{ranks}\n[dcqcn]\npreset = \"emulation\"\n"
            f"line_rate_mbit = {LINE_MBIT}\nstep_ms = 800\ntimer_floor_ms = 20\n"
            f"clamp_target_rate = true\n")


@pytest.mark.root
@pytest.mark.slow
def test_marks_reach_the_tcp_sender_as_cnps_and_its_rate_follows_dcqcn(tmp_path):
    with MarkerLab(3, rate_mbit=LINE_MBIT) as lab:
        (tmp_path / "job.toml").write_text(job_text(lab.ips))
        params = rate_control(load_job(tmp_path / "job.toml"), 0.0)[0].params
        procs = [lab.popen(r, [sys.executable, "-m", "hosts.agent", "--job", str(tmp_path / "job.toml"),
                               "--rank", str(r), "--log-dir", str(tmp_path)], cwd=str(REPO))
                 for r in range(3)]
        wait_for(lambda: any(e["kind"] == "iter_start" and e["iter"] == 1
                             for e in read_records(tmp_path / "rank0.jsonl")), 60, "iteration 1 of rank 0")
        t_on = lab.marker.mark(1.0, src=lab.ips[0], dport=DATA_PORT)
        time.sleep(MARK_S)
        t_off = lab.marker.off()
        codes = [p.wait(timeout=120) for p in procs]
        stats = lab.marker.stats()
    logs = [read_records(tmp_path / f"rank{r}.jsonl") for r in range(3)]
    assert codes == [0, 0, 0], f"agents exited {codes}"
    assert all(e["exact"] for log in logs for e in log if e["kind"] == "iter_end")
    counters = [[e for e in log if e["kind"] == "stats"][-1]["counters"] for log in logs]
    flow = stats["flows"][f"{lab.ips[0]}>{lab.ips[1]}/6/{DATA_PORT}"]

    def s(t):                                   # seconds after the marks went on
        return (t - t_on) / 1e9
    mark_s = s(t_off)
    tx = [s(e["t"]) for e in logs[1] if e["kind"] == "cnp" and e["dir"] == "tx"]
    rx = [s(e["t"]) for e in logs[0] if e["kind"] == "cnp" and e["dir"] == "rx"]
    rates = [(s(e["t"]), e["rc"]) for e in logs[0] if e["kind"] == "rate"]

    # the receiver counted every mark the marker made, and asked for CNPs
    # for the marked flow only, at most one per interval, while marked
    assert counters[1]["rx_ce"] == flow["marked"] > 0
    assert not [e for r in (0, 2) for e in logs[r] if e["kind"] == "cnp" and e["dir"] == "tx"]
    assert len(tx) >= 3 and -0.001 < tx[0] and tx[-1] < mark_s + 0.2
    assert min(b - a for a, b in pairwise(tx)) >= params.cnp_interval_s - 0.5e-3
    assert len(tx) * 0.9 <= len(rx) <= len(tx)
    # the sender's rate fell, was applied to the socket, and came back
    low = min(rc for t, rc in rates if t <= mark_s + 0.2)
    assert low <= LINE / 2
    assert counters[0]["pacing_changes"] > 1 and counters[0][f"cc_{CONGESTION_CONTROL.decode()}"] == 1
    assert rates[-1][1] >= 0.5 * LINE

    # what the marker saw: the flow held to the DCQCN rate once cut
    bin_s = stats["bin_ns"] / 1e9

    def sent_bytes(a, b):
        lo, hi = int((t_on / 1e9 + a) / bin_s), int((t_on / 1e9 + b) / bin_s)
        return sum(v for k, v in flow["bins"].items() if lo <= int(k) < hi)

    def allowed_bytes(a, b, dt=1e-3):         # the DCQCN rate integrated over [a, b)
        total, t = 0.0, a
        while t < b:
            total += [rc for tt, rc in [(-1e9, LINE), *rates] if tt <= t][-1] / 8 * dt
            t += dt
        return total
    t_cut = next(t for t, rc in rates if rc <= LINE / 2)
    assert t_cut < mark_s
    before = sent_bytes(-0.3, 0.0) * 8 / 0.3 / 1e6
    window = (t_cut + 0.02, t_cut + 0.3)          # the rate stays low a while after the marks
    held, allowed = sent_bytes(*window), allowed_bytes(*window)
    print(f"\nTCP edge 0->1 marked for {mark_s * 1e3:.0f} ms at {LINE_MBIT} Mbit/s (emulation preset): "
          f"{flow['marked']} marks, {counters[1]['rx_ce']} counted by the receiver; CNPs sent {len(tx)}, "
          f"received {len(rx)}, first {tx[0] * 1e3:.1f} ms after marks on; lowest rate "
          f"{low / 1e6:.2f} Mbit/s; the marker saw {before:.1f} Mbit/s before, "
          f"{held} bytes in the 0.28 s after the first halving where DCQCN allowed "
          f"{allowed:.0f}; sender's delivered_ce (ECE echoes) {counters[0].get('delivered_ce')}")
    assert before >= 0.5 * LINE / 1e6
    assert held <= 1.3 * allowed + 3 * (MSS + TCP_WIRE_OVERHEAD)
