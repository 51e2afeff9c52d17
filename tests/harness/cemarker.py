"""A CE-marking test harness: hosts in their own namespaces, joined through a
middle namespace where a small raw-socket forwarder stands in for a switch.

The forwarder is a learning Ethernet switch over AF_PACKET sockets.  When
marking is on, it sets CE on a given fraction of the ECN-capable IPv4
packets that match a filter and fixes the IPv4 header checksum (the TOS byte
is not in the UDP/TCP pseudo-header, so L4 checksums stay valid).  It counts
packets per flow, bins their bytes in time (the rate a sender really sent),
records the DSCP values TCP data segments carried, in order, so tests can
read the step tags off the wire, and counts TCP's ECE and CWR flags (the
kernel's reaction to the marks).

    with MarkerLab(3) as lab:          # as root
        lab.popen(0, [...])            # a process in host 0's namespace
        lab.marker.mark(0.3, dport=5000)   # from now: CE on 30 % of matches
        lab.marker.off()
        lab.marker.stats()

The forwarder process: ``python3 -m tests.harness.cemarker --iface m0 --iface m1
--control SOCK [--log FILE] [--seed S] [--bin-ms 10]`` (run inside the middle
namespace).  Control: JSON lines over the Unix socket, {"cmd": "mark", "p":
0.3, "match": {"dport": 5000}}, {"cmd": "off"}, {"cmd": "stats"}; every
answer carries "t" (ns, CLOCK_REALTIME) of when the command took effect.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import selectors
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

from contract.tags import ECN_CE
from tests.harness import REPO
from topologies.network.intf import host_sysctls, ipv6_off, offloads_off
from topologies.network.names import PREFIX, check_ifname
from topologies.network.shell import remove_by_prefix
from topologies.network.shell import sh as _sh
from topologies.network.state import StateFile
from topologies.switch.twin.sockets import ETH_P_ALL, PACKET_OUTGOING


def sh(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    """nslab.sh, with the command's own error in the exception (set-up can
    fail when something else removes a namespace under our feet)."""
    try:
        return _sh(*args, check=check)
    except subprocess.CalledProcessError as e:
        raise RuntimeError(f"cemarker: {' '.join(args)}: {(e.stderr or '').strip()}") from None

ETH_P_IP = 0x0800
ECN_MASK = 0b11
TCP_SYN = 0x02
TCP_ECE = 0x40
TCP_CWR = 0x80


# --- pure packet handling -------------------------------------------------------

def ipv4_checksum(header: bytes) -> int:
    """Internet checksum of an IPv4 header whose checksum field is zero."""
    if len(header) % 2:
        header += b"\0"
    total = sum(struct.unpack(f"!{len(header) // 2}H", header))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def parse(frame: bytes) -> dict | None:
    """The fields of an Ethernet/IPv4 frame the marker looks at, None if the
    frame is not IPv4."""
    if len(frame) < 34 or struct.unpack_from("!H", frame, 12)[0] != ETH_P_IP:
        return None
    ver_ihl, tos, total_len = struct.unpack_from("!BBH", frame, 14)
    ihl = (ver_ihl & 0x0F) * 4
    if ver_ihl >> 4 != 4 or ihl < 20 or len(frame) < 14 + ihl:
        return None
    proto = frame[23]
    src = socket.inet_ntoa(frame[26:30])
    dst = socket.inet_ntoa(frame[30:34])
    l4 = 14 + ihl
    sport = dport = None
    tcp_flags = 0
    payload = max(0, total_len - ihl)
    if proto in (6, 17) and len(frame) >= l4 + 4:
        sport, dport = struct.unpack_from("!HH", frame, l4)
        if proto == 17:
            payload -= 8
        elif len(frame) >= l4 + 14:
            payload -= (frame[l4 + 12] >> 4) * 4
            tcp_flags = frame[l4 + 13]
    return {"src": src, "dst": dst, "proto": proto, "sport": sport, "dport": dport,
            "tos": tos, "dscp": tos >> 2, "ecn": tos & ECN_MASK, "ihl": ihl,
            "length": total_len, "payload": max(0, payload), "tcp_flags": tcp_flags}


def set_ce(frame: bytes, ihl: int = 20) -> bytes:
    """The frame with ECN = CE and a recomputed IPv4 header checksum."""
    b = bytearray(frame)
    b[15] |= ECN_CE
    b[24:26] = b"\0\0"
    b[24:26] = struct.pack("!H", ipv4_checksum(bytes(b[14:14 + ihl])))
    return bytes(b)


def matches(info: dict, match: dict) -> bool:
    return all(info.get(k) == v for k, v in match.items())


class Marker:
    """What the forwarder decides per packet, without sockets: whether to set
    CE, and the counters.  ``now_ns`` is passed in."""

    def __init__(self, seed: int = 1, bin_ns: int = 10_000_000):
        self.rng = random.Random(seed)
        self.p = 0.0
        self.match: dict = {}
        self.bin_ns = bin_ns
        self.flows: dict[str, dict] = {}
        self.events: list[dict] = []

    def set(self, p: float, match: dict, now_ns: int) -> None:
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"mark probability must be in [0, 1], got {p}")
        self.p, self.match = p, dict(match)
        self.events.append({"t": now_ns, "p": p, "match": self.match})

    def handle(self, frame: bytes, now_ns: int) -> bytes:
        info = parse(frame)
        if info is None:
            return frame
        key = f"{info['src']}>{info['dst']}/{info['proto']}/{info['dport']}"
        fl = self.flows.get(key)
        if fl is None:
            fl = self.flows[key] = {"pkts": 0, "bytes": 0, "ect": 0, "ce_in": 0, "marked": 0,
                                    "ece": 0, "cwr": 0, "dscp_seq": [], "bins": {}}
        fl["pkts"] += 1
        fl["bytes"] += info["length"]
        b = str(now_ns // self.bin_ns)
        fl["bins"][b] = fl["bins"].get(b, 0) + info["length"]
        if info["proto"] == 6:
            # the TCP senders' reaction to marks: ECE on the receiver's ACKs,
            # CWR on the sender's next segment
            fl["ece"] += bool(info["tcp_flags"] & TCP_ECE)
            fl["cwr"] += bool(info["tcp_flags"] & TCP_CWR)
            if info["tcp_flags"] & TCP_SYN and "syn_dscp" not in fl:
                fl["syn_dscp"] = info["dscp"]       # the handshake's tag (a switch reads it too)
        if info["proto"] == 6 and info["payload"] > 0:
            seq = fl["dscp_seq"]
            if not seq or seq[-1] != info["dscp"]:
                seq.append(info["dscp"])
        ecn = info["ecn"]
        if ecn == ECN_CE:
            fl["ce_in"] += 1
        if ecn in (0b01, 0b10):
            fl["ect"] += 1
            if self.p > 0 and matches(info, self.match) and self.rng.random() < self.p:
                fl["marked"] += 1
                return set_ce(frame, info["ihl"])
        return frame

    def stats(self) -> dict:
        return {"p": self.p, "match": self.match, "bin_ns": self.bin_ns,
                "flows": self.flows, "events": self.events}


# --- the forwarder process --------------------------------------------------------

def now_ns() -> int:
    return time.clock_gettime_ns(time.CLOCK_REALTIME)


def serve(ifaces: list[str], control: str, seed: int, bin_ms: float, log: str | None) -> int:
    marker = Marker(seed, int(bin_ms * 1e6))
    sel = selectors.DefaultSelector()
    socks: dict[str, socket.socket] = {}
    for name in ifaces:
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        s.bind((name, 0))
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        s.setblocking(False)
        socks[name] = s
        sel.register(s, selectors.EVENT_READ, ("port", name))
    if os.path.exists(control):
        os.unlink(control)
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(control)
    srv.listen(4)
    srv.setblocking(False)
    sel.register(srv, selectors.EVENT_READ, ("accept", None))
    logf = open(log, "a", buffering=1) if log else None
    where: dict[bytes, str] = {}      # learned: MAC -> port
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))
    counters = {"forwarded": 0, "flooded": 0, "send_errors": 0}

    def answer(conn: socket.socket, line: bytes) -> None:
        try:
            req = json.loads(line)
            cmd = req.get("cmd")
            t = now_ns()
            if cmd == "mark":
                marker.set(float(req.get("p", 1.0)), req.get("match", {}), t)
                out = {"ok": True, "t": t}
            elif cmd == "off":
                marker.set(0.0, {}, t)
                out = {"ok": True, "t": t}
            elif cmd == "stats":
                out = {"ok": True, "t": t, **marker.stats(), "counters": counters}
            else:
                out = {"ok": False, "error": f"unknown cmd {cmd!r}"}
            if logf and cmd in ("mark", "off"):
                logf.write(json.dumps({"t": t, "cmd": cmd, "p": marker.p, "match": marker.match}) + "\n")
        except (ValueError, TypeError) as e:
            out = {"ok": False, "error": str(e)}
        conn.sendall((json.dumps(out) + "\n").encode())

    buffers: dict[socket.socket, bytes] = {}
    while not stop:
        for key, _ in sel.select(timeout=0.2):
            kind, name = key.data
            if kind == "accept":
                conn, _ = srv.accept()
                conn.setblocking(True)
                buffers[conn] = b""
                sel.register(conn, selectors.EVENT_READ, ("ctl", None))
            elif kind == "ctl":
                conn = key.fileobj
                data = conn.recv(65536)
                if not data:
                    sel.unregister(conn)
                    conn.close()
                    buffers.pop(conn, None)
                    continue
                buffers[conn] += data
                while b"\n" in buffers[conn]:
                    line, buffers[conn] = buffers[conn].split(b"\n", 1)
                    answer(conn, line)
            else:
                s = socks[name]
                for _ in range(64):          # drain a burst before looking at others
                    try:
                        frame, addr = s.recvfrom(65536)
                    except BlockingIOError:
                        break
                    if addr[2] == PACKET_OUTGOING:
                        continue
                    where[frame[6:12]] = name
                    frame = marker.handle(frame, now_ns())
                    dst = frame[0:6]
                    out = where.get(dst) if not dst[0] & 1 else None
                    targets = [out] if out and out != name else [n for n in ifaces if n != name]
                    counters["flooded" if len(targets) > 1 else "forwarded"] += 1
                    for n in targets:
                        try:
                            socks[n].send(frame)
                        except OSError:
                            counters["send_errors"] += 1
    if logf:
        logf.close()
    srv.close()
    if os.path.exists(control):
        os.unlink(control)
    return 0


# --- the lab ------------------------------------------------------------------

class MarkerClient:
    def __init__(self, path: str):
        self.path = path

    def _call(self, req: dict) -> dict:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(10)
            s.connect(self.path)
            s.sendall((json.dumps(req) + "\n").encode())
            buf = b""
            while not buf.endswith(b"\n"):
                chunk = s.recv(1 << 20)
                if not chunk:
                    break
                buf += chunk
        out = json.loads(buf)
        if not out.get("ok"):
            raise RuntimeError(f"marker: {out.get('error')}")
        return out

    def mark(self, p: float, **match) -> int:
        """Mark a fraction p of the matching ECT packets from now; returns
        the time (ns, CLOCK_REALTIME) it took effect."""
        return self._call({"cmd": "mark", "p": p, "match": match})["t"]

    def off(self) -> int:
        return self._call({"cmd": "off"})["t"]

    def stats(self) -> dict:
        return self._call({"cmd": "stats"})


class MarkerLab:
    """N hosts (namespaces sym-<id>-h<i>, 10.78.<x>.<i+1>/24 on eth0) joined
    through the marker in namespace sym-<id>-m.  Optional htb rate on each
    host's egress.  Everything is removed on close()."""

    def __init__(self, n_hosts: int, rate_mbit: float | None = None, seed: int = 1,
                 bin_ms: float = 10.0):
        if not 1 <= n_hosts <= 50:
            raise ValueError(f"n_hosts must be in 1..50, got {n_hosts}")
        # registered before any name exists: `make clean-net` leaves a live
        # harness alone and removes a dead one's namespaces and forwarder
        self.state = StateFile.claim("CE-marker lab")
        self.id = self.state.id
        self.mid = f"{PREFIX}-{self.id}-m"
        self.netns: list[str] = []
        self.ips: list[str] = []
        self.procs: list[subprocess.Popen] = []
        self.marker_proc: subprocess.Popen | None = None
        self.tmp = tempfile.mkdtemp(prefix=f"{PREFIX}-{self.id}-")
        self.control = os.path.join(self.tmp, "marker.sock")
        self.log = os.path.join(self.tmp, "marker.jsonl")
        third = int(self.id, 16) % 250 + 1
        try:
            sh("ip", "netns", "add", self.mid)
            self._quiet(self.mid)
            ports = []
            for i in range(n_hosts):
                ports.append(self._add_host(i, f"10.78.{third}.{i + 1}", rate_mbit))
            self.marker_proc = self.state.spawn(
                ["ip", "netns", "exec", self.mid, sys.executable, "-m", "tests.harness.cemarker",
                 *[a for p in ports for a in ("--iface", p)], "--control", self.control,
                 "--seed", str(seed), "--bin-ms", str(bin_ms), "--log", self.log],
                "CE marker", cwd=REPO)
            deadline = time.monotonic() + 10
            while not os.path.exists(self.control):
                if self.marker_proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("cemarker: the forwarder did not start")
                time.sleep(0.02)
            self.marker = MarkerClient(self.control)
        except BaseException:
            self.close()
            raise

    @staticmethod
    def _quiet(ns: str) -> None:
        inns = ("ip", "netns", "exec", ns)
        sh(*inns, *ipv6_off("all"))
        sh(*inns, *ipv6_off("default"))
        sh(*inns, "ip", "link", "set", "lo", "up")

    def _add_host(self, i: int, ip: str, rate_mbit: float | None) -> str:
        ns = f"{PREFIX}-{self.id}-h{i}"
        a = check_ifname(f"{PREFIX}{self.id}h{i}")
        m = check_ifname(f"{PREFIX}{self.id}m{i}")
        sh("ip", "netns", "add", ns)
        self.netns.append(ns)
        self.ips.append(ip)
        self._quiet(ns)
        sh("ip", "link", "add", a, "type", "veth", "peer", "name", m)
        sh("ip", "link", "set", a, "netns", ns)
        sh("ip", "link", "set", m, "netns", self.mid)
        inns = ("ip", "netns", "exec", ns)
        inmid = ("ip", "netns", "exec", self.mid)
        sh(*inns, "ip", "link", "set", a, "name", "eth0")
        sh(*inns, "ip", "addr", "add", f"{ip}/24", "dev", "eth0")
        sh(*inns, "ip", "link", "set", "eth0", "up")
        # the forwarder copies frames as they are (topologies.network.intf says why)
        sh(*inns, *offloads_off("eth0"), check=False)
        for args in host_sysctls():
            sh(*inns, *args)
        sh(*inmid, "ip", "link", "set", m, "up")
        sh(*inmid, "ethtool", "-K", m, "gro", "off", "tx", "off", check=False)
        if rate_mbit:
            rate = f"{rate_mbit}mbit"
            sh(*inns, "tc", "qdisc", "add", "dev", "eth0", "root", "handle", "1:", "htb", "default", "1")
            sh(*inns, "tc", "class", "add", "dev", "eth0", "parent", "1:", "classid", "1:1",
               "htb", "rate", rate, "ceil", rate)
        return m

    def exec(self, i: int, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        return sh("ip", "netns", "exec", self.netns[i], *args, check=check)

    def popen(self, i: int, args: list[str], **kw) -> subprocess.Popen:
        proc = self.state.spawn(["ip", "netns", "exec", self.netns[i], *args], f"marker lab host h{i}", **kw)
        self.procs.append(proc)
        return proc

    def marker_log(self) -> list[dict]:
        if not os.path.exists(self.log):
            return []
        with open(self.log) as f:
            return [json.loads(line) for line in f if line.strip()]

    def close(self) -> None:
        for proc in [*self.procs, self.marker_proc]:
            if proc is not None and proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                proc.wait()
        self.procs = []
        remove_by_prefix(f"{PREFIX}-{self.id}-", f"{PREFIX}{self.id}")
        for name in ("marker.sock", "marker.jsonl"):
            try:
                os.unlink(os.path.join(self.tmp, name))
            except FileNotFoundError:
                pass
        try:
            os.rmdir(self.tmp)
        except OSError:
            pass
        self.state.remove()

    def __enter__(self) -> MarkerLab:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="CE-marking raw-socket forwarder (test harness)")
    ap.add_argument("--iface", action="append", required=True)
    ap.add_argument("--control", required=True)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--bin-ms", type=float, default=10.0)
    ap.add_argument("--log")
    a = ap.parse_args(argv)
    return serve(a.iface, a.control, a.seed, a.bin_ms, a.log)


if __name__ == "__main__":
    sys.exit(main())
