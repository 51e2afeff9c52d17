"""The agents of a simulated run: each rank is hosts.rank.Rank, the loop the
agent process runs, with a SimTransport on its host and the virtual clock;
``SimRank`` drives that loop on the engine (hosts.agent.drive does it in
real time).  Records go where the agents write theirs, stamped with the
virtual time."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path

from experiments.sim.engine import Engine
from hosts.agent import Records
from hosts.job import JobSpec
from hosts.rank import Await, Rank, Sleep
from hosts.transport import TransportTimeout

# Time 0 of a simulated run, as CLOCK_REALTIME ns in its records: a fixed
# instant (2001-09-09T01:46:40Z), so records are the same every run and
# analysis reads them as absolute times, and no one takes it for a real date.
EPOCH_NS = 10**18


class VirtualNs:
    """A record's time stamp: the engine's now as CLOCK_REALTIME ns; or
    `at`, where set: the time a compiled transport's event happened, which
    reaches its rank's records later (experiments/sim/compiled.py)."""

    def __init__(self, engine: Engine):
        self.engine = engine
        self.at: float | None = None

    def __call__(self) -> int:
        return EPOCH_NS + round((self.engine.now if self.at is None else self.at) * 1e9)


class SimRank:
    """One rank on the engine: start() at a time, then the loop's requests
    become events; `code` is its exit code once `done`."""

    def __init__(self, engine: Engine, net, spec: JobSpec, rank: int, log_dir: Path, data: bool,
                 on_exit: Callable[[SimRank], None]):
        self.engine = engine
        self.spec = spec
        self.host = spec.ranks[rank].host
        self.jsonl = log_dir / f"rank{rank}.jsonl"
        stamp = VirtualNs(engine)
        self.log = Records(self.jsonl, spec.job, rank, clock_ns=stamp, flush_each=False)
        transport = functools.partial(net.transport, host=net.hosts[self.host], engine=engine, keep=data,
                                      stamp=stamp)
        self.rank = Rank(spec, rank, self.log, transport, engine.clock, data=data)
        self.rank.tr.open()
        self.rank.prepare()
        self.on_exit = on_exit
        self.code: int | None = None
        self.loop = None

    @property
    def label(self) -> str:
        return f"agent job {self.spec.job} rank {self.rank.rank} on {self.host}"

    @property
    def done(self) -> bool:
        return self.code is not None

    def start(self, at: float) -> None:
        self.log.emit("ready", iter=0, step=0)
        self.engine.at(at, self._begin)

    def _begin(self) -> None:
        self.loop = self.rank.steps(self.engine.now)
        self._resume(None, None)

    def _resume(self, value, exc: TransportTimeout | None) -> None:
        self.rank.tr.flush()            # the transport's events before the loop's next ones
        try:
            req = self.loop.send(value) if exc is None else self.loop.throw(exc)
        except StopIteration as stop:
            self._exit(stop.value)
            return
        tr = self.rank.tr
        if type(req) is Await:
            tr.await_step(req.step, req.deadline, self._resume)
        elif type(req) is Sleep:
            self.engine.at(self.engine.now + req.seconds, self._resume, None, None)
        else:
            tr.linger(req.idle_s, req.deadline, self._resume)

    def _exit(self, code: int) -> None:
        self.code = code
        self.rank.tr.close()
        self.log.close()
        self.on_exit(self)

    def close(self) -> None:
        """A run cut short: what the records hold so far is written."""
        if self.code is None:
            self.rank.tr.close()
            self.log.close()
