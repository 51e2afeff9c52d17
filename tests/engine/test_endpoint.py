"""The compiled endpoint (engine/src/endpoint.cpp, sender.cpp, receiver.cpp)
against hosts/udp/endpoint.py: a ring of endpoints on the simulation's
virtual clock (experiments/sim/engine.py), joined by a lossy, delaying,
ECN-marking wire written here, run once with the Python endpoints (bytes
through hosts/wire.py) and once with the C++ ones (sym::Pkt descriptors).

The wire's decisions come from one seeded generator drawn a fixed number
of times per packet in the order packets are emitted, so both runs see the
same drops, delays and marks for as long as they emit the same packets.
Each run's trace holds every packet emitted (its time, kind, step, offset,
length, flags, cum, SACK bitmap, echo, frame length, addresses, payload
checksum), every next_wakeup answer, step completions, what reap() and
waiting_on() said, and the linger's end; the runs must give the same
trace, counters, log events, lateness records and DCQCN state, exactly
(the C++ computes in the Python's order in doubles: no tolerance).
"""

from __future__ import annotations

import dataclasses
import math
import random
import zlib
from dataclasses import dataclass

import pytest

import symphony_engine as E
from contract.tags import ECN_CE, ECN_ECT0, control_port, tag_port
from experiments.sim.engine import Engine, Waker
from hosts import wire
from hosts.dcqcn import NotificationPoint, ReactionPoint, make_params
from hosts.udp.endpoint import Endpoint
from hosts.udp.params import UdpParams

JOB, PORT = 7, 5000
IPS = ["10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4"]
HEADERS = 42
UDP = UdpParams(payload_bytes=1000, rto_ms=10.0, window_packets=32, ack_every=4, ack_delay_ms=2.0,
                burst_packets=4, rto_max_ms=200.0)
LINE_BPS = 10e6


@dataclass(frozen=True)
class Wire:
    """Each ring edge's link (both directions share the rate, not the queue):
    serialisation at rate_bps, then delay_s plus up to jitter_s (which
    reorders), random drops, random CE marks, and CE marks / tail drops
    once a direction's backlog passes ce_backlog_s / drop_backlog_s."""
    rate_bps: float = 8e6
    delay_s: float = 0.5e-3
    jitter_s: float = 0.4e-3
    drop_data: float = 0.02
    drop_tail: float = 0.0          # extra drop chance for a step's last 3 packets (tail losses)
    drop_ctrl: float = 0.02
    ce: float = 0.02
    ce_backlog_s: float = 3e-3
    drop_backlog_s: float = 30e-3
    seed: int = 1


@dataclass(frozen=True)
class Scenario:
    ranks: int = 3
    steps: int = 6
    wire: Wire = Wire()
    dcqcn: str | None = "emulation"     # None: DCQCN off (unpaced, FixedRate(None))
    keep: bool = True
    udp: UdpParams = UDP
    linger_s: float = 0.05


def msg_size(rank: int, step: int) -> int:
    # not a multiple of the payload size, different every step
    return 1000 * (12 + (rank * 7 + step * 5) % 17) + (rank * 131 + step * 37) % 1000


def payload(rank: int, step: int) -> bytes:
    return random.Random(f"{rank}/{step}").randbytes(msg_size(rank, step))


def dcqcn_pair(sc: Scenario, now: float, compiled: bool):
    if sc.dcqcn is None:
        return (E.FixedRate(None), E.NotificationPoint(None)) if compiled else (None, None)
    p = make_params(sc.dcqcn, LINE_BPS, 0.02, 1e-3)
    if compiled:
        return E.ReactionPoint(E.DcqcnParams(**dataclasses.asdict(p)), now), E.NotificationPoint(p.cnp_interval_s)
    return ReactionPoint(p, now), NotificationPoint(p.cnp_interval_s)


def _addr(rank: int, n: int, kind: str, step: int) -> tuple:
    """The frame's addresses as experiments/sim/host.py's SimTransport frames them."""
    if kind == "data":
        return IPS[rank], IPS[(rank + 1) % n], tag_port(step), PORT, ECN_ECT0
    return IPS[rank], IPS[(rank - 1) % n], PORT, control_port(PORT), 0


# --- the two endpoints behind one face ---------------------------------------------

