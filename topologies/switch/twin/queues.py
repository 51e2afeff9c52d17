"""Per-port egress queues of the twin: finite drop-tail buffer (depth in
packets, BMv2's default 64) drained at a rate, or at once when unlimited.
Pure: the caller passes `now`.

Two rate units:
- packets/s (set_rate): BMv2's set_queue_rate, which has nothing else; every
  packet takes the same 1/pps, whatever its size.  Kept for parity with BMv2
  and for the conformance runner.
- bits/s (set_rate_bps): a real link; a packet holds the port for
  len(frame) * 8 / bps seconds, so a 70-byte ACK costs 1/20 of a 1400-byte
  data packet, and leaves once its last bit is out (store and forward: the
  head of an idle port too waits its own serialisation, as on a wire, so a
  path's RTT has every hop's frame time in it, as the config's network
  has).  The soft target's control plane and the simulation use this one.
  In packets/s mode the head of an idle port leaves at once, as BMv2's
  queue lets it go.
The depth a frame reads on arrival (waiting(); the pipeline's
enq_qdepth, so ECN's and Symphony's K_sym) counts the frames that wait,
not the one the port is sending: in bits/s mode a frame stays in the
queue until its last bit is out (for when it leaves), but as far as the
depth goes it has left once its first bit is, as in a switch's queue and
in BMv2's, which lets a frame go as its slot starts.  (Until 2026-11-28
it counted: a port busy with one frame and nothing waiting read depth 1,
so K_sym = 1 marked flows ahead on a link that had no queue;
experiments/README.md, "The frame on the wire".)
A control lane (set_ctrl_lane; off by default): control frames (ACKs,
CNPs: topologies.switch.bmv2.is_ctrl_frame) wait in a lane of their own,
as deep as the data's, and the port serves it first (strict priority, not
preemptive: a frame being serialised finishes) at the same rate, a frame's
own bytes of the link's time in bits/s mode.  BMv2 always has one (its
priority queue 1, paced apart); here it is the config's
topology.control_priority.  len() and the enqueue depth are the data
lane's, as BMv2 stamps each packet with its own queue's depth.
Frame lengths are the bytes the switch reads (Ethernet header on, no FCS,
preamble or gap), as tc htb counts them on the hosts' side.

Fidelity accounting (rate-limited queues; read with ``figures()``):
- rate while backlogged: the service time of every frame let go (its
  length at the rate in force) against the time the port was engaged: that
  service time plus the schedule a late wake-up lost.  A wake-up may come up
  to MAX_CATCH_UP_S (or 4 full-frame times) late and the queue catches up
  (frames leave back to back until they are on schedule again); later than
  that, the schedule moves to now minus that allowance and the difference
  is lost: the port had work and sent nothing.  The ratio is 1 when the
  switch serves its queues on time, below 1 when it was too late to catch up
  (a rate change restarts the clock: its head leaves at once, the rest at
  the new rate, and nothing counts as lost or late);
- lateness: for every frame that waited for the port (in packets/s mode
  not the head of an idle port, which leaves as it arrives), how long after
  its scheduled departure it left (contract.lateness).  A backlogged
  queue's wake-ups are at least switch.QUEUE_WAKE_S (1 ms) apart, so up to
  about that is by design."""

from __future__ import annotations

from collections import deque

from contract.lateness import Lateness

DEFAULT_DEPTH = 64
MAX_CATCH_UP_S = 0.002
FULL_FRAME_BYTES = 1500     # only bounds the catch-up burst in bits/s mode


