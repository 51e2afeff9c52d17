"""Small programs tests start inside emulated hosts (``python3 -c PROGRAM args``)."""

# UDP echo server: answers every datagram with its payload
ECHO = """
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((sys.argv[1], int(sys.argv[2])))
while True:
    data, addr = s.recvfrom(2048)
    s.sendto(data, addr)
"""

# UDP client: one datagram to each peer (3 tries), prints the peers that answered
MESH = """
import json, socket, sys
me, port, peers = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((me, 0))
s.settimeout(0.5)
ok = []
for peer in peers:
    for _ in range(3):
        s.sendto(me.encode(), (peer, port))
        try:
            data, addr = s.recvfrom(2048)
        except socket.timeout:
            continue
        if addr[0] == peer and data == me.encode():
            ok.append(peer)
            break
print(json.dumps(ok))
"""

# ECN receiver: counts datagrams and CE marks (IP_RECVTOS) until idle
RECV = """
import json, socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.IPPROTO_IP, socket.IP_RECVTOS, 1)
s.bind((sys.argv[1], int(sys.argv[2])))
s.settimeout(float(sys.argv[3]))
n = ce = 0
first = last = 0.0
print("ready", flush=True)
while True:
    try:
        data, anc, _, _ = s.recvmsg(2048, socket.CMSG_SPACE(1))
    except socket.timeout:
        break
    last = time.monotonic()
    first = first or last
    n += 1
    for level, kind, value in anc:
        if level == socket.IPPROTO_IP and kind == socket.IP_TOS and value[0] & 3 == 3:
            ce += 1
print(json.dumps({"n": n, "ce": ce, "secs": last - first}), flush=True)
"""

# ECT(0) sender from a fixed source port, as fast as the host's NIC (htb) lets it
SEND = """
import socket, sys, time
dst, dport, sport, secs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, 2)
s.bind(("0.0.0.0", sport))
end = time.monotonic() + secs
payload = bytes(1200)
n = 0
while time.monotonic() < end:
    try:
        s.sendto(payload, (dst, dport))
        n += 1
    except OSError:
        time.sleep(0.001)
print(n)
"""
