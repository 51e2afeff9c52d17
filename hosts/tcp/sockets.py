"""The TCP transport's sockets: one connection per ring edge, from rank r's
address to rank r+1's data port (so a switch sees the ring flow as
(src, dst, data port), as in UDP mode), ECN on, the step tag in the DSCP.

With the job's DCQCN on, the marks reach the sender as in UDP mode
(hosts.tcp.reaction): the receiver reads the kernel's count of CE-marked
segments, its notification point asks for CNPs, which go over UDP to the
sender's control port (data port + 1), and the sender's reaction point
paces the connection (SO_MAX_PACING_RATE).  With DCQCN off only the
kernel's congestion control reacts to the marks.  A step counts as sent only
when the peer has acknowledged all of it, so no segment of a step is ever
(re)sent under the next step's DSCP.  The transport does not change the
tcp_ecn sysctl; it reports what it got in its counters (ecn_sysctl, ecn_cc,
ecn_negotiated).  docs/hosts.md says why.
"""

from __future__ import annotations

import errno
import fcntl
import select
import socket
import struct
import termios
import time
from collections import defaultdict
from collections.abc import Callable

from contract.lateness import Lateness
from contract.tags import tag_dscp
from hosts import wire
from hosts.dcqcn import ReactionPoint
from hosts.tcp.framing import FrameReader, FramingError, header
from hosts.tcp.reaction import CeNotifier, PacingRate
from hosts.transport import TransportTimeout

CONNECT_RETRY_S = 0.05
DRAIN_POLL_S = 0.001     # how often to look at the output queue at a step's end
RECV_CHUNK = 1 << 18
TCP_INFO_OPTIONS = 5     # offset of tcpi_options in struct tcp_info
TCP_INFO_SND_MSS = 16
TCP_INFO_RTT = 68        # tcpi_rtt (us), then rttvar, snd_ssthresh, snd_cwnd
TCP_INFO_SND_CWND = 80
TCP_INFO_TOTAL_RETRANS = 100
TCP_INFO_DELIVERED_CE = 196   # segments delivered with ECE echoed (Linux 4.18+)
# CE-marked segments this end received: one of the AccECN counters that
# struct tcp_info gained in Linux 6.18 (tcpi_received_ce, after
# tcpi_total_rto_time); an older kernel's struct ends before it
TCP_INFO_RECEIVED_CE = 248
SO_MAX_PACING_RATE = getattr(socket, "SO_MAX_PACING_RATE", 47)
# The congestion control every connection asks for.  cubic reacts to an
# echoed CE (RFC 3168: cwnd x 0.7, at most once per RTT) and every kernel
# has it; the namespace's default need not react at all: bbr, the default
# of the machine this was measured on, ignores ECN, and with it Symphony's
# marks changed nothing in TCP mode (docs/hosts.md, "TCP transport").
CONGESTION_CONTROL = b"cubic"
# without ECN by sysctl, a congestion control that needs ECN asks for it
ECN_CONGESTION_CONTROL = b"dctcp"
CTRL_CHUNK = 2048
TCPI_OPT_ECN = 8         # ECN was negotiated at connection set-up
TCPI_OPT_ECN_SEEN = 16   # at least one ECT packet arrived
ECN_SYSCTL = "/proc/sys/net/ipv4/tcp_ecn"


def tos_for_step(step: int) -> int:
    """IP_TOS for a step's data: the tag in the DSCP bits, ECN left to the kernel."""
    return tag_dscp(step) << 2


def outq_bytes(s: socket.socket) -> int:
    """Bytes the peer has not acknowledged yet (SIOCOUTQ)."""
    return struct.unpack("i", fcntl.ioctl(s.fileno(), termios.TIOCOUTQ, b"\0\0\0\0"))[0]


