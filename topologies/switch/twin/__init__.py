"""The software twin of the Symphony P4 switch: the pure pipeline
(pipeline.py), the raw-socket switch process (``python3 -m topologies.switch.twin``),
its control client (client.TwinClient) and a forwarding benchmark (bench)."""
