"""The agent's state directory under a full (or failing) disk: what could not be written, and the
retries that put it right once space is back.

A full state disk must never end supervision: the engine record, a benchmark result or a log
rotation that cannot be written is *remembered* here (with the write that would fix it), the
daemon raises one finding ("state disk full: audit and snapshots paused") while anything is
pending, and every telemetry tick retries. The audit log keeps a reserve of its own, so these
writes fail first and the audit last (``agent.control.audit``).

A fault hook for hosts that cannot mount a small tmpfs: while the file named by
``K25_FAULT_FULL_FLAG`` exists, ``check_injected()`` raises ENOSPC, as the disk would.
"""

from __future__ import annotations

import errno
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass

from agent.wire.snapshot import Finding

log = logging.getLogger(__name__)

FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})
STATE_DISK_FULL = "state disk full: audit and snapshots paused"
FAULT_FLAG_ENV = "K25_FAULT_FULL_FLAG"
ROOM_TO_START = 256 * 1024
"""What an engine start needs in the state directory (its launch files, its record, its log's start)
before the supervisor tries it: a start on a disk without it waits, uncounted."""


def check_injected() -> None:
    """Raise ENOSPC while the fault suite's flag file exists (only when the variable is set)."""
    flag = os.environ.get(FAULT_FLAG_ENV)
    if flag and os.path.exists(flag):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), flag)


def is_full(exc: BaseException) -> bool:
    return isinstance(exc, OSError) and exc.errno in FULL_ERRNOS


@dataclass
class _Pending:
    error: str
    since: float
    retry: Callable[[], None] | None


class StateDisk:
    """What of the agent's state is not on disk yet, and why. Single-threaded (the event loop)."""

    def __init__(self, root: str = "") -> None:
        self.root = root
        self._pending: dict[str, _Pending] = {}
        self.recovered = 0
        """How many times everything pending was written after all (a test reads it)."""

    @property
    def problem(self) -> str | None:
        """One line: what is not written and why; None when the state disk is fine."""
        if not self._pending:
            return None
        parts = [f"{what} ({p.error})" for what, p in self._pending.items()]
        return "not written: " + "; ".join(parts)

    @property
    def since(self) -> float | None:
        return min((p.since for p in self._pending.values()), default=None)

    def failed(self, what: str, exc: OSError, retry: Callable[[], None] | None = None) -> None:
        """``what`` could not be written; ``retry`` (when given) writes it, and runs on each tick."""
        error = exc.strerror or str(exc)
        old = self._pending.get(what)
        if old is None:
            log.error("state disk: %s could not be written: %s", what, error)
        kept = retry if retry is not None else (old.retry if old is not None else None)
        self._pending[what] = _Pending(error, old.since if old else time.time(), kept)

    def ok(self, what: str) -> None:
        if self._pending.pop(what, None) is not None:
            log.info("state disk: %s written again", what)
            if not self._pending:
                self.recovered += 1

    def write(self, what: str, fn: Callable[[], None], *, retry: bool = True) -> bool:
        """Run the write ``fn``; on an OSError remember it (and retry it later when ``retry``)."""
        try:
            check_injected()
            fn()
        except OSError as exc:
            self.failed(what, exc, fn if retry else None)
            return False
        self.ok(what)
        return True

    def retry_all(self) -> None:
        """Each tick: write again what is pending; what has no retry clears once another write works."""
        for what, pending in list(self._pending.items()):
            if pending.retry is not None:
                self.write(what, pending.retry)
            else:
                self._probe(what)

    def _probe(self, what: str) -> None:
        """A write without a retry of its own (a log line): clear it once a small write succeeds."""
        if self.has_room(4096):
            self.ok(what)

    def has_room(self, size: int = ROOM_TO_START) -> bool:
        """Whether ``size`` bytes can be written in the state directory now (written and removed)."""
        probe = os.path.join(self.root or ".", ".k25-space-probe")
        try:
            check_injected()
            fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            try:
                if os.write(fd, b"\0" * size) != size:
                    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            finally:
                os.close(fd)
                os.unlink(probe)
        except OSError:
            return False
        return True

    def finding(self) -> Finding | None:
        problem = self.problem
        if problem is None:
            return None
        return Finding(
            code="state_disk_full",
            severity="critical",
            title=STATE_DISK_FULL,
            explanation=f"The agent's state directory {self.root} cannot be written: {problem}. The engine "
            "is still supervised; the audit writes into its reserve, and actions are refused once that "
            "is used up, so nothing is applied unaudited.",
            action=f"Free space on the filesystem of {self.root}; the agent writes what is pending and "
            "clears this by itself.",
            since=self.since,
        )