def tcp_info(s: socket.socket) -> dict[str, int]:
    raw = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, TCP_INFO_DELIVERED_CE + 4)
    if len(raw) < TCP_INFO_TOTAL_RETRANS + 4:
        return {}
    opts = raw[TCP_INFO_OPTIONS]
    info = {"ecn_negotiated": int(bool(opts & TCPI_OPT_ECN)),
            "ecn_seen": int(bool(opts & TCPI_OPT_ECN_SEEN)),
            "total_retrans": struct.unpack_from("I", raw, TCP_INFO_TOTAL_RETRANS)[0],
            "rtt_us": struct.unpack_from("I", raw, TCP_INFO_RTT)[0],
            "snd_cwnd": struct.unpack_from("I", raw, TCP_INFO_SND_CWND)[0]}
    if len(raw) >= TCP_INFO_DELIVERED_CE + 4:
        info["delivered_ce"] = struct.unpack_from("I", raw, TCP_INFO_DELIVERED_CE)[0]
    return info


def received_ce(s: socket.socket) -> int | None:
    """CE-marked segments the connection received; None on a kernel whose
    struct tcp_info lacks the count."""
    raw = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, TCP_INFO_RECEIVED_CE + 4)
    if len(raw) < TCP_INFO_RECEIVED_CE + 4:
        return None
    return struct.unpack_from("I", raw, TCP_INFO_RECEIVED_CE)[0]


def ask_congestion_control(s: socket.socket, ecn_sysctl: int) -> bool:
    """Set the connection's congestion control; True when it is one that
    asks for ECN itself (dctcp, where tcp_ecn is not 1 and the kernel has
    it).  Where the kernel lacks the one asked for, the namespace's default
    stays (the counters name it)."""
    if ecn_sysctl != 1:
        try:
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, ECN_CONGESTION_CONTROL)
            return True
        except OSError:
            pass
    try:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, CONGESTION_CONTROL)
    except OSError:
        pass
    return False


def congestion_control(s: socket.socket) -> str:
    """The connection's congestion control (the namespace's default unless
    the socket asked for another)."""
    name = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, 16)
    return name.split(b"\0", 1)[0].decode("ascii", "replace")


def set_max_pacing_rate(s: socket.socket, bytes_per_s: int) -> None:
    """Cap the connection's sending rate (payload bytes per second).  The
    option turns on TCP's own pacing, which needs no fq qdisc (Linux 4.13+);
    8 bytes, so rates above 2^32 B/s fit."""
    s.setsockopt(socket.SOL_SOCKET, SO_MAX_PACING_RATE, struct.pack("=Q", bytes_per_s))


def snd_mss(s: socket.socket) -> int:
    raw = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, TCP_INFO_SND_MSS + 4)
    return struct.unpack_from("I", raw, TCP_INFO_SND_MSS)[0]


def read_ecn_sysctl() -> int | None:
    try:
        with open(ECN_SYSCTL) as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


