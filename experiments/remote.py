"""A command's simulated runs on the workers of a Dask distributed
scheduler (`--workers ADDRESS`): a batch's own runs on the simulation
target (experiments.parallel), its prediction's, `--confirm`'s and
`model`'s (experiments.sim.predict), a sweep's points' too.

- ``connect(address)``: a client of the scheduler there, within CONNECT_S,
  with at least one worker, every worker running this checkout's code (the
  digest the simulation's cache is keyed by): else Refused, one line, exit
  2, rather than a hang or figures from other code.
- ``Cluster.each(fn, items)``: (item, future) as each fn(item) ends.
  Leaving it early (an interrupt) cancels what has not run; a task a worker
  has begun finishes there and its result is dropped: the cluster's
  processes are not this command's to kill.

What a task needs travels with it (pickled) and what it makes comes back
as its result: a worker needs the project importable (this checkout, or
one of the same code: docs/cli.md), not this machine's files.
"""

from __future__ import annotations

import concurrent.futures as cf
from collections.abc import Callable, Iterable, Iterator
from contextlib import nullcontext
from typing import Any

try:        # the 'cluster' extra (pyproject.toml): without it --workers is refused in one line
    import distributed
    from distributed.comm import get_address_host_port
except ModuleNotFoundError:
    distributed = None

from contract import exits
from experiments.cli_common import Refused
from experiments.sim.predict import source_digest
from topologies.network import shield

CONNECT_S = 3.0         # a scheduler answers, and has a worker, within this


class Cluster:
    def __init__(self, client: Any, address: str):
        self.client = client
        self.address = address
        # not pure: two tasks of equal arguments are two runs, not one result shared
        self.executor = client.get_executor(pure=False)

    def each(self, fn: Callable[[Any], Any], items: Iterable[Any],
             phase: str | None = None) -> Iterator[tuple[Any, cf.Future]]:
        """(item, its future) as each fn(item) ends on the cluster (module
        docstring); phase: shield's, while they run."""
        futures = {self.executor.submit(fn, item): item for item in items}
        try:
            with shield.during(phase) if phase else nullcontext():
                for fut in cf.as_completed(futures):
                    yield futures[fut], fut
        finally:
            for fut in futures:
                fut.cancel()

    def close(self) -> None:
        self.client.close()


def _refuse(address: str, why: str) -> Refused:
    return Refused(f"--workers {address}: {why}")


def connect(address: str) -> Cluster:
    """The cluster at address (module docstring); Refused (one line)."""
    if distributed is None:
        raise _refuse(address, "needs dask's distributed: make setup installs it (pip install -e '.[cluster]')")
    try:
        # checked first: a Client refusing an address it cannot parse hangs the interpreter's exit for seconds
        get_address_host_port(address)
    except ValueError as exc:
        raise _refuse(address, f"not a Dask scheduler's address ({exc}); e.g. tcp://127.0.0.1:8786") from None
    try:
        client = distributed.Client(address, timeout=CONNECT_S, set_as_default=False)
    except (OSError, TimeoutError) as exc:
        raise _refuse(address, f"no Dask scheduler answered ({exits.one_line(exc)})") from None
    try:
        _check_workers(client, address)
    except BaseException:
        client.close()
        raise
    return Cluster(client, address)


def _check_workers(client: Any, address: str) -> None:
    """At least one worker, each of this checkout's code; Refused."""
    try:
        client.wait_for_workers(1, timeout=CONNECT_S)
    except TimeoutError:
        raise _refuse(address, f"the scheduler has no worker after {CONNECT_S:g} s (start one: `dask worker "
                               f"{address}`, docs/cli.md)") from None
    try:
        digests = client.run(source_digest)
    except Exception as exc:        # the worker cannot import the project
        raise _refuse(address, f"a worker cannot run this project's code ({type(exc).__name__}: "
                               f"{exits.one_line(exc)}); start it from a checkout of the same code") from None
    other = sorted(w for w, d in digests.items() if d != source_digest())
    if other:
        raise _refuse(address, f"worker(s) {', '.join(other)} run other code than this checkout's (the simulation's "
                               "source differs): their figures would not be this code's")
