"""The UDP transport's sockets: the I/O around the pure Endpoint.

Data leaves from a socket bound to tag_port(step), with SO_REUSEADDR so two
jobs on one host share the tags, and ECT(0) in the TOS byte; the data socket
reads the TOS byte of every packet (IP_RECVTOS), so the receiver sees CE
marks; ACKs and CNPs go to the sender's control port (data port + 1).
"""

from __future__ import annotations

import select
import socket
import time
from collections.abc import Callable

from contract import tags
from contract.tags import control_port, tag_port
from hosts.transport import TransportTimeout
from hosts.udp.endpoint import Endpoint
from hosts.udp.faults import FaultInjector
from hosts.udp.params import FaultParams, UdpParams

IPTOS_ECT0 = tags.ECN_ECT0
SO_RCVBUFFORCE = getattr(socket, "SO_RCVBUFFORCE", 33)
RCVBUF_BYTES = 4 << 20
SO_SNDBUFFORCE = getattr(socket, "SO_SNDBUFFORCE", 32)
SNDBUF_BYTES = 1 << 20


class _Out:
    """Where the endpoint's packets leave: data from the step's tagged socket to
    the successor's data port, ACKs/CNPs from the data socket to the
    predecessor's control port.  A send that fails is a lost packet."""

    def __init__(self, tr: UdpTransport):
        self.tr = tr

    def data(self, step: int, hdr: bytes, payload) -> None:
        tr = self.tr
        try:
            tr.tag_socket(step).sendmsg([hdr, payload], (), 0, tr.succ_data_addr)
        except OSError:
            tr.ep.counters["send_errors"] += 1

    def ctrl(self, pkt: bytes) -> None:
        tr = self.tr
        try:
            tr.dsock.sendto(pkt, tr.pred_ctrl_addr)
        except OSError:
            tr.ep.counters["send_errors"] += 1


