"""The software twin of the Symphony P4 switch: the pure pipeline
(pipeline.py, with tables.py), egress queues (queues.py) and netem's delay
lines (delayline.py); the switch process (``python3 -m
topologies.switch.twin``: switch.py, with the sockets it opens, sockets.py,
and its control protocol, control.py) and its control client
(client.TwinClient)."""
