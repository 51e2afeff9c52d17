"""The twin switch's data path and settings without any I/O: the pure
pipeline (pipeline.py), per-port egress queues (queues.py) and delay lines
(delayline.py), the control methods the control protocol answers
(control.py), and the per-port counters.  Pure: the caller passes `now` and
says what a frame that leaves a port becomes (``transmit``).

The process (switch.py) puts raw sockets and a select loop around it; the
simulation target (experiments/sim) puts a discrete-event network around
the same class, so both run one data path.

Per frame that arrives: [ingress delay line] -> ingress -> egress port's
queue full? drop (drop-tail) -> egress with enq_qdepth = packets waiting
in the queue (not the one on the wire: queues.EgressQueue.waiting) when
the link into the port would have delivered the frame (below) ->
enqueue.  Queues drain at their rate (set_queue_rate: packets/s,
BMv2's unit; set_queue_rate_bps: bits/s, each frame holding the port for its
length, as on a real link) or at once when unlimited, into the port's egress
delay line where set_netem put one (delayline.py: netem's delay, jitter,
loss, reordering), then out (``transmit``).  The delay line comes after the
queue: it never changes how fast the queue drains, and the pipeline's queue
depth is the queue's.  An ingress delay line (set_netem(...,
direction="ingress"), at a port facing a host) holds what arrives before the
pipeline sees it.

A link delivers no faster than its rate, but the emulation's do: a twin
that woke late receives what piled up in its sockets at one instant, and
the switch upstream catches up with frames back to back (queues.py), so
two frames a link of 10 Mbit/s would deliver 1.2 ms apart arrive together
and the second read a queue of one where the network has none (K_sym = 1
marked there: experiments/README.md, "Bunched arrivals").  So a frame's
depth is read at its delivery time: no sooner than the previous frame's on
the same port plus its own serialisation at the link's rate (links run at
one rate both ways, the port's egress rate; bits/s mode only), the queue
draining on its schedule until then (queues.EgressQueue.waiting_at), and
no later than a bunch can be long (queues.EgressQueue.catch_up_s).  The
frame itself is not held: it is queued now (a wake-up per frame would cost
the CPU that made it late), so only what it reads changes, and where
frames come spaced as the link spaces them (the simulation's links) nothing
does.  A pile a late twin finds is read from its wake-up on, so up to that
lateness later than the link delivered it (a depth lower by what the
queue let go meanwhile, under a frame at the twin's usual lateness; the
kernel's receive timestamps would say when each frame came, at a cost per
frame not paid here).
"""

from __future__ import annotations

from topologies.spec.netem import NetemParams
from topologies.switch.bmv2 import is_ctrl_frame
from topologies.switch.twin.delayline import DelayLine
from topologies.switch.twin.pipeline import Pipeline
from topologies.switch.twin.queues import DEFAULT_DEPTH, EgressQueue

DIRECTIONS = ("egress", "ingress")
# More frames than this in a queue is a standing backlog, which the switch
# may wake for at a coarser step (switch.QUEUE_WAKE_S); a few frames (two
# probes a netem's jitter bunched, an ACK behind a data frame) are woken for
# exactly.
SHORT_QUEUE = 4
# a frame delivered later than it arrived by less than this reads the
# depth now: float rounding of back-to-back frames on a link of the same
# rate (the simulation's links space frames exactly)
DELIVERY_SLACK_S = 1e-6