class PyAdapter:
    """hosts.udp.endpoint.Endpoint; its `out` and `log` collect what it emits."""

    def __init__(self, sc: Scenario, rank: int):
        n = sc.ranks
        self.sc, self.rank, self.n = sc, rank, n
        self.pred, self.succ = (rank - 1) % n, (rank + 1) % n
        self.rp, self.np = dcqcn_pair(sc, 0.0, compiled=False)
        self.ep = Endpoint(job=JOB, rank=rank, pred=(self.pred, IPS[self.pred]), succ=(self.succ, IPS[self.succ]),
                           data_port=PORT, params=sc.udp, recv_len=self.recv_len, out=self, log=self.log,
                           rp=self.rp, np_=self.np, max_ahead=n + 1, keep=sc.keep)
        self.now = 0.0
        self.outq: list = []
        self.logs: list = []

    def recv_len(self, step: int) -> int | None:
        return msg_size(self.pred, step) if step < self.sc.steps else None

    # Endpoint's out and log
    def data(self, step, hdr, pay) -> None:
        buf = bytes(hdr) + bytes(pay)
        d = wire.parse(buf)
        crc = zlib.crc32(buf[wire.DATA.size:]) if self.sc.keep else None
        rec = ("data", self.rank, d.step, d.offset, d.length, d.flags, HEADERS + len(buf), crc,
               _addr(self.rank, self.n, "data", step))
        self.outq.append((rec, buf))

    def ctrl(self, pkt) -> None:
        pkt = bytes(pkt)
        p = wire.parse(pkt)
        addr = _addr(self.rank, self.n, "ctrl", p.step)
        if type(p) is wire.Ack:
            rec = ("ack", self.rank, p.step, p.cum, p.flags, p.echo, p.sack, HEADERS + len(pkt), addr)
        else:
            rec = ("cnp", self.rank, p.step, HEADERS + len(pkt), addr)
        self.outq.append((rec, pkt))

    def log(self, kind, step, **f) -> None:
        self.logs.append((kind, step, self.now, f))

    # the harness's side
    def send(self, step: int) -> None:
        data = payload(self.rank, step) if self.sc.keep else bytes(msg_size(self.rank, step))
        self.ep.start_send(step, data, self.now)

    def drain(self) -> list:
        out, self.outq = self.outq, []
        return out

    def deliver(self, rec, obj, tos: int) -> None:
        if rec[0] == "data":
            self.ep.on_data_packet(obj, len(obj), IPS[self.pred], tag_port(rec[2]), tos, self.now)
        else:
            self.ep.on_ctrl_packet(obj, len(obj), IPS[self.succ], PORT, self.now)

    def take(self, step: int):
        got = self.ep.take(step)
        return bytes(got) if self.sc.keep else len(got)

    def drain_log(self) -> list:
        out, self.logs = self.logs, []
        return out

    def lateness(self) -> dict:
        return self.ep.sender.lateness()

    def np_state(self) -> tuple:
        def keyed(d):
            return {(E.ip_int(ip) << 16) | port: v for (ip, port), v in d.items()}
        np_ = self.ep.receiver.np
        return keyed(np_.packets), keyed(np_.ce_packets), keyed(np_.cnps)

    def rp_state(self) -> tuple:
        rp = self.ep.sender.rp
        if not hasattr(rp, "cnps"):
            return "fixed", rp.rate_bps or 0.0
        return rp.rate_bps, rp.target_bps, rp.alpha, rp.next_event_time(), rp.cnps, rp.decreases, rp.increases


