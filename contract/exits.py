"""Exit codes, one meaning each, shared by every command of the project: the
agent (``python3 -m hosts.agent``), the runner (``python3 -m experiments``)
and analysis (``python3 -m analysis``).  The user's table is in
experiments/README.md ("Exit codes"); the agent's in docs/hosts.md.

A command that fails prints one line naming the problem, never a traceback.
"""

from __future__ import annotations

import errno

OK = 0              # every run ok and every result exact (analysis: the report was written)
WRONG = 1           # an AllReduce result was wrong; nothing else exits 1
USAGE = 2           # bad config, job file, arguments or paths (one line naming the key or path)
FAILED = 3          # a run failed: a deadline passed, a switch or agent died, a socket failed
DISK_FULL = 4       # records could not be written: the file system is full (ENOSPC, EDQUOT)
INTERRUPTED = 130   # SIGINT (Ctrl-C) or SIGTERM: the runner takes SIGTERM as SIGINT and names it
TERMINATED = 143    # SIGTERM (the agent, when a runner tears its run down)

MEANINGS = {
    OK: "ok",
    WRONG: "a result was wrong",
    USAGE: "bad config, job file, arguments or paths",
    FAILED: "a run failed (a deadline passed, a switch or agent died)",
    DISK_FULL: "disk full: records could not be written",
    INTERRUPTED: "interrupted (SIGINT or SIGTERM)",
    TERMINATED: "terminated (SIGTERM)",
}

FULL_ERRNOS = (errno.ENOSPC, errno.EDQUOT)


def one_line(message: object) -> str:
    """A failure's message as the one line it is printed as: every run of
    whitespace, the line breaks a key or a parser's message may carry
    (newline, \\x1c-\\x1e, \\x85, \\u2028) included, made one space."""
    return " ".join(str(message).split())


def interrupted(signals: str) -> str:
    """INTERRUPTED's meaning with the signal(s) received, e.g. "SIGTERM"."""
    return f"interrupted ({signals})"


def is_disk_full(exc: BaseException) -> bool:
    """Whether an exception is a write that found no space (or quota) left."""
    return isinstance(exc, OSError) and exc.errno in FULL_ERRNOS
