"""The engine state file: enough to find, verify and adopt a running engine after an agent restart.

It holds the profile the engine was launched with, so a restarted agent knows what really runs even
when its ``--profile`` file has been edited since, and the running profile with the operator's live
values (threshold, pinned steps), so that they survive every restart: ``live_pending`` says they are
not yet in force on this engine (it was launched and the agent stopped before it put them back), and
``restart_to`` says the engine is being replaced (a crash restart, or a restart the agent began) by a
launch of these profiles. A restarted agent finishes what the record says was under way.

Full disk: the record is written into a spare file allocated beforehand (``engine.json.spare``),
which then replaces it by rename, and a new spare is allocated at once in the room the old record
gave back. A record padded to a fixed size (JSON allows trailing white space) makes each swap take
as much room as it gives, so a record can be rewritten on a full disk: it is never absent while an
engine runs. Mode 0600, fsynced, renamed: a reader sees the old record or the new one.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from agent.profile.atomic import fsync_dir
from agent.profile.regular_file import read_regular_file
from agent.sglang.redact import hidden_profile_toml

EngineKind = Literal["sglang", "sim"]

SLOT_BYTES = 64 * 1024
"""Every record (and its spare) is padded to this size, or a multiple of 4 KiB above it."""


class RestartTo(BaseModel):
    """What the engine is being replaced by: its launch profile and the running one (live values)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    profile_toml: str
    live_profile_toml: str | None = None


class EngineRecord(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    kind: EngineKind
    pid: int
    pgid: int
    start_ticks: int
    argv_hash: str
    host: str
    port: int
    launched_at: float
    profile_name: str
    profile_toml: str
    """The profile the engine was launched with: what its process was built with."""
    log_path: str
    live_profile_toml: str | None = None
    """The running profile with the operator's live values; None when they are the launch's."""
    live_pending: bool = False
    """The live values of ``live_profile_toml`` are not yet in force on this engine (put back once
    it is ready: the agent that launched it stopped first)."""
    restart_to: RestartTo | None = None
    """The engine is being replaced by a launch of these profiles (it crashed, or the agent is
    restarting it); a restarted agent that finds the engine gone launches them."""

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"


def _hidden(toml: str | None) -> str | None:
    return None if toml is None else hidden_profile_toml(toml)


def hidden_record(record: EngineRecord) -> EngineRecord:
    """The record with its profiles' env values and secrets hidden: the state directory is no place
    for HF_TOKEN; an adopting agent takes them from its own ``--profile`` (``adopt``)."""
    restart = record.restart_to
    return record.model_copy(
        update={
            "profile_toml": hidden_profile_toml(record.profile_toml),
            "live_profile_toml": _hidden(record.live_profile_toml),
            "restart_to": None
            if restart is None
            else RestartTo(
                profile_toml=hidden_profile_toml(restart.profile_toml),
                live_profile_toml=_hidden(restart.live_profile_toml),
            ),
        }
    )


def spare_of(path: Path) -> Path:
    return path.with_name(path.name + ".spare")


def _padded(text: str) -> bytes:
    data = text.encode("utf-8")
    size = max(SLOT_BYTES, -(-(len(data) + 1) // 4096) * 4096)
    return data + b" " * (size - len(data) - 1) + b"\n"


def allocate_spare(path: Path, size: int = SLOT_BYTES) -> None:
    """Allocate the record's spare (raises OSError when there is no room for it)."""
    spare = spare_of(path)
    fd = os.open(spare, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        os.fchmod(fd, 0o600)
        os.posix_fallocate(fd, 0, size)
    finally:
        os.close(fd)


def write_record(path: Path, record: EngineRecord) -> None:
    """Write the record (secrets hidden) through its spare; see the module for why."""
    payload = _padded(hidden_record(record).model_dump_json(indent=1))
    spare = spare_of(path)
    fd = os.open(spare, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        os.fchmod(fd, 0o600)
        os.posix_fallocate(fd, 0, len(payload))  # no new room where the spare is allocated already
        written = 0
        while written < len(payload):
            written += os.pwrite(fd, payload[written:], written)
        if os.fstat(fd).st_size > len(payload):
            os.ftruncate(fd, len(payload))
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(spare, path)
    fsync_dir(path.parent)
    with contextlib.suppress(OSError):  # in the room the old record gave back: the next write needs none
        allocate_spare(path, len(payload))


@dataclass(frozen=True)
class RecordRead:
    """What reading the record found: a record, nothing (no file), or a file that cannot be trusted."""

    record: EngineRecord | None = None
    problem: str | None = None
    """Why the file is unreadable (None when it was read, or when there is none)."""
    salvaged: dict[str, Any] = field(default_factory=dict)
    """The identity fields still legible in an unreadable file (pid, port...): where to look, not
    what to trust."""


_END = r"(?=\s*[,}])"
"""A number is legible only where its end is seen: a tear inside it (``"pid": 4`` of 400) leaves a
prefix that reads as another, valid-looking number."""

_FIELDS = {
    "kind": r'"kind"\s*:\s*"(sglang|sim)"',
    "pid": r'"pid"\s*:\s*(\d{1,10})' + _END,
    "pgid": r'"pgid"\s*:\s*(\d{1,10})' + _END,
    "start_ticks": r'"start_ticks"\s*:\s*(\d{1,20})' + _END,
    "argv_hash": r'"argv_hash"\s*:\s*"([0-9a-f]{64})"',
    "host": r'"host"\s*:\s*"([0-9A-Za-z.:\[\]-]{1,255})"',
    "port": r'"port"\s*:\s*(\d{1,5})' + _END,
}


def salvage(text: str) -> dict[str, Any]:
    """The identity fields of a record that a tear left legible (they come first in the file):
    where to look for the engine, never evidence that a process is it (``agent.engine.find``)."""
    out: dict[str, Any] = {}
    for name, pattern in _FIELDS.items():
        match = re.search(pattern, text)
        if match:
            out[name] = int(match[1]) if match[1].isdigit() and name != "argv_hash" else match[1]
    return out


def load_record(path: Path) -> RecordRead:
    """The saved record; an unreadable one says why and what of it could still be read."""
    try:
        raw = read_regular_file(path)  # a link, a directory, a FIFO: "cannot be read", never followed
    except FileNotFoundError:
        return RecordRead()
    except OSError as exc:
        return RecordRead(problem=f"cannot be read ({exc.strerror or exc})")
    text = raw.decode("utf-8", errors="replace")
    try:
        return RecordRead(record=EngineRecord.model_validate(json.loads(raw)))
    except (ValueError, ValidationError) as exc:
        if isinstance(exc, ValidationError):
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "the top level"
            why = f"{where}: {first['msg']}"
        else:
            why = "not JSON (torn or damaged)" if text.strip() else "empty"
        return RecordRead(problem=f"unreadable: {why}, {len(raw)} bytes", salvaged=salvage(text))


def read_record(path: Path) -> EngineRecord | None:
    """The saved record, or None when there is none or it cannot be trusted (then nothing is signalled)."""
    return load_record(path).record


def set_aside(path: Path) -> Path | None:
    """Keep an unreadable record for the operator to read (``engine.json.unreadable``); its path."""
    kept = path.with_name(path.name + ".unreadable")
    try:
        os.replace(path, kept)
    except OSError:
        return None
    return kept


def clear_record(path: Path) -> None:
    path.unlink(missing_ok=True)
