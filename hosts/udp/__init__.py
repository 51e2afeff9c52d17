"""The reliable, paced UDP transport: params (the job file's [udp] and
[faults] tables), sender and receiver (the two halves of the pure protocol
engine), endpoint (both halves of one rank), faults (receive-side fault
injection), sockets (UdpTransport, the I/O).
"""
