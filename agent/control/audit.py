"""The audit log: one JSON line per state change, append-only, fsynced, write-ahead.

* Every record is written as one complete line with one ``write`` on an O_APPEND descriptor, so
  concurrent writers never interleave within a line and nothing earlier is ever rewritten. A line a
  crash or a full disk left torn (no newline at the end of the file) is closed with a newline before
  the next record, so the next record is never glued onto it.
* An action writes its *intent* (``phase: "intent"``) and fsyncs it before anything is applied, and
  its *outcome* after. A record that cannot be made durable raises ``AuditUnavailable``: the caller
  refuses the change.
* Full disk: a reserve file next to the log (``audit.jsonl.reserve``) gives back, each time a write
  meets ENOSPC, only the room that write needs, at once, so the room is the audit's alone (given up
  whole, it went to the engine log, benchmark results and profile saves, and the audit was refused
  the next line); it is allocated again once space is back. A record that cannot be written whole
  is cut off again (the file truncated to where it was), so a refused record leaves no torn line.
* Reads are streamed: the newest ``limit`` records are read backwards from the end in blocks, a page
  after a byte ``cursor`` forwards; a torn or corrupt line is skipped and reported, never fatal.

Values are those of the profile and the plan, never secrets: key *files* are named in profiles, keys
are not.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import secrets
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.engine.state_disk import StateDisk, check_injected, is_full
from agent.profile.regular_file import open_regular_file

RESERVE_BYTES = 256 * 1024
"""Some hundreds of audit lines: what the audit can still write once the disk is full."""
RESERVE_ENV = "K25_FAULT_AUDIT_RESERVE"
"""The fault suite's smaller reserve (bytes), so that using it up takes a few actions, not hundreds."""
PAGE = 4096
BLOCK = 64 * 1024


class AuditUnavailable(Exception):
    """The record could not be made durable; the change it describes must not be applied."""


@dataclass
class AuditPage:
    lines: list[dict[str, Any]]
    corrupt: list[dict[str, Any]]
    """Lines skipped: ``{"offset", "length", "reason"}`` (byte offset in the file)."""
    cursor: int
    """Byte offset of the first line read (a ``before`` for the page before this one)."""
    next_cursor: int
    """Byte offset after the last line read (a ``cursor`` for the page after this one)."""

    def as_dict(self) -> dict[str, Any]:
        return {
            "lines": self.lines,
            "corrupt": self.corrupt,
            "cursor": self.cursor,
            "next_cursor": self.next_cursor,
        }


def _parse(raw: bytes) -> tuple[dict[str, Any] | None, str]:
    try:
        value = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        return None, f"not JSON ({type(exc).__name__}): a torn or damaged line"
    if not isinstance(value, dict) or not isinstance(value.get("time"), int | float) or "action" not in value:
        return None, "not an audit record (no time or action)"
    return value, ""


@dataclass
class AuditIndex:
    """What a start-up scan of the whole log found (streamed, line by line)."""

    requests: dict[str, str] = field(default_factory=dict)
    """request_id → the last status audited for it (an intent with no outcome reads "intent")."""
    pending: dict[str, dict[str, Any]] = field(default_factory=dict)
    """action_id → its intent record, for intents with no outcome (a kill between the two)."""
    open_ops: dict[str, dict[str, Any]] = field(default_factory=dict)
    """op_id → the intent of an operation (an engine restart...) with no outcome yet."""
    corrupt: int = 0
    records: int = 0