class EgressQueue:
    def __init__(self, depth: int = DEFAULT_DEPTH, pps: float | None = None, bps: float | None = None):
        self.q: deque[bytes] = deque()
        self.ctrl: deque[tuple[float, bytes]] = deque()   # the control lane: (arrival, frame)
        self.ctrl_lane = False
        self._serving: deque | None = None   # the lane whose head started at an idle port
        self.set_depth(depth)
        if pps is not None and bps is not None:
            raise ValueError("queue rate: give pps or bps, not both")
        if bps is not None:
            self.set_rate_bps(bps)
        else:
            self.set_rate(pps)        # also sets next_time: when the head may leave
        self.late = Lateness()
        self._fresh = False           # packets/s: the head arrived at an idle port, it leaves on arrival
        self.service_s = 0.0          # service time of every frame let go (at its rate)
        self.lost_s = 0.0             # schedule lost to wake-ups too late to catch up
        self.bytes_out = 0

    def set_depth(self, depth: int) -> None:
        depth = int(depth)
        if depth < 1:
            raise ValueError(f"queue depth must be >= 1 packet, got {depth}")
        self.depth = depth

    @staticmethod
    def _check_rate(rate, unit: str) -> float | None:
        if rate is None:
            return None
        rate = float(rate)
        if not rate > 0:
            raise ValueError(f"queue rate must be > 0 {unit} (or None: unlimited), got {rate}")
        return rate

    @property
    def catch_up_s(self) -> float:
        """How far behind its schedule a late wake-up may find the queue and
        still catch up (pop_due): the longest bunch it sends."""
        return max(4 * self.gap, MAX_CATCH_UP_S)

    def set_ctrl_lane(self, on: bool) -> None:
        """Control frames ahead of data (module docstring); what the lane
        holds when it is turned off stays ahead."""
        self.ctrl_lane = bool(on)

    def set_rate(self, pps: float | None) -> None:
        """Packets per second (BMv2's unit); None: unlimited."""
        self.pps = self._check_rate(pps, "packets/s")
        self.bps = None
        self.gap = 0.0 if self.pps is None else 1.0 / self.pps
        # a new rate restarts the pacing clock: the head may leave at the next
        # pop, the rest at the new rate (no catch-up burst), nothing counted lost or late
        self.next_time = 0.0
        self._restart = True

    def set_rate_bps(self, bps: float | None) -> None:
        """Bits per second (a link's rate); None: unlimited."""
        self.bps = self._check_rate(bps, "bits/s")
        self.pps = None
        # a full-size frame's time: the catch-up allowance is counted in it
        self.gap = 0.0 if self.bps is None else FULL_FRAME_BYTES * 8 / self.bps
        self.next_time = 0.0
        self._restart = True

    @property
    def unlimited(self) -> bool:
        return self.pps is None and self.bps is None

    def __len__(self) -> int:
        """The data lane's length, the frame on the wire included (the
        pipeline reads waiting())."""
        return len(self.q)

    def waiting(self, now: float) -> int:
        """The enqueue depth a frame arriving now reads: the data lane's
        frames not yet on the wire.  In bits/s mode the head being
        serialised has left the queue as far as the depth goes (BMv2 lets a
        frame go as its slot starts, and a switch's queue does not hold
        the frame its port is sending); in packets/s mode that is len()."""
        n = len(self.q)
        if n and self.store_and_forward and self.next_time <= now and self._head()[1] is self.q:
            n -= 1
        return n

    def waiting_at(self, now: float, t: float) -> int:
        """The enqueue depth a frame delivered at `t` (not before `now`)
        reads if nothing else arrives until then: the data lane's frames
        whose serialisation has not started by `t`, the queue draining on
        its schedule.  In packets/s mode, with control frames queued (their
        lane shifts the data's schedule) or a rate just set (no schedule
        yet), the depth now."""
        if t <= now or not self.store_and_forward or self.ctrl or self._restart:
            return self.waiting(now)
        n, start = len(self.q), self.next_time
        for frame in self.q:
            if start > t:
                break
            n -= 1
            start += self.service_time(frame)
        return n

    @property
    def empty(self) -> bool:
        return not self.q and not self.ctrl

    def _lane_of(self, ctrl: bool):
        return self.ctrl if ctrl and self.ctrl_lane else self.q

    def room(self, ctrl: bool = False) -> bool:
        """False when a packet arriving now would be dropped (drop-tail);
        ctrl: a control frame, which has its own lane's room when the lane
        is on."""
        return len(self._lane_of(ctrl)) < self.depth

    @property
    def store_and_forward(self) -> bool:
        """A frame leaves once serialised (bits/s: a link), not as its slot
        starts (packets/s: BMv2's queue)."""
        return self.bps is not None

    def push(self, frame: bytes, now: float, ctrl: bool = False) -> None:
        """Enqueue (the caller checked room() and ran egress with
        waiting(now) as enq_qdepth); ctrl: a control frame, into the
        control lane when it is on."""
        lane = self._lane_of(ctrl)
        if self.empty and (self.next_time <= now or self._restart):
            self.next_time = now          # idle queue: the head starts at once
            self._fresh = not self.store_and_forward
            self._restart = False         # the clock starts here
            self._serving = lane          # on the wire: what arrives after it waits
        lane.append((now, frame) if lane is self.ctrl else frame)

    def _head(self) -> tuple[bytes | None, deque | None]:
        """The frame the port serves next and its lane: the one that started
        at an idle port; else the control lane's head if it arrived before
        the port freed (next_time), or if there is no data; else the data
        lane's head."""
        if self._serving:
            lane = self._serving
            return (lane[0][1] if lane is self.ctrl else lane[0]), lane
        if self.ctrl and (self.ctrl[0][0] < self.next_time or not self.q):
            return self.ctrl[0][1], self.ctrl
        if self.q:
            return self.q[0], self.q
        return None, None

    def service_time(self, frame: bytes) -> float:
        """How long `frame` holds the port."""
        if self.bps is not None:
            return len(frame) * 8 / self.bps
        return self.gap

    def in_flight_s(self, frame: bytes) -> float:
        """How long after pop_due lets `frame` go its last bit is out:
        nothing when it left serialised, its slot in packets/s mode."""
        return 0.0 if self.store_and_forward else self.service_time(frame)

    def _leaves(self, frame: bytes) -> float:
        """When the head, `frame`, leaves: next_time is when its
        serialisation starts."""
        return self.next_time + (self.service_time(frame) if self.store_and_forward else 0.0)

    def pop_due(self, now: float, limit: int = 256) -> list[bytes]:
        """Frames whose departure time has come, at most `limit`.  A frame
        starts at next_time, the next one once it has been serialised
        (next_time + its service time); it leaves as it starts in packets/s
        mode, once serialised in bits/s mode."""
        out = []
        if self.unlimited:
            while not self.empty and len(out) < limit:
                frame, lane = self._head()
                lane.popleft()
                self._serving = None
                out.append(frame)
            return out
        # a late wake-up may catch up a little (the loop cannot wake every
        # gap at high rates), but never with an unbounded burst
        late, fresh = self.late, self._fresh or self._restart
        if self._restart:                 # a new rate: the head starts now, nothing was lost
            self.next_time, self._restart = now, False
        schedule = self._head_leaves()    # as scheduled, before a late wake-up's cut
        floor = now - self.catch_up_s
        if self.next_time < floor:
            self.lost_s += floor - self.next_time
            self.next_time = floor
        while len(out) < limit:
            frame, lane = self._head()
            if frame is None or self._leaves(frame) > now:
                break
            lane.popleft()
            self._serving = None
            out.append(frame)
            if fresh:
                fresh = self._fresh = False
            else:
                late.add(now - schedule)
            s = self.service_time(frame)
            self.next_time += s
            schedule = self._head_leaves()
            self.service_s += s
            self.bytes_out += len(frame)
        return out

    def _head_leaves(self) -> float:
        frame, _ = self._head()
        return self.next_time if frame is None else self._leaves(frame)

    def figures(self) -> dict:
        """The port's fidelity figures so far (module docstring): seconds
        engaged (service + lost), service seconds and bytes of what left,
        their ratio, the lateness record."""
        busy = self.service_s + self.lost_s
        return {"busy_s": round(busy, 6), "service_s": round(self.service_s, 6), "lost_s": round(self.lost_s, 6),
                "bytes": self.bytes_out, "rate_ratio": round(self.service_s / busy, 4) if busy > 0 else None,
                "lateness": self.late.as_dict()}

    def deadline(self) -> float | None:
        """When pop_due next has something, None when empty."""
        frame, _ = self._head()
        if frame is None:
            return None
        if self.unlimited or self._restart:       # a pop lets it go, or restarts the clock
            return 0.0
        return self._leaves(frame)
