"""The TCP transport: framing (the step messages in the byte stream, pure)
and sockets (TcpTransport, the I/O).
"""
