"""The sockets the twin opens: one raw AF_PACKET socket per port, and the
Unix socket its control clients connect to.  Each failure to open one is a
SwitchError with a one-line message (the twin exits with it at start).

A port's socket reads every frame on its interface (ETH_P_ALL) without
blocking.  The kernel also shows a raw socket the frames it sends itself
(PACKET_OUTGOING): they are not read where PACKET_IGNORE_OUTGOING exists
(Linux 4.20), and dropped by their packet type where it does not.  The
receive buffer is forced to 4 MB, so a burst the select loop has not read
yet waits there.  The interface's offloads go off first
(topologies.network.intf), so the socket sees wire-size frames, not 64 KB
super-packets with checksums left for a NIC to fill.
"""

from __future__ import annotations

import os
import socket
import subprocess

from topologies.network import intf
from topologies.network.state import sock_path_problem

ETH_P_ALL = 0x0003
SOL_PACKET = 263
PACKET_IGNORE_OUTGOING = 23
PACKET_OUTGOING = 4             # recvfrom's address[2] for a frame this host sent
SO_RCVBUFFORCE = 33
RCVBUF_BYTES = 4 << 20
CONTROL_BACKLOG = 16


class SwitchError(RuntimeError):
    """A start-up failure of the twin, with a one-line message."""


def disable_offloads(ifname: str) -> str | None:
    """Offloads off on an interface; a warning when ethtool could not do it."""
    try:
        r = subprocess.run(intf.offloads_off(ifname), capture_output=True, text=True)
    except FileNotFoundError:
        return "ethtool not found: offloads left on"
    if r.returncode != 0:
        return f"ethtool -K {ifname} failed: {r.stderr.strip() or r.stdout.strip()}"
    return None


def open_port_socket(ifname: str) -> socket.socket:
    """A non-blocking raw socket on one interface (module docstring)."""
    try:
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    except PermissionError:
        raise SwitchError("raw sockets need root (CAP_NET_RAW)") from None
    try:
        s.bind((ifname, ETH_P_ALL))
    except OSError as e:
        s.close()
        raise SwitchError(f"cannot bind to interface {ifname!r}: {e.strerror}") from None
    for level, opt, val in ((SOL_PACKET, PACKET_IGNORE_OUTGOING, 1),
                            (socket.SOL_SOCKET, SO_RCVBUFFORCE, RCVBUF_BYTES)):
        try:
            s.setsockopt(level, opt, val)
        except OSError:
            pass                      # older kernels: the packet type check still filters
    s.setblocking(False)
    return s


def listen_control(path: str) -> socket.socket:
    """The control socket, listening and non-blocking.  A socket file left
    by a crashed twin is replaced; one that another process still serves is
    a SwitchError, as is a path too long for a Unix socket."""
    if os.path.exists(path):
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            probe.connect(path)
            raise SwitchError(f"control socket {path} is in use by another process")
        except (ConnectionRefusedError, FileNotFoundError):
            os.unlink(path)           # stale socket of a crashed run
        finally:
            probe.close()
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.bind(path)
    except OSError as e:
        s.close()
        # a too-long path raises OSError("AF_UNIX path too long") without strerror
        why = sock_path_problem(path) or e.strerror or str(e)
        raise SwitchError(f"cannot create control socket {path}: {why}") from None
    s.listen(CONTROL_BACKLOG)
    s.setblocking(False)
    return s