class CppAdapter(PyAdapter):
    """symphony_engine.Endpoint; its packets wait in its outbox (no hook set)."""

    def __init__(self, sc: Scenario, rank: int):
        n = sc.ranks
        self.sc, self.rank, self.n = sc, rank, n
        self.pred, self.succ = (rank - 1) % n, (rank + 1) % n
        self.rp, self.np = dcqcn_pair(sc, 0.0, compiled=True)
        self.ep = E.Endpoint(job=JOB, rank=rank, pred=(self.pred, IPS[self.pred]),
                             succ=(self.succ, IPS[self.succ]), data_port=PORT, params=cpp_udp(sc.udp),
                             recv_len=self.recv_len, rp=self.rp, np_=self.np, max_ahead=n + 1, keep=sc.keep,
                             ip=IPS[rank])
        self.now = 0.0

    def send(self, step: int) -> None:
        if self.sc.keep:
            self.ep.start_send(step, payload(self.rank, step), self.now)
        else:
            self.ep.start_send(step, msg_size(self.rank, step), self.now)

    def drain(self) -> list:
        out = []
        for p in self.ep.drain_out():
            addr = (dotted(p.src_ip), dotted(p.dst_ip), p.sport, p.dport, p.tos)
            if p.kind == E.Kind.Data:
                body = E.pkt_payload(p)
                crc = None if body is None else zlib.crc32(body)
                rec = ("data", p.rank, p.step, p.offset, p.length, p.flags, p.len, crc, addr)
            elif p.kind == E.Kind.Ack:
                rec = ("ack", p.rank, p.step, p.cum, p.flags, p.echo, E.pkt_sack(p), p.len, addr)
            else:
                rec = ("cnp", p.rank, p.step, p.len, addr)
            out.append((rec, p))
        return out

    def deliver(self, rec, obj, tos: int) -> None:
        if rec[0] == "data":
            obj.tos = tos
            self.ep.on_data(obj, self.now)
        else:
            self.ep.on_ctrl(obj, self.now)

    def take(self, step: int):
        return self.ep.take(step)

    def drain_log(self) -> list:
        return self.ep.drain_log()

    def lateness(self) -> dict:
        return self.ep.lateness()

    def np_state(self) -> tuple:
        return dict(self.np.packets), dict(self.np.ce_packets), dict(self.np.cnps)

    def rp_state(self) -> tuple:
        rp = self.rp
        if not hasattr(rp, "cnps"):
            return "fixed", rp.rate_bps
        return rp.rate_bps, rp.target_bps, rp.alpha, rp.next_event_time(), rp.cnps, rp.decreases, rp.increases


def cpp_udp(p: UdpParams) -> E.UdpParams:
    return E.UdpParams(**dataclasses.asdict(p))


def dotted(ip: int) -> str:
    return ".".join(str((ip >> s) & 255) for s in (24, 16, 8, 0))


# --- the wire and the ranks' loops ------------------------------------------------------

class Net:
    """The ring's links; every packet draws the same four numbers."""

    def __init__(self, engine: Engine, sc: Scenario, ranks: list, trace: list):
        self.engine, self.sc, self.w, self.ranks, self.trace = engine, sc, sc.wire, ranks, trace
        self.rng = random.Random(sc.wire.seed)
        self.free_at: dict[tuple[int, int], float] = {}

    def send(self, src: int, rec: tuple, obj) -> None:
        w, now, n = self.w, self.engine.now, self.sc.ranks
        u_drop, u_tail, u_ce, u_jit = (self.rng.random() for _ in range(4))
        data = rec[0] == "data"
        dst = (src + 1) % n if data else (src - 1) % n
        link = (src, dst)
        start = max(now, self.free_at.get(link, 0.0))
        backlog = start - now
        tail = data and rec[3] >= msg_size(src, rec[2]) - 3 * self.sc.udp.payload_bytes
        if backlog > w.drop_backlog_s or u_drop < (w.drop_data if data else w.drop_ctrl) \
                or (tail and u_tail < w.drop_tail):
            self.trace.append(("lost", now, rec[:3]))
            return
        done = start + _frame_len(rec) * 8 / w.rate_bps
        self.free_at[link] = done
        tos = ECN_ECT0
        if data and (u_ce < w.ce or backlog > w.ce_backlog_s):
            tos = ECN_CE
        self.engine.at(done + w.delay_s + u_jit * w.jitter_s, self.ranks[dst].arrive, rec, obj, tos)


def _frame_len(rec: tuple) -> int:
    return rec[{"data": 6, "ack": 7, "cnp": 3}[rec[0]]]