class AuditLog:
    def __init__(
        self, path: Path, *, disk: StateDisk | None = None, reserve_bytes: int | None = None
    ) -> None:
        self.path = path
        self.reserve = path.with_name(path.name + ".reserve")
        if reserve_bytes is None:
            reserve_bytes = int(os.environ.get(RESERVE_ENV) or RESERVE_BYTES)
        self.reserve_bytes = reserve_bytes
        self.disk = disk or StateDisk(str(path.parent))
        self.using_reserve = False
        self.make_reserve()

    # ---- writing ----------------------------------------------------------------------------------

    def make_reserve(self) -> bool:
        """Allocate the reserve (again); False while there is no room for it."""
        if self.reserve_bytes <= 0:
            return True
        try:
            check_injected()
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.reserve, os.O_WRONLY | os.O_CREAT, 0o600)
            try:
                os.posix_fallocate(fd, 0, self.reserve_bytes)
            finally:
                os.close(fd)
        except OSError:
            return False
        self.using_reserve = False
        return True

    def _give_up_reserve(self, need: int) -> bool:
        """Give back ``need`` bytes of the reserve (whole pages; the rest of it stays the audit's);
        False when there is none left."""
        try:
            size = os.stat(self.reserve).st_size
            keep = size - -(-max(need, 1) // PAGE) * PAGE
            if keep > 0:
                os.truncate(self.reserve, keep)
            else:
                self.reserve.unlink()
        except FileNotFoundError:
            return False
        self.using_reserve = True
        return True

    def append(
        self,
        *,
        operator: str | None,
        action: dict[str, Any],
        before: Any,
        after: Any,
        result: dict[str, Any],
        when: float | None = None,
        phase: str = "record",
        source: dict[str, Any] | None = None,
        live: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Write one record durably (fsync) or raise ``AuditUnavailable`` saying why.

        ``phase``: "intent" (before a change), "outcome" (after it), "record" (a change audited in
        one line); ``source``: where the request came from; ``live``: the engine's live values the
        record puts (or found) in force, which the start-up reconciliation reads."""
        line: dict[str, Any] = {
            "time": time.time() if when is None else when,
            "id": secrets.token_hex(6),
            "phase": phase,
            "operator": operator,
            "source": source or {"via": "agent"},
            "action": action,
            "before": before,
            "after": after,
            "result": result,
        }
        if live is not None:
            line["live"] = live
        data = (json.dumps(line, sort_keys=True, default=str) + "\n").encode("utf-8")
        try:
            self._write(data)
        except OSError as exc:
            self.disk.failed("the audit log", exc)
            why = exc.strerror or str(exc)
            raise AuditUnavailable(f"the audit log {self.path} cannot be written ({why})") from exc
        if self.using_reserve:
            self.disk.failed(
                "the audit reserve", OSError(errno.ENOSPC, "used up: the disk is full"), self._refill
            )
        else:
            self.disk.ok("the audit log")
        return line

    def append_or_later(self, what: str, **record: Any) -> bool:
        """``append``; a record that cannot be written now (an outcome, after its intent) is kept and
        written, with its own time, once the disk can take it (``StateDisk.retry_all``). True: written now."""
        record.setdefault("when", time.time())
        try:
            self.append(**record)
            return True
        except AuditUnavailable as exc:
            first = exc

        def retry() -> None:
            try:
                self.append(**record)
            except AuditUnavailable as again:
                raise OSError(errno.ENOSPC, str(again)) from again

        self.disk.failed(what, OSError(errno.ENOSPC, str(first)), retry)
        return False

    def _refill(self) -> None:
        """Allocate the reserve again once the disk has room for it twice over: taking back the
        room the reserve just gave would only leave the disk as full as before, reserve and all."""
        st = os.statvfs(self.path.parent)
        if st.f_bavail * st.f_frsize < 2 * self.reserve_bytes or not self.make_reserve():
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def _write(self, data: bytes) -> None:
        check_injected()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            size = os.fstat(fd).st_size
            if size and os.pread(fd, 1, size - 1) != b"\n":
                data = b"\n" + data  # close a torn line: this record must not be glued to it
            try:
                self._write_whole(fd, data)
                os.fsync(fd)
            except OSError:
                # Refused: what of the record was written goes again, so no torn line stays.
                with contextlib.suppress(OSError):
                    os.ftruncate(fd, size)
                raise
        finally:
            os.close(fd)

    def _write_whole(self, fd: int, data: bytes) -> None:
        written = 0
        while written < len(data):
            try:
                n = os.write(fd, data[written:])
            except OSError as exc:
                if is_full(exc) and self._give_up_reserve(len(data) - written):
                    continue
                raise
            if n == 0:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            written += n

    # ---- reading ----------------------------------------------------------------------------------

    def read(self, limit: int = 100) -> list[dict[str, Any]]:
        return self.page(limit=limit).lines

    def page(
        self,
        *,
        limit: int = 100,
        cursor: int | None = None,
        before: int | None = None,
        since: float | None = None,
    ) -> AuditPage:
        """The newest ``limit`` records (ending at byte ``before``), or ``limit`` records from byte
        ``cursor`` on; ``since``: only records at or after that Unix time. Oldest first."""
        try:
            fh = open_regular_file(self.path)  # a FIFO or a link there: NotAFile, never a hang
        except FileNotFoundError:
            return AuditPage([], [], 0, 0)
        with fh:
            size = os.fstat(fh.fileno()).st_size
            if cursor is not None:
                return self._forward(fh, min(cursor, size), size, limit, since)
            return self._backward(fh, size if before is None else min(before, size), limit, since)

    def _forward(self, fh: Any, start: int, size: int, limit: int, since: float | None) -> AuditPage:
        fh.seek(start)
        lines: list[dict[str, Any]] = []
        corrupt: list[dict[str, Any]] = []
        offset = start
        while len(lines) < limit and offset < size:
            raw = fh.readline()
            if not raw.endswith(b"\n"):
                break  # a line still being written, or torn at the end: read once it is closed
            record, why = _parse(raw)
            if record is None:
                corrupt.append({"offset": offset, "length": len(raw), "reason": why})
            elif since is None or record["time"] >= since:
                lines.append(record)
            offset += len(raw)
        return AuditPage(lines, corrupt, start, offset)

    def _backward(self, fh: Any, end: int, limit: int, since: float | None) -> AuditPage:
        found: list[dict[str, Any]] = []
        corrupt: list[dict[str, Any]] = []
        start = end
        for offset, raw in _lines_backward(fh, end):
            record, why = _parse(raw)
            if record is None:
                corrupt.append({"offset": offset, "length": len(raw), "reason": why})
                start = offset
                continue
            if since is not None and record["time"] < since:
                break
            found.append(record)
            start = offset
            if len(found) >= limit:
                break
        found.reverse()
        corrupt.reverse()
        return AuditPage(found, corrupt, start, end)

    def newest(self, accept: Callable[[dict[str, Any]], bool], most: int = 10_000) -> dict[str, Any] | None:
        """The newest record ``accept`` takes, among the last ``most`` lines (read from the end: the
        undo asks for the last applied change, which is near it)."""
        try:
            fh = self.path.open("rb")
        except FileNotFoundError:
            return None
        with fh:
            end = os.fstat(fh.fileno()).st_size
            for n, (_offset, raw) in enumerate(_lines_backward(fh, end)):
                if n >= most:
                    return None
                record, _why = _parse(raw)
                if record is not None and accept(record):
                    return record
        return None

    def records(self) -> Iterator[tuple[int, dict[str, Any] | None, str]]:
        """Every line from the start, streamed: (offset, record or None, why it is not one)."""
        try:
            fh = open_regular_file(self.path)  # a FIFO or a link there: NotAFile, never a hang
        except FileNotFoundError:
            return
        with fh:
            offset = 0
            for raw in fh:
                record, why = _parse(raw)
                yield offset, record, why
                offset += len(raw)

    def index(self, keep: int = 10_000) -> AuditIndex:
        """Request ids already audited (the newest ``keep``) and intents left without an outcome."""
        idx = AuditIndex()
        for _, record, _why in self.records():
            if record is None:
                idx.corrupt += 1
                continue
            idx.records += 1
            action = record.get("action") or {}
            rid, aid = action.get("request_id"), action.get("action_id")
            status = (record.get("result") or {}).get("status")
            op = action.get("op_id")
            if op and record.get("phase") == "intent":
                idx.open_ops[str(op)] = record
            elif op:
                idx.open_ops.pop(str(op), None)
            if record.get("phase") == "intent" and aid:
                idx.pending[str(aid)] = record
                status = "intent"
            elif aid:
                idx.pending.pop(str(aid), None)
            if rid:
                idx.requests.pop(str(rid), None)
                idx.requests[str(rid)] = str(status)
                while len(idx.requests) > keep:
                    idx.requests.pop(next(iter(idx.requests)))
        return idx


def _lines_backward(fh: Any, end: int) -> Iterator[tuple[int, bytes]]:
    """The lines of the file before byte ``end``, newest first, as (offset, bytes with their newline),
    read in blocks from the end; a last line without its newline (torn) comes first, as it is."""
    buf = b""
    buf_start = end
    while True:
        cut = buf.rfind(b"\n", 0, max(len(buf) - 1, 0))  # a newline before this line's own
        if cut >= 0:
            yield buf_start + cut + 1, buf[cut + 1 :]
            buf = buf[: cut + 1]
            continue
        if buf_start == 0:
            if buf:
                yield 0, buf
            return
        step = min(BLOCK, buf_start)
        buf_start -= step
        fh.seek(buf_start)
        buf = fh.read(step) + buf