class SwitchCore:
    """One switch's data path.  `ports`: port number -> the name its dumps
    show (an interface name); `seed` seeds the pipeline's ECN draws and the
    delay lines.  Subclasses say where a frame goes in ``transmit``."""

    def __init__(self, name: str, ports: dict[int, str], queue_depth: int = DEFAULT_DEPTH, seed: int = 0):
        self.name = name
        self.seed = seed
        self.queue_depth = queue_depth
        self.pipeline = Pipeline(seed)
        self.ports = dict(ports)
        self.queues = {p: EgressQueue(queue_depth) for p in self.ports}
        # port -> its delay line, per direction: egress (after the queue) and
        # ingress (what a host sends, before the pipeline)
        self.lines: dict[str, dict[int, DelayLine]] = {d: {} for d in DIRECTIONS}
        self.stats = {p: {"rx": 0, "tx": 0, "queue_drops": 0, "tx_errors": 0} for p in self.ports}
        self.no_port_drops = 0
        self.warnings: list[str] = []
        # port -> when its queue last let frames go: the process's loop
        # spaces a backlogged queue's wake-ups from it (switch.next_timeout)
        self.served: dict[int, float] = {}
        # port -> when the link into it delivered its last frame (the
        # module docstring: the depth a frame reads)
        self.delivered: dict[int, float] = {}

    # --- settings (the control protocol's methods: control.py) -----------------
    def set_queue_depth(self, depth: int, egress_port: int | None = None, priority=None) -> None:
        for q in self._queues_for(egress_port):
            q.set_depth(depth)

    def set_queue_rate(self, pps: float | None, egress_port: int | None = None, priority=None) -> None:
        for q in self._queues_for(egress_port):
            q.set_rate(pps)

    def set_queue_rate_bps(self, bps: float | None, egress_port: int | None = None, priority=None) -> None:
        """The twin's extra: drain at a bit rate (BMv2 only has packets/s)."""
        for q in self._queues_for(egress_port):
            q.set_rate_bps(bps)

    def set_ctrl_lane(self, on: bool, egress_port: int | None = None) -> None:
        """The twin's extra: control frames ahead of data at the port
        (queues.EgressQueue.set_ctrl_lane; BMv2's control-frame queue)."""
        for q in self._queues_for(egress_port):
            q.set_ctrl_lane(on)

    def set_netem(self, params: dict | None = None, egress_port: int | None = None,
                  direction: str = "egress") -> None:
        """The twin's extra: netem on a port (delay, jitter, loss, reordering:
        topologies.spec.netem.NetemParams' fields), after its egress queue or,
        direction "ingress", on what arrives there before the pipeline.  All
        zero turns it off (frames held keep their times).  The line of (port,
        direction) draws from a generator seeded by the switch's seed, name,
        port and direction, kept across changes."""
        if direction not in DIRECTIONS:
            raise ValueError(f"netem direction must be one of {', '.join(DIRECTIONS)}, got {direction!r}")
        p = NetemParams.from_dict(params or {})
        lines = self.lines[direction]
        for port in self._ports_for(egress_port):
            if port in lines:
                lines[port].set(p)
            elif p.active:
                lines[port] = DelayLine(f"{self.seed}:{self.name}:{port}:{direction}", p)

    def reset_state(self) -> None:
        """As BMv2's reset_state: tables, registers and counters back to the
        program's start; queues emptied, unlimited, at the start-up depth; no
        delay lines."""
        self.pipeline = Pipeline(self.seed)
        self.queues = {p: EgressQueue(self.queue_depth) for p in self.ports}
        self.lines = {d: {} for d in DIRECTIONS}
        self.delivered = {}

    def _ports_for(self, egress_port) -> list[int]:
        # SimpleSwitchThriftAPI's convention: no port (or port 0) means every port
        if not egress_port:
            return list(self.queues)
        if int(egress_port) not in self.queues:
            raise ValueError(f"switch {self.name} has no port {egress_port}")
        return [int(egress_port)]

    def _queues_for(self, egress_port) -> list[EgressQueue]:
        return [self.queues[p] for p in self._ports_for(egress_port)]

    def port_stats(self) -> dict:
        """Per port: counters, queue settings, delay lines and, for a queue
        with a rate, its fidelity figures (queues.EgressQueue.figures)."""
        return {
            "name": self.name,
            "ports": {str(p): dict(s, ifname=self.ports[p], queue=len(self.queues[p]),
                                   depth=self.queues[p].depth, pps=self.queues[p].pps,
                                   bps=self.queues[p].bps,
                                   **({} if self.queues[p].unlimited else {"fidelity": self.queues[p].figures()}),
                                   **{f"netem_{d}": self.lines[d][p].describe()
                                      for d in DIRECTIONS if p in self.lines[d]})
                      for p, s in self.stats.items()},
            "pipeline_drops": dict(self.pipeline.drops),
            "no_port_drops": self.no_port_drops,
            "warnings": list(self.warnings),
        }

    def dump(self) -> dict:
        d = self.pipeline.dump()
        d["stats"] = self.port_stats()
        return d

    # --- data path --------------------------------------------------------------
    def held(self, kind: str, port: int) -> None:
        """A queue ("queue") or delay line ("ingress", "egress") of `port`
        took a frame: a hook for a caller that wakes each one when it is
        due (the simulation); the process's loop looks at all of them."""

    def arrive(self, port: int, frame: bytes, now: float) -> None:
        """A received frame: into the port's ingress delay line, or on."""
        self.stats[port]["rx"] += 1
        line = self.lines["ingress"].get(port)
        if line is not None and line.active:
            line.push(frame, now)
            self.held("ingress", port)
        else:
            self.forward(port, frame, now)

    def forward(self, port: int, frame: bytes, now: float) -> None:
        pkt = self.pipeline.ingress(port, frame)
        if pkt.drop is not None:
            return
        q = self.queues.get(pkt.egress_port)
        if q is None:
            self.no_port_drops += 1
            return
        ctrl = q.ctrl_lane and is_ctrl_frame(frame)
        if not q.room(ctrl):
            self.stats[pkt.egress_port]["queue_drops"] += 1
            return
        out = self.pipeline.egress(pkt, q.waiting_at(now, self._delivery(port, frame, now)))
        if q.unlimited and q.empty:
            self.leave(pkt.egress_port, out, now)     # unlimited and idle: straight on
        else:
            q.push(out, now, ctrl)
            self.held("queue", pkt.egress_port)

    def _delivery(self, port: int, frame: bytes, now: float) -> float:
        """When the link into `port` would have delivered `frame`: not before
        the previous frame plus this one's serialisation at the link's rate
        (module docstring); `now` where the port has no bit rate or the
        frame came as the link spaces it (within DELIVERY_SLACK_S)."""
        link = self.queues.get(port)
        if link is None or not link.store_and_forward:
            return now
        prev = self.delivered.get(port)
        t = now if prev is None else max(now, prev + link.service_time(frame))
        # no further ahead than a bunch can be (a queue's catch-up bound): a
        # sender a little faster than the port's rate (a host's htb) must not
        # push the reading ever further into the future
        t = min(t, now + link.catch_up_s)
        self.delivered[port] = t
        return now if t - now < DELIVERY_SLACK_S else t

    def leave(self, port: int, frame: bytes, now: float) -> None:
        """A frame the queue let go: into the port's delay line, or out."""
        line = self.lines["egress"].get(port)
        if line is not None and line.active:
            line.push(frame, now)
            self.held("egress", port)
        else:
            self.transmit(port, frame, now)

    def transmit(self, port: int, frame: bytes, now: float) -> None:
        """A frame leaves the switch on `port` (its queue and delay line are
        behind it); the subclass puts it on the wire."""
        raise NotImplementedError

    def drain(self, now: float) -> None:
        """Everything due by now: held ingress frames into the pipeline,
        queued frames out of their queues, delayed frames out of the switch."""
        for port in self.lines["ingress"]:
            self.drain_line("ingress", port, now)
        for port, q in self.queues.items():
            if not q.empty:
                self.drain_queue(port, now)
        for port in self.lines["egress"]:
            self.drain_line("egress", port, now)

    def drain_queue(self, port: int, now: float) -> None:
        frames = self.queues[port].pop_due(now)
        if frames:
            self.served[port] = now
        for frame in frames:
            self.leave(port, frame, now)

    def drain_line(self, direction: str, port: int, now: float) -> None:
        line = self.lines[direction][port]
        if direction == "ingress":
            for frame in line.pop_due(now):
                self.forward(port, frame, now)
        else:
            for frame in line.pop_due(now):
                self.transmit(port, frame, now)

    def due(self, kind: str, port: int) -> float | None:
        """When a queue ("queue") or delay line ("ingress", "egress") of
        `port` next has something due; None when it holds nothing."""
        return (self.queues[port] if kind == "queue" else self.lines[kind][port]).deadline()

    def deadlines(self):
        """(kind, port, when) of every queue and delay line ("line") that
        holds something: when it next has something due.  A queue is "queue"
        when it holds a standing backlog (more than SHORT_QUEUE frames),
        "head" when it holds a few."""
        for port, q in self.queues.items():
            d = q.deadline()
            if d is not None:
                yield "queue" if len(q) > SHORT_QUEUE else "head", port, d
        for lines in self.lines.values():
            for port, line in lines.items():
                d = line.deadline()
                if d is not None:
                    yield "line", port, d

    def next_due(self) -> float | None:
        """When drain() next has something to do exactly; None: nothing held."""
        return min((d for *_, d in self.deadlines()), default=None)