class TcpTransport:
    """The Transport of hosts.transport over one TCP connection per ring edge."""

    name = "tcp"

    def __init__(self, *, job: int, rank: int, ips: list[str], data_port: int, params,
                 recv_len: Callable[[int], int | None], log: Callable[..., None],
                 rp=None, np_=None, faults=None):
        n = len(ips)
        self.job, self.rank = job, rank
        self.ip = ips[rank]
        self.data_port = data_port
        self.pred_rank, self.succ_rank = (rank - 1) % n, (rank + 1) % n
        self.pred_ip, self.succ_ip = ips[self.pred_rank], ips[self.succ_rank]
        self.log = log
        self.reader = FrameReader(job, self.pred_rank, recv_len)
        self._counters: dict[str, int] = defaultdict(int)
        self.listener: socket.socket | None = None
        self.inc: socket.socket | None = None        # from the predecessor
        self.out: socket.socket | None = None        # to the successor
        self._connecting = False
        self._next_connect = 0.0
        self._out_broken: str | None = None
        self._in_eof = False
        self._received: dict[int, bytearray] = {}
        self._queue: list[list] = []       # [step, memoryview of header+payload, written]
        self._written: set[int] = set()    # steps fully handed to the kernel
        self._tos_step: int | None = None
        # DCQCN over TCP (hosts.tcp.reaction): with DCQCN off (a FixedRate,
        # or no CNP interval) the socket is left to the kernel as it was
        self.rp = rp
        self._dcqcn = isinstance(rp, ReactionPoint) and getattr(np_, "cnp_interval_s", None) is not None
        self.notifier = CeNotifier(np_, (self.pred_ip, data_port)) if self._dcqcn else None
        self.pacing = PacingRate(rp) if self._dcqcn else None
        self.ctrl: socket.socket | None = None       # CNPs in (sender) and out (receiver)
        self.pred_ctrl = (self.pred_ip, data_port + 1)
        self.late_timer = Lateness()

    # ---- the interface the agent uses ---------------------------------------
    @property
    def counters(self) -> dict:
        c = dict(self._counters)
        if self.out is not None and not self._connecting:
            try:
                c.update(tcp_info(self.out))
            except OSError:
                pass
        return c

    def lateness(self) -> dict:
        """For the agent's stats event: how late the loop ran the reaction
        point's timers (the pacer is the kernel's, so there is no pacing record)."""
        return {"dcqcn_timer": self.late_timer.as_dict()}

    def open(self) -> None:
        """Listen on this rank's data port (OSError if the address is not on
        this host or the port is taken)."""
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind((self.ip, self.data_port))
            s.listen(4)
            s.setblocking(False)
        except BaseException:
            s.close()
            raise
        self.listener = s
        sysctl = read_ecn_sysctl()
        self._counters["ecn_sysctl"] = -1 if sysctl is None else sysctl
        if self._dcqcn:
            self.ctrl = self._control_socket()

    def _control_socket(self) -> socket.socket:
        """The UDP socket CNPs arrive at (the control port, data port + 1, as
        in UDP mode: a switch never counts it as the ring flow) and leave from."""
        c = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            c.bind((self.ip, self.data_port + 1))
            c.setblocking(False)
        except BaseException:
            c.close()
            raise
        return c

    def send(self, step: int, payload) -> None:
        body = memoryview(payload).cast("B")
        hdr = header(self.job, self.rank, step, len(body))
        self._queue.append([step, memoryview(hdr + bytes(body)), 0])

    def wait(self, step: int, deadline: float) -> bytearray:
        if not self._run_until(lambda: self._send_done(step) and step in self._received, deadline):
            raise TransportTimeout(self.waiting_on(step))
        self._written.discard(step)
        return self._received.pop(step)

    def linger(self, idle_s: float, deadline: float) -> None:
        """After the last step: wait a little for the predecessor to close."""
        end = min(deadline, time.monotonic() + idle_s)
        self._run_until(lambda: self._in_eof, end)

    def idle(self, until: float) -> None:
        """While the rank computes: keep reading the predecessor's stream and
        writing what is queued, as the UDP transport keeps acknowledging."""
        self._run_until(lambda: False, until)

    def close(self) -> None:
        for s in (self.out, self.inc, self.listener, self.ctrl):
            if s is not None:
                s.close()
        self.out = self.inc = self.listener = self.ctrl = None

    def waiting_on(self, step: int) -> dict:
        if step not in self._received:
            if self.inc is None and not self._in_eof:
                what = f"a connection from rank {self.pred_rank} ({self.pred_ip})"
            else:
                what = (f"data of step {step} from rank {self.pred_rank} ({self.pred_ip}) over TCP"
                        + (": the connection closed" if self._in_eof else ""))
            return {"waiting_for": "data", "peer": self.pred_rank, "peer_ip": self.pred_ip,
                    "step": step, "what": what}
        if self.out is None or self._connecting:
            what = f"a connection to rank {self.succ_rank} ({self.succ_ip}) port {self.data_port}"
        else:
            what = (f"TCP acknowledgements of step {step} from rank {self.succ_rank} "
                    f"({self.succ_ip})" + (f": {self._out_broken}" if self._out_broken else ""))
        return {"waiting_for": "acks", "peer": self.succ_rank, "peer_ip": self.succ_ip,
                "step": step, "what": what}

    # ---- sending ----------------------------------------------------------------
    def _send_done(self, step: int) -> bool:
        if step not in self._written or self.out is None:
            return False
        try:
            return outq_bytes(self.out) == 0
        except OSError:
            return False

    def _connect(self, now: float) -> None:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            s.setblocking(False)
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            ecn_cc = ask_congestion_control(s, self._counters["ecn_sysctl"])
            if self._counters["ecn_sysctl"] != 1:
                self._counters["ecn_cc"] = int(ecn_cc)
            # the handshake carries the step before the next one to send: a
            # switch takes a flow's newest step from any packet it tags, and
            # a SYN tagged with step 0 told it that a straggler which had sent
            # nothing had reached step 0, so its frontier moved a step early
            # and Symphony marked the leading flows a step late
            before = self._next_step() - 1
            s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, tos_for_step(before))
            self._tos_step = before
            s.bind((self.ip, 0))
            err = s.connect_ex((self.succ_ip, self.data_port))
        except OSError:
            s.close()
            raise
        if err not in (0, errno.EINPROGRESS):
            s.close()
            self._counters["connect_retries"] += 1
            self._next_connect = now + CONNECT_RETRY_S
            return
        self.out, self._connecting = s, True

    def _next_step(self) -> int:
        """The step this connection sends next: the queue's head, else the
        one after the last tagged (0 before any)."""
        if self._queue:
            return self._queue[0][0]
        return self._tos_step + 1 if self._tos_step is not None else 0

    def _connected(self, now: float) -> None:
        err = self.out.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        if err:
            self.out.close()
            self.out, self._connecting = None, False
            self._counters["connect_retries"] += 1
            self._next_connect = now + CONNECT_RETRY_S
            return
        self._connecting = False
        self._counters["connects"] += 1
        self._counters["cc_" + congestion_control(self.out)] = 1
        if self.pacing is not None:
            self.pacing.forget()
            self._apply_rate()

    def _write(self) -> None:
        s = self.out
        while self._queue:
            item = self._queue[0]
            step, data, pos = item
            if pos == 0 and self._tos_step != step:
                # the previous step must be acknowledged in full before the tag changes
                if outq_bytes(s):
                    return
                s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, tos_for_step(step))
                self._tos_step = step
                self._counters["tos_changes"] += 1
            try:
                n = s.send(data[pos:])
            except (BlockingIOError, InterruptedError):
                return
            except OSError as e:
                self._out_broken = e.strerror or str(e)
                self._counters["send_errors"] += 1
                self._queue.clear()
                return
            item[2] = pos + n
            self._counters["tx_bytes"] += n
            if item[2] == len(data):
                self._queue.pop(0)
                self._written.add(step)
                self._counters["tx_msgs"] += 1
            else:
                return

    # ---- receiving --------------------------------------------------------------
    def _accept(self) -> None:
        try:
            conn, (ip, _port) = self.listener.accept()
        except (BlockingIOError, InterruptedError):
            return
        if ip != self.pred_ip or self.inc is not None:
            self._counters["drop_peer"] += 1
            conn.close()
            return
        conn.setblocking(False)
        self.inc = conn
        self._counters["accepts"] += 1
        if self.notifier is not None:
            self.notifier.reset()

    def _read(self) -> None:
        try:
            data = self.inc.recv(RECV_CHUNK)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
            self._counters["recv_errors"] += 1
        if not data:
            self._in_eof = True
            self.inc.close()
            self.inc = None
            return
        self._counters["rx_bytes"] += len(data)
        if self.notifier is not None:
            self._check_marks(time.monotonic())
        try:
            msgs = self.reader.feed(data)
        except FramingError as e:
            self._counters["drop_framing"] += 1
            self.log("error", self.reader.last_step or 0, reason=f"TCP stream from rank "
                     f"{self.pred_rank}: {e}")
            self._in_eof = True
            self.inc.close()
            self.inc = None
            return
        for step, payload in msgs:
            self._received[step] = payload
            self._counters["rx_msgs"] += 1

    # ---- DCQCN over TCP (hosts.tcp.reaction) -------------------------------------
    def _check_marks(self, now: float) -> None:
        """Receiver: new CE marks on the incoming connection may ask for a CNP."""
        count = received_ce(self.inc)
        if count is None:
            # this kernel does not count them: DCQCN gets no CNPs (docs/hosts.md)
            self._counters["ce_uncounted"] = 1
            self.notifier = None
            return
        if self.notifier.on_count(count, now):
            step = self.reader.step or 0
            try:
                self.ctrl.sendto(wire.pack_cnp(self.job, self.rank, step), self.pred_ctrl)
            except OSError:
                self._counters["send_errors"] += 1
                return
            self._counters["tx_cnp"] += 1
            self.log("cnp", step, dir="tx", peer=self.pred_rank)
        self._counters["rx_ce"] = self.notifier.marked

    def _read_ctrl(self, now: float) -> None:
        """Sender: CNPs from the successor, into the reaction point."""
        while True:
            try:
                data, (ip, _port) = self.ctrl.recvfrom(CTRL_CHUNK)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                self._counters["recv_errors"] += 1
                return
            try:
                pkt = wire.parse(data)
            except wire.WireError as e:
                self._counters["drop_" + e.counter] += 1
                continue
            if (not isinstance(pkt, wire.Cnp) or ip != self.succ_ip or pkt.job != self.job
                    or pkt.rank != self.succ_rank):
                self._counters["drop_peer"] += 1
                continue
            self._counters["rx_cnp"] += 1
            self.log("cnp", pkt.step, dir="rx", peer=self.succ_rank)
            self._rp_timers(now)          # a timer event due runs before the CNP
            if self.rp.on_cnp(now):
                self._rate_changed()

    def _rp_timers(self, now: float) -> None:
        """Run the reaction point's timer events that are due, recording how
        late the loop ran them (the fidelity monitors judge it, as UDP's)."""
        due = self.rp.next_event_time()
        if due > now:
            return
        self.late_timer.add(now - due)
        if self.rp.advance(now):
            self._rate_changed()

    def _rate_changed(self) -> None:
        rp = self.rp
        self.log("rate", max(self._tos_step or 0, 0), rc=rp.rate_bps, rt=rp.target_bps, alpha=rp.alpha)
        self._apply_rate()

    def _apply_rate(self) -> None:
        """The reaction point's rate as the connection's pacing rate."""
        if self.out is None or self._connecting:
            return
        try:
            rate = self.pacing.update(snd_mss(self.out))
            if rate is not None:
                set_max_pacing_rate(self.out, rate)
                self._counters["pacing_changes"] += 1
        except OSError:
            self._counters["pacing_errors"] += 1

    # ---- the loop -----------------------------------------------------------------
    def _run_until(self, cond, deadline: float) -> bool:
        while True:
            now = time.monotonic()
            if self.out is None and not self._out_broken and now >= self._next_connect:
                self._connect(now)
            if self.out is not None and not self._connecting and self._queue:
                self._write()
            if cond():
                return True
            if now >= deadline:
                return False
            if self._dcqcn:
                self._rp_timers(now)
                due = self.rp.next_event_time()
            rlist = [s for s in (self.listener, self.inc, self.ctrl) if s is not None]
            wlist = []
            timeout = deadline - now
            if self.out is None and not self._out_broken:
                timeout = min(timeout, max(0.0, self._next_connect - now))
            elif self.out is not None and (self._connecting or self._queue):
                wlist.append(self.out)
            if self.out is not None and not self._connecting and self._written:
                timeout = min(timeout, DRAIN_POLL_S)      # waiting for the last ACKs
            if self._queue and self.out is not None and not self._connecting \
                    and self._queue[0][2] == 0 and self._tos_step != self._queue[0][0]:
                timeout = min(timeout, DRAIN_POLL_S)
            if self._dcqcn:
                timeout = min(timeout, due - now)         # the reaction point's next timer
            r, w, _ = select.select(rlist, wlist, [], max(0.0, timeout))
            now = time.monotonic()
            for s in r:
                if s is self.listener:
                    self._accept()
                elif s is self.inc:
                    self._read()
                elif s is self.ctrl:
                    self._read_ctrl(now)
            if w and self._connecting:
                self._connected(now)