class RankLoop:
    """What experiments/sim/host.py's SimTransport and ranks.py do around an
    endpoint: service after every arrival and wake-up, the ring's steps one
    after the other (a little compute between them), then the linger."""

    def __init__(self, engine: Engine, sc: Scenario, a: PyAdapter, trace: list):
        self.engine, self.sc, self.a, self.trace = engine, sc, a, trace
        self.net: Net | None = None
        self.waker = Waker(engine, self.service)
        self.waiting: int | None = None
        self.linger_since: float | None = None
        self.closed = False

    def begin(self, step: int) -> None:
        a, now = self.a, self.engine.now
        a.now = now
        self.trace.append(("reap", a.rank, now, a.ep.reap()))
        self.trace.append(("waiting_on", a.rank, now, a.ep.waiting_on(step)))
        a.send(step)
        self.waiting = step
        self.service(now)

    def arrive(self, rec, obj, tos: int) -> None:
        if self.closed:
            return
        now = self.engine.now
        self.a.now = now
        self.a.deliver(rec, obj, tos)
        self.flush()
        self.service(now)

    def flush(self) -> None:
        for rec, obj in self.a.drain():
            self.trace.append(("tx", self.engine.now, rec))
            self.net.send(self.a.rank, rec, obj)

    def service(self, now: float) -> None:
        if self.closed:
            return
        a, ep = self.a, self.a.ep
        a.now = now
        ep.service(now)
        self.flush()
        t = ep.next_wakeup(now)
        self.trace.append(("wake", a.rank, now, t))
        if self.waiting is not None and ep.step_complete(self.waiting):
            self.step_done(now)
        elif self.linger_since is not None:
            quiet = ep.quiet_at(self.linger_since, self.sc.linger_s)
            if now >= quiet:
                self.closed = True
                self.trace.append(("closed", a.rank, now))
                return
            t = min(t, quiet)
        if t < math.inf:
            self.waker.wake_at(t)

    def step_done(self, now: float) -> None:
        a, step = self.a, self.waiting
        self.waiting = None
        got = a.take(step)
        want = payload(a.pred, step) if self.sc.keep else msg_size(a.pred, step)
        assert got == want, f"rank {a.rank} step {step}: the bytes taken differ from those sent"
        self.trace.append(("step", a.rank, step, now))
        if step + 1 < self.sc.steps:
            compute = 1e-3 * ((a.rank * 3 + step) % 4)      # ranks drift out of step
            self.engine.at(now + compute, self.begin, step + 1)
        else:
            self.engine.at(now, self.linger)

    def linger(self) -> None:
        self.linger_since = self.engine.now
        self.service(self.engine.now)


def run(sc: Scenario, adapter, until: float = 30.0) -> dict:
    engine = Engine()
    trace: list = []
    loops = [RankLoop(engine, sc, adapter(sc, r), trace) for r in range(sc.ranks)]
    net = Net(engine, sc, loops, trace)
    for i, lp in enumerate(loops):
        lp.net = net
        engine.at(0.002 * i, lp.begin, 0)         # ranks start apart, as agents do
    engine.run(until)
    return {
        "trace": trace,
        "counters": [dict(lp.a.ep.counters) for lp in loops],
        "log": [lp.a.drain_log() for lp in loops],
        "lateness": [lp.a.lateness() for lp in loops],
        "np": [lp.a.np_state() for lp in loops],
        "rp": [lp.a.rp_state() for lp in loops],
        "waiting_on": [lp.a.ep.waiting_on(sc.steps) for lp in loops],
        "closed": [lp.closed for lp in loops],
    }


def assert_same(py: dict, cpp: dict) -> None:
    """Compare part by part, the trace up to its first difference, so a
    failure names what diverged and when rather than dumping both runs."""
    for i, (a, b) in enumerate(zip(py["trace"], cpp["trace"], strict=False)):
        assert b == a, f"trace row {i}: C++ {b!r} against Python {a!r}; before it: {py['trace'][max(0, i - 5):i]!r}"
    assert len(cpp["trace"]) == len(py["trace"])
    for key in ("counters", "log", "lateness", "np", "rp", "waiting_on", "closed"):
        assert cpp[key] == py[key], key


SCENARIOS = {
    "lossy_dcqcn": Scenario(wire=Wire(drop_data=0.05, drop_tail=0.3, drop_ctrl=0.05, seed=3)),
    "reorder_marks": Scenario(ranks=2, steps=8, wire=Wire(jitter_s=2e-3, drop_data=0.01, ce=0.1, seed=5)),
    "congested": Scenario(ranks=4, steps=4, wire=Wire(rate_bps=5e6, drop_data=0.0, drop_ctrl=0.0, ce=0.0,
                                                      ce_backlog_s=1e-3, drop_backlog_s=8e-3, seed=7)),
    "dcqcn_off_unpaced": Scenario(dcqcn=None, wire=Wire(drop_data=0.04, drop_tail=0.2, drop_backlog_s=10e-3,
                                                         seed=11)),
    "no_data_kept": Scenario(keep=False, wire=Wire(drop_data=0.03, seed=13)),
    "paper_small_window": Scenario(dcqcn="paper", udp=dataclasses.replace(UDP, window_packets=6, ack_every=2),
                                   wire=Wire(drop_data=0.03, drop_tail=0.2, ce=0.05, seed=17)),
}
# more seeds of a mixed wire: other drop, reorder and mark patterns of the same rules
SCENARIOS.update({
    f"mixed_seed{seed}": Scenario(ranks=2 + seed % 3, steps=5,
                                  wire=Wire(drop_data=0.04, drop_tail=0.25, drop_ctrl=0.04, jitter_s=1.5e-3,
                                            ce=0.05, seed=seed))
    for seed in range(21, 27)
})


