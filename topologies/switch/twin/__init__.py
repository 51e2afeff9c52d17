"""The software twin of the Symphony P4 switch: the pure pipeline
(pipeline.py), egress queues (queues.py) and netem's delay lines
(delayline.py), the raw-socket switch process (``python3 -m
topologies.switch.twin``) and its control client (client.TwinClient)."""
