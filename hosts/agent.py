"""One rank of a ring AllReduce job:

    python3 -m hosts.agent --job JOB.toml --rank R [--log-dir DIR]
                           [--start-file PATH [--start-timeout S]]

Runs the job's iterations over its transport, checks every result bit for bit
against the sum computed in the ring's order, and writes its events to
DIR/rank<R>.jsonl (default DIR: ./agents).  Once set up (sockets bound,
inputs and references drawn) it logs `ready`; with --start-file it then
waits for PATH to appear, reads the start time it holds (ns, CLOCK_REALTIME)
and starts iteration 0 then (a start barrier: the runner's agents all start
at once), else it starts at once.  Exit codes (contract.exits,
docs/hosts.md): 0 every iteration exact; 1 a result was wrong; 2 bad job file
or arguments (a start file that holds no start time); 3 a deadline passed
(an `error` event says what the rank was waiting for: a peer's data, or the
start file) or a socket failed; 4 its records could not be written (disk
full); 130/143 SIGINT/SIGTERM.  Every failure is one line on stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import os
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path

from contract import exits
from contract.events import EventLog, now_ns
from hosts.job import JobError, JobSpec, load_job
from hosts.rank import Await, Loop, Rank, Sleep, stats_fields
from hosts.tcp.sockets import TcpTransport
from hosts.transport import Transport, TransportTimeout
from hosts.udp.sockets import UdpTransport

# the class of each name in contract.tags.TRANSPORTS
TRANSPORT_CLASSES: dict[str, type[Transport]] = {"udp": UdpTransport, "tcp": TcpTransport}

# --start-file: how long an agent waits for the start file after its `ready`
# (--start-timeout's default): longer than the runner gives every agent of a
# run to be ready (experiments.supervise.STARTUP_S, 30 s) plus the first
# step's start slack (hosts.job.START_SLACK_S, 10 s), so a slow start is the
# runner's to report, naming the agent that was late; the agents' own limit
# is for a runner that is gone
START_WAIT_S = 40.0
# how often a waiting agent looks for the start file: the runner sets the
# start far enough ahead that every agent has seen the file by then
# (experiments.supervise.START_MARGIN_S)
START_POLL_S = 0.005


class UsageError(Exception):
    """Bad arguments or environment: one line to stderr, exit 2."""


def read_start_file(path: Path, timeout_s: float) -> int | None:
    """The start time (ns, CLOCK_REALTIME) the start file holds; None while
    it does not exist.  UsageError when it holds no start time, or one
    further ahead than the agent would wait for the file itself."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as e:
        raise UsageError(f"--start-file {path}: cannot read it: {getattr(e, 'strerror', None) or e}") from None
    try:
        at_ns = int(text.strip())
    except ValueError:
        raise UsageError(f"--start-file {path}: holds no start time (an integer of ns): {text[:40]!r}") from None
    ahead_s = (at_ns - now_ns()) / 1e9
    if ahead_s > timeout_s:
        raise UsageError(f"--start-file {path}: its start time is {ahead_s:.1f} s ahead, "
                         f"beyond --start-timeout {timeout_s:g} s")
    return at_ns


def wait_for_start(path: Path, timeout_s: float, poll_s: float = START_POLL_S) -> tuple[int, int] | None:
    """Wait until the start file exists: (its start time, when it was read),
    both ns CLOCK_REALTIME; None when it did not appear within timeout_s."""
    end = time.monotonic() + timeout_s
    while True:
        at_ns = read_start_file(path, timeout_s)
        if at_ns is not None:
            return at_ns, now_ns()
        if time.monotonic() >= end:
            return None
        time.sleep(poll_s)


def sleep_until(at_ns: int) -> tuple[float, int]:
    """Sleep until at_ns (CLOCK_REALTIME; at once if it has passed): the
    monotonic clock's reading and the wall time (ns) when it woke."""
    delay = (at_ns - now_ns()) / 1e9
    if delay > 0:
        time.sleep(delay)
    return time.monotonic(), now_ns()