@pytest.fixture(scope="module")
def runs() -> dict:
    return {name: (run(sc, PyAdapter), run(sc, CppAdapter)) for name, sc in SCENARIOS.items()}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_same_run_as_the_python(runs, name):
    py, cpp = runs[name]
    assert_same(py, cpp)
    sc = SCENARIOS[name]
    steps = [row for row in py["trace"] if row[0] == "step"]
    assert len(steps) == sc.ranks * sc.steps, "every rank completed every step"
    assert all(py["closed"]), "every rank lingered and left"


def _total(run: dict, key: str) -> int:
    return sum(c.get(key, 0) for c in run["counters"])


def test_the_runs_exercise_every_rule(runs):
    """Agreement means little on a run that never lost a packet: the
    scenarios between them time out, fill gaps, probe tails, reorder,
    mark, cut rates and re-ack duplicates (in the C++ run itself)."""
    cpp = {name: r[1] for name, r in runs.items()}
    lossy = cpp["lossy_dcqcn"]
    for key in ("retransmit_timeout", "retransmit_gap", "retransmit_probe", "rx_ce", "tx_cnp", "rx_cnp",
                "dup_data", "rtt_samples"):
        assert _total(lossy, key) > 0, key
    assert any(kind == "rate" for log in lossy["log"] for kind, *_ in log)
    assert any(f.get("why") == "probe" for log in lossy["log"] for kind, _, _, f in log)
    assert _total(cpp["congested"], "rx_ce") > 0 and _total(cpp["congested"], "tx_cnp") > 0
    assert _total(cpp["dcqcn_off_unpaced"], "rx_ce") > 0 and _total(cpp["dcqcn_off_unpaced"], "tx_cnp") == 0
    assert any(row[0] == "ack" and row[6] for _, _, row in (r for r in cpp["reorder_marks"]["trace"]
                                                            if r[0] == "tx")), "an ACK carried a SACK bitmap"
    late = lossy["lateness"][0]
    assert late["pacing"]["n"] > 0 and late["dcqcn_timer"]["n"] > 0


# --- drops by job, peer, port and offset ---------------------------------------------------

