"""An in-memory ring of UDP endpoints (hosts.udp.endpoint) on a virtual
clock, with delay, loss, duplication and reordering; and a lone endpoint with
a recorder for the packets it sends."""

import heapq
import math
import random

from contract import tags
from hosts import wire
from hosts.dcqcn import FixedRate
from hosts.udp.endpoint import Endpoint
from hosts.udp.params import UdpParams
from hosts.wire import DATA

PORT = 5000


def ip(r):
    return f"10.0.0.{r + 1}"


class Sim:
    """Ring of endpoints; every packet takes `delay` s, some are lost,
    duplicated or delivered late (reordered)."""

    def __init__(self, n, sizes, params=None, delay=0.0005, drop=0.0, dup=0.0,
                 reorder=0.0, seed=1, rate=None, tos=tags.ECN_ECT0, np_factory=None):
        params = UdpParams() if params is None else params
        self.n, self.delay, self.tos = n, delay, tos
        self.drop, self.dup, self.reorder = drop, dup, reorder
        self.rng = random.Random(seed)
        self.now = 0.0
        self.q = []
        self.seq = 0
        self.logs = [[] for _ in range(n)]
        self.eps = []
        for r in range(n):
            out = SimOut(self, r)
            log = (lambda rr: lambda kind, step, **f: self.logs[rr].append((kind, step, f)))(r)
            self.eps.append(Endpoint(job=3, rank=r, pred=((r - 1) % n, ip((r - 1) % n)),
                                     succ=((r + 1) % n, ip((r + 1) % n)), data_port=PORT,
                                     params=params, recv_len=lambda step, r=r: sizes(r, step),
                                     out=out, log=log, rp=FixedRate(rate),
                                     np_=np_factory() if np_factory else None, max_ahead=n + 1))

    def push(self, dst, kind, pkt, src):
        if self.rng.random() < self.drop:
            return
        copies = 2 if self.rng.random() < self.dup else 1
        for _ in range(copies):
            late = self.rng.random() < self.reorder
            t = self.now + self.delay * (3 if late else 1)
            self.seq += 1
            heapq.heappush(self.q, (t, self.seq, dst, kind, bytes(pkt), src))

    def run_until(self, cond, limit=60.0):
        while True:
            for ep in self.eps:
                ep.service(self.now)
            if cond():
                return True
            t = min([ep.next_wakeup(self.now) for ep in self.eps]
                    + ([self.q[0][0]] if self.q else []))
            assert t < math.inf, "nothing left to happen: deadlock"
            if t > limit:
                return False
            self.now = max(self.now, t)
            while self.q and self.q[0][0] <= self.now:
                _, _, dst, kind, pkt, src = heapq.heappop(self.q)
                ep = self.eps[dst]
                if kind == "d":
                    ep.on_data_packet(pkt, len(pkt), src[0], src[1], self.tos, self.now)
                else:
                    ep.on_ctrl_packet(pkt, len(pkt), src[0], src[1], self.now)

    def step(self, step, payloads):
        for r, ep in enumerate(self.eps):
            ep.start_send(step, payloads[r], self.now)
        ok = self.run_until(lambda: all(ep.send_done(step) and ep.recv_done(step)
                                        for ep in self.eps))
        assert ok
        got = []
        for ep in self.eps:
            ep.finish_send(step)
            got.append(bytes(ep.take(step)))
        return got


class SimOut:
    """Rank r's `out`: data to the successor, ACKs/CNPs to the predecessor."""

    def __init__(self, sim, r):
        self.sim, self.r = sim, r

    def data(self, step, hdr, payload):
        s = self.sim
        s.push((self.r + 1) % s.n, "d", bytes(hdr) + bytes(payload),
               (ip(self.r), tags.tag_port(step)))

    def ctrl(self, pkt):
        s = self.sim
        s.push((self.r - 1) % s.n, "c", pkt, (ip(self.r), PORT))


class Recorder:
    """An `out` that keeps what the endpoint sends."""

    def __init__(self):
        self.sent, self.ctrl_pkts = [], []

    def data(self, step, hdr, payload):
        self.sent.append((step, bytes(hdr), bytes(payload)))

    def ctrl(self, pkt):
        self.ctrl_pkts.append(pkt)


def lone_endpoint(size=2800):
    """Rank 1 of job 3 between 10.0.0.1 (rank 0) and 10.0.0.3 (rank 2), steps
    0-3 of `size` bytes, and the Recorder it sends to."""
    out = Recorder()
    ep = Endpoint(job=3, rank=1, pred=(0, "10.0.0.1"), succ=(2, "10.0.0.3"), data_port=PORT,
                  params=UdpParams(), recv_len=lambda s: size if 0 <= s < 4 else None,
                  out=out, log=lambda *a, **k: None)
    return ep, out


def data_packet(job=3, rank=0, step=0, offset=0, payload=b"x" * 1400, version=wire.VERSION,
                magic=wire.MAGIC, length=None):
    """A data packet from rank 0 of job 3 (fields overridable, to damage it)."""
    ln = len(payload) if length is None else length
    return DATA.pack(magic, version, wire.T_DATA, job, rank, step, offset, ln, 0) + payload