class RecordsLost(Exception):
    """The agent's records could not be written: exit 4 on a full disk, 3
    on any other write error."""

    def __init__(self, path: Path, error: OSError):
        super().__init__(f"cannot write its records ({path}): {error.strerror or error}")
        self.full = exits.is_disk_full(error)


class Records:
    """The agent's EventLog: a write that fails raises RecordsLost, one
    exception for every place that records an event (the agent's loop, the
    transport's rate and counter events)."""

    def __init__(self, path: Path, job: int, rank: int, clock_ns: Callable[[], int] = now_ns,
                 flush_each: bool = True):
        self.path = path
        self.clock_ns = clock_ns
        self._log = EventLog(path, job, rank, flush_each=flush_each)

    def emit(self, kind: str, iter: int, step: int, **fields):
        try:
            return self._log.emit(kind, iter=iter, step=step, t=self.clock_ns(), **fields)
        except OSError as e:
            raise RecordsLost(self.path, e) from None

    def close(self) -> None:
        """Never raises: a line that could not be written was reported when
        it failed (closing retries its flush)."""
        with contextlib.suppress(OSError):
            self._log.close()


def say(line: str) -> None:
    """One line to stderr, which may be a file on the full disk too."""
    with contextlib.suppress(OSError):
        print(line, file=sys.stderr, flush=True)


class Terminated(BaseException):
    """SIGTERM (from a runner tearing a run down): stop and keep the records."""


def _on_sigterm(signum, frame):
    raise Terminated()


def drive(loop: Loop, tr: Transport) -> int:
    """Run a rank's loop (hosts.rank) in real time: the transport's idle for
    its Sleep (a computing rank's NIC still receives and acknowledges: the
    simulation's transport runs through a Sleep too, and a thread asleep in
    time.sleep left the predecessor's flow stalled), the transport's blocking
    wait for its Await (a TransportTimeout is thrown back into the loop), the
    transport's linger for its Linger; the loop's exit code."""
    try:
        req = next(loop)
        while True:
            if type(req) is Await:
                try:
                    got = tr.wait(req.step, req.deadline)
                except TransportTimeout as e:
                    req = loop.throw(e)
                    continue
                req = loop.send(got)
            elif type(req) is Sleep:
                tr.idle(time.monotonic() + req.seconds)
                req = loop.send(None)
            else:
                tr.linger(req.idle_s, req.deadline)
                req = loop.send(None)
    except StopIteration as stop:
        return stop.value


class Agent(Rank):
    """A rank in its own process: the transport of the job's name, the
    monotonic clock, the start file."""

    def __init__(self, spec: JobSpec, rank: int, log: Records):
        cls = TRANSPORT_CLASSES.get(spec.transport)
        if cls is None:
            raise UsageError(f"transport {spec.transport!r} is not available in this build")
        super().__init__(spec, rank, log, cls, time.monotonic)

    def run(self, start: float | None = None, start_info: dict | None = None) -> int:
        """The iterations (hosts.rank.Rank.steps) in real time."""
        code = drive(self.steps(start, start_info), self.tr)
        if self.failed:
            say(f"hosts.agent rank {self.rank}: {self.failed}")
        return code

    def await_start(self, path: Path, timeout_s: float) -> tuple[float, dict] | None:
        """Wait for the start file and then until its start time: (the
        monotonic time of the start, iteration 0's `start` field); None when
        the file did not appear in time (an error event and the stats
        logged)."""
        got = wait_for_start(path, timeout_s)
        if got is None:
            reason = f"start deadline of {timeout_s:.1f} s passed waiting for the start file {path}"
            self.log.emit("error", iter=0, step=0, reason=reason, deadline="start")
            self.log.emit("stats", iter=0, step=0, **stats_fields(self.tr))
            say(f"hosts.agent rank {self.rank}: {reason}")
            return None
        at_ns, seen_ns = got
        start, woke_ns = sleep_until(at_ns)
        return start, {"at_ns": at_ns, "seen_ns": seen_ns, "woke_ns": woke_ns}