def test_drop_counters_match():
    """Packets an endpoint must refuse, each made for both: the Python as
    bytes, the C++ as descriptors with the same fields."""
    sc = Scenario(ranks=3, steps=2)
    py, cpp = PyAdapter(sc, 1), CppAdapter(sc, 1)
    pred, succ = IPS[0], IPS[2]

    def pkt(kind, *, job=JOB, rank=0, step=0, offset=0, length=1000, flags=0, cum=0, src=pred, sport=None):
        p = E.Pkt()
        p.kind, p.job, p.rank, p.step = kind, job, rank, step
        p.offset, p.length, p.flags, p.cum = offset, length, flags, cum
        p.src_ip, p.tos = E.ip_int(src), ECN_ECT0
        p.sport = tag_port(step) if sport is None else sport
        return p

    cases = [  # (port, python bytes, python source ip, python source port, C++ descriptor)
        ("data", wire.pack_data_header(JOB + 1, 0, 0, 0, 1000) + bytes(1000), pred, tag_port(0),
         pkt(E.Kind.Data, job=JOB + 1)),
        ("data", wire.pack_data_header(JOB, 2, 0, 0, 1000) + bytes(1000), pred, tag_port(0),
         pkt(E.Kind.Data, rank=2)),
        ("data", wire.pack_data_header(JOB, 0, 0, 0, 1000) + bytes(1000), IPS[3], tag_port(0),
         pkt(E.Kind.Data, src=IPS[3])),
        ("data", wire.pack_data_header(JOB, 0, 0, 0, 1000) + bytes(1000), pred, tag_port(1),
         pkt(E.Kind.Data, sport=tag_port(1))),
        ("data", wire.pack_data_header(JOB, 0, 0, 0, 1000) + bytes(1000), pred, 4000,
         pkt(E.Kind.Data, sport=4000)),
        ("data", wire.pack_data_header(JOB, 0, 9, 0, 1000) + bytes(1000), pred, tag_port(9),
         pkt(E.Kind.Data, step=9)),
        ("data", wire.pack_data_header(JOB, 0, 0, 500, 1000) + bytes(1000), pred, tag_port(0),
         pkt(E.Kind.Data, offset=500)),
        ("data", wire.pack_data_header(JOB, 0, 0, 0, 999) + bytes(999), pred, tag_port(0),
         pkt(E.Kind.Data, length=999)),
        ("data", wire.pack_ack(JOB, 0, 0, 0), pred, PORT, pkt(E.Kind.Ack)),
        ("ctrl", wire.pack_data_header(JOB, 2, 0, 0, 1000) + bytes(1000), succ, PORT,
         pkt(E.Kind.Data, rank=2, src=succ)),
        ("ctrl", wire.pack_ack(JOB + 1, 2, 0, 0), succ, PORT, pkt(E.Kind.Ack, job=JOB + 1, rank=2, src=succ)),
        ("ctrl", wire.pack_ack(JOB, 0, 0, 0), succ, PORT, pkt(E.Kind.Ack, rank=0, src=succ)),
        ("ctrl", wire.pack_cnp(JOB, 2, 0), pred, PORT, pkt(E.Kind.Cnp, rank=2, src=pred)),
        ("ctrl", wire.pack_ack(JOB, 2, 5, 0), succ, PORT, pkt(E.Kind.Ack, rank=2, step=5, src=succ)),
    ]
    py.send(0)
    cpp.send(0)
    cases.append(("ctrl", wire.pack_ack(JOB, 2, 0, 500), succ, PORT,
                  pkt(E.Kind.Ack, rank=2, cum=500, src=succ)))           # cum not on a packet boundary
    for port, buf, src, sport, desc in cases:
        if port == "data":
            py.ep.on_data_packet(buf, len(buf), src, sport, ECN_ECT0, 0.0)
            cpp.ep.on_data(desc, 0.0)
        else:
            py.ep.on_ctrl_packet(buf, len(buf), src, sport, 0.0)
            cpp.ep.on_ctrl(desc, 0.0)
    want = {"drop_job": 2, "drop_peer": 4, "drop_tag": 2, "drop_step": 1, "drop_offset": 2,
            "drop_misdirected": 2, "stale_ack": 1, "drop_bad_ack": 1}
    assert dict(py.ep.counters) == want          # the cases hit what they are meant to
    assert dict(cpp.ep.counters) == want
    assert py.drain() == [] and cpp.drain() == []


# --- data kept exactly -------------------------------------------------------------------------

def test_bytes_taken_are_those_sent():
    """One step through a reordering wire with duplicates: the receiver's
    buffer holds each packet's bytes at its offset, whatever the order."""
    sc = Scenario(ranks=2, steps=1)
    tx, rx = CppAdapter(sc, 0), CppAdapter(sc, 1)
    tx.send(0)
    tx.ep.service(0.0)
    first = tx.ep.drain_out()
    rx.ep.on_data(first[0], 0.0)
    rx.ep.service(0.01)                            # its delayed ACK opens the window
    for ack in rx.ep.drain_out():
        tx.ep.on_ctrl(ack, 0.01)
    pkts, t = [], 0.01
    while not tx.ep.sent_all(0) and t < 1.0:
        tx.ep.service(t)
        pkts += tx.ep.drain_out()
        t += 0.001
    order = list(reversed(pkts)) + pkts[::3]        # reversed, then duplicates
    for p in order:
        rx.ep.on_data(p, t)
    assert rx.ep.step_complete(0) is False          # rank 1 has not sent its own step yet
    assert rx.ep.recv_done(0)
    assert rx.take(0) == payload(0, 0)
    with pytest.raises(ValueError):
        rx.take(0)                                  # taken once, in order


def test_take_refuses_as_the_python():
    sc = Scenario(ranks=2, steps=2)
    for a in (PyAdapter(sc, 0), CppAdapter(sc, 0)):
        with pytest.raises(ValueError):
            a.ep.take(1)                            # out of order
        with pytest.raises(KeyError):
            a.ep.take(0)                            # nothing received
        a.send(0)
        with pytest.raises(ValueError):
            a.send(0)                               # already being sent