class UdpTransport:
    """The Transport of hosts.transport over UDP: an Endpoint driven by
    select() on the data and control sockets and the monotonic clock."""

    name = "udp"

    def __init__(self, *, job: int, rank: int, ips: list[str], data_port: int, params: UdpParams,
                 recv_len: Callable[[int], int | None], log: Callable[..., None],
                 rp=None, np_=None, faults: FaultParams | None = None):
        n = len(ips)
        self.ip = ips[rank]
        self.data_port = data_port
        pred, succ = (rank - 1) % n, (rank + 1) % n
        self.succ_data_addr = (ips[succ], data_port)
        self.pred_ctrl_addr = (ips[pred], control_port(data_port))
        self.ep = Endpoint(job=job, rank=rank, pred=(pred, ips[pred]), succ=(succ, ips[succ]),
                           data_port=data_port, params=params, recv_len=recv_len, out=_Out(self),
                           log=log, rp=rp, np_=np_, max_ahead=n + 1)
        self.faults = faults if faults is not None and faults.active else None
        self._inj: dict = {}
        self._tag_socks: dict[int, socket.socket] = {}
        self.dsock: socket.socket | None = None
        self.csock: socket.socket | None = None
        self._rx = bytearray(65536)
        self._rxmv = memoryview(self._rx)
        self._anc = socket.CMSG_SPACE(4)

    @property
    def counters(self) -> dict:
        return self.ep.counters

    def lateness(self) -> dict:
        """How late the loop ran the pacer and DCQCN's timers (the stats
        event's ``lateness``, contract.events)."""
        return self.ep.sender.lateness()

    # ---- sockets ------------------------------------------------------------
    def _udp(self, port: int, reuse: bool = False) -> socket.socket:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            if reuse:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind((self.ip, port))
            s.setblocking(False)
        except BaseException:
            s.close()
            raise
        return s

    def open(self) -> None:
        """Bind the data and control ports on this rank's address (OSError if
        the address is not on this host or a port is taken)."""
        self.dsock = self._udp(self.data_port)
        self.csock = self._udp(control_port(self.data_port))
        self.dsock.setsockopt(socket.IPPROTO_IP, socket.IP_RECVTOS, 1)
        for s in (self.dsock, self.csock):
            try:     # a deep buffer: up to 9 agents share 2 cores
                s.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, RCVBUF_BYTES)
            except OSError:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RCVBUF_BYTES)
        if self.faults:
            salt = 2 * self.ep.rank    # each rank and socket draws its own sequence
            self._inj = {"d": FaultInjector(self.faults, self.ep.counters, salt),
                         "c": FaultInjector(self.faults, self.ep.counters, salt + 1)}

    def tag_socket(self, step: int) -> socket.socket:
        s = self._tag_socks.get(step)
        if s is None:
            s = self._udp(tag_port(step), reuse=True)
            s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, IPTOS_ECT0)
            # packets waiting in a rate-limited qdisc count against the send
            # buffer; the default (~90 full packets) fills and drops sends
            try:
                s.setsockopt(socket.SOL_SOCKET, SO_SNDBUFFORCE, SNDBUF_BYTES)
            except OSError:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SNDBUF_BYTES)
            self._tag_socks[step] = s
        return s

    def close(self) -> None:
        for s in [self.dsock, self.csock, *self._tag_socks.values()]:
            if s is not None:
                s.close()
        self._tag_socks.clear()
        self.dsock = self.csock = None

    # ---- the interface the agent uses ---------------------------------------
    def send(self, step: int, payload) -> None:
        self.tag_socket(step)
        self.ep.start_send(step, payload, time.monotonic())

    def wait(self, step: int, deadline: float) -> bytearray:
        """Drive the I/O until the step is complete (Endpoint.step_complete:
        received in full, every packet sent once); return the received bytes.
        TransportTimeout at the deadline (time.monotonic() seconds).  A
        step's flow, and its tagged socket (a retransmission keeps the step's
        tag), stay until every packet is acknowledged (``_reap``); the
        successor checks what it got, and linger() keeps the last steps'
        retransmissions going."""
        ep = self.ep
        self._reap()
        if not self._run_until(lambda: ep.step_complete(step), deadline):
            raise TransportTimeout(ep.waiting_on(step))
        return ep.take(step)

    def _reap(self) -> None:
        """Close the sockets of the steps whose every packet is acknowledged."""
        for step in self.ep.reap():
            sock = self._tag_socks.pop(step, None)
            if sock is not None:
                sock.close()

    def linger(self, idle_s: float, deadline: float) -> None:
        """After the last step: keep acknowledging until the predecessor has
        been quiet for idle_s (Endpoint.quiet_at)."""
        ep = self.ep
        start = time.monotonic()

        def quiet_at() -> float:
            return ep.quiet_at(start, idle_s)
        self._run_until(lambda: time.monotonic() >= quiet_at(), deadline, quiet_at)
        self._reap()

    def idle(self, until: float) -> None:
        """While the rank computes (a straggler's delay): receive, buffer and
        acknowledge what the predecessor sends and resend what the successor
        lost, as a RoCE NIC does while its host computes."""
        self._run_until(lambda: False, until)
        self._reap()

    # ---- the loop -----------------------------------------------------------
    def _run_until(self, cond, deadline: float, wake=None) -> bool:
        ep = self.ep
        rlist = [self.dsock, self.csock]
        inj = self._inj
        while True:
            now = time.monotonic()
            if inj:
                for key, f in inj.items():
                    for item in f.release(now):
                        self._deliver(key, item, now)
            ep.service(now)
            if cond():
                return True
            if now >= deadline:
                return False
            t = ep.next_wakeup(now)
            if wake is not None:
                t = min(t, wake())
            for f in inj.values():
                t = min(t, f.next_release())
            timeout = min(t, deadline) - now
            ready, _, _ = select.select(rlist, [], [], timeout if timeout > 0 else 0)
            if ready:
                now = time.monotonic()
                for s in ready:
                    self._drain(s, now)

    def _drain(self, s: socket.socket, now: float, budget: int = 256) -> None:
        ep, mv = self.ep, self._rxmv
        is_data = s is self.dsock
        for _ in range(budget):
            try:
                if is_data:
                    n, anc, _flags, addr = s.recvmsg_into([mv], self._anc)
                    tos = 0
                    for level, typ, d in anc:
                        if level == socket.IPPROTO_IP and typ == socket.IP_TOS and d:
                            tos = d[0]
                else:
                    n, addr = s.recvfrom_into(mv)
                    tos = 0
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                ep.counters["recv_errors"] += 1
                return
            if self._inj:
                key = "d" if is_data else "c"
                for item in self._inj[key].feed((bytes(mv[:n]), addr, tos), now):
                    self._deliver(key, item, now)
            elif is_data:
                ep.on_data_packet(mv, n, addr[0], addr[1], tos, now)
            else:
                ep.on_ctrl_packet(mv, n, addr[0], addr[1], now)

    def _deliver(self, key: str, item, now: float) -> None:
        data, addr, tos = item
        if key == "d":
            self.ep.on_data_packet(data, len(data), addr[0], addr[1], tos, now)
        else:
            self.ep.on_ctrl_packet(data, len(data), addr[0], addr[1], now)