def parse_args(argv) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python3 -m hosts.agent",
                                 description="Run one rank of a ring AllReduce job.")
    ap.add_argument("--job", required=True, help="job file (TOML)")
    ap.add_argument("--rank", required=True, type=int, help="this agent's rank")
    ap.add_argument("--log-dir", default="agents", help="where rank<R>.jsonl goes (./agents)")
    ap.add_argument("--start-file", type=Path, metavar="PATH",
                    help="once set up (after `ready`), wait for PATH and start at the time it holds "
                         "(ns, CLOCK_REALTIME); without it the agent starts at once")
    ap.add_argument("--start-timeout", type=float, default=START_WAIT_S, metavar="S",
                    help=f"how long to wait for the start file before failing (exit 3; {START_WAIT_S:g} s)")
    args = ap.parse_args(argv)
    if not args.start_timeout > 0:
        ap.error(f"--start-timeout {args.start_timeout:g}: must be above 0 s")
    return args


def open_records(args) -> tuple[JobSpec, Records]:
    """The job and the agent's records; JobError or UsageError."""
    spec = load_job(args.job)
    if not 0 <= args.rank < spec.n_ranks:
        raise UsageError(f"--rank {args.rank}: the job has ranks 0..{spec.n_ranks - 1}")
    if spec.data_port < 1024 and os.geteuid() != 0:
        raise UsageError(f"data_port {spec.data_port} is a privileged port: run as root")
    log_dir = Path(args.log_dir)
    try:
        log_dir.mkdir(parents=True, exist_ok=True)
        return spec, Records(log_dir / f"rank{args.rank}.jsonl", spec.job, args.rank)
    except OSError as e:
        raise UsageError(f"--log-dir {log_dir}: {e.strerror or e}") from None


def serve(spec: JobSpec, rank: int, log: Records, start_file: Path | None = None,
          start_timeout: float = START_WAIT_S) -> int:
    """Open the transport, draw the data, log `ready`, wait for the start
    (start_file), run the iterations, record how it ended; the exit code.
    RecordsLost when a record could not be written."""
    try:
        agent = Agent(spec, rank, log)
        try:
            agent.tr.open()
        except OSError as e:
            ip = spec.ranks[rank].ip
            hint = " (is this rank's address on this host?)" if e.errno == errno.EADDRNOTAVAIL else ""
            raise UsageError(f"cannot bind {ip} ports {spec.data_port}-"
                             f"{spec.data_port + 1}: {e.strerror or e}{hint}") from None
    except UsageError as e:
        say(f"hosts.agent: {e}")
        return exits.USAGE
    try:
        agent.prepare()
        log.emit("ready", iter=0, step=0)
        if start_file is None:
            return agent.run()
        got = agent.await_start(start_file, start_timeout)
        return exits.FAILED if got is None else agent.run(*got)
    except UsageError as e:
        say(f"hosts.agent rank {rank}: {e}")
        return exits.USAGE
    except OSError as e:
        # e.g. a step's tagged port held by a socket without SO_REUSEADDR
        reason = f"socket error: {e.strerror or e}"
        say(f"hosts.agent rank {rank}: {reason}")
        log.emit("error", iter=agent.at[0], step=agent.at[1], reason=reason)
        return exits.FAILED
    except (KeyboardInterrupt, Terminated) as e:
        # the events so far are on disk; add the counters, then go
        log.emit("stats", iter=agent.at[0], step=agent.at[1], **stats_fields(agent.tr))
        return exits.TERMINATED if isinstance(e, Terminated) else exits.INTERRUPTED
    finally:
        agent.tr.close()


def main(argv=None) -> int:
    args = parse_args(argv)      # argparse prints its own one-line usage error, exit 2
    signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        spec, log = open_records(args)
    except (JobError, UsageError) as e:
        say(f"hosts.agent: {e}")
        return exits.USAGE
    try:
        return serve(spec, args.rank, log, args.start_file, args.start_timeout)
    except RecordsLost as e:
        say(f"hosts.agent rank {args.rank}: {e}")
        return exits.DISK_FULL if e.full else exits.FAILED
    finally:
        log.close()


if __name__ == "__main__":
    sys.exit(main())
