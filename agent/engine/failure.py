"""Why an engine did not start, in words an operator can act on.

Two failures the real engine showed that an exit code does not explain:

* SGLang dies before it is ready: its scheduler logs a Python traceback, then SGLang kills its own
  process tree, so the agent sees only ``exit -9``. ``startup_error`` reads the engine's log from the
  launch on and keeps the exception line and the frame that raised it (real example:
  ``ModuleNotFoundError: No module named 'cutlass'`` raised at ``cutedsl_dual_gemm.py, line 36:
  import cutlass``), or the last lines that say "error" when there is no traceback.
* The port is already held, typically by an engine an earlier agent started (the engine outlives its
  agent): retrying cannot help, so ``port_holder`` names the process (pid and command line when this
  user may read them) for one clear event instead of a crash loop.
"""

from __future__ import annotations

import os
import re
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

MAX_READ_BYTES = 512 * 1024
"""The log read back after a failed start; a traceback is at its end."""
MAX_LINE = 300
TRACEBACK = "Traceback (most recent call last)"
_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<func>.+)$')
_EXCEPTION = re.compile(
    r"^(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception|Exit|Interrupt|Failure|Fault)\b.*"
)
_NOISE = ("server_args=", "api_key", "--api-key")
"""Lines never quoted: SGLang prints its server args, keys included, at start-up."""


def port_in_use(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


@dataclass(frozen=True)
class StartupError:
    summary: str
    """The exception line (or the last line that says error): what goes into the event message."""
    frame: str | None = None
    """``file, line N, in func: code`` of the frame that raised."""
    lines: list[str] = field(default_factory=list)
    """The log lines this was read from (at most a dozen), for ``agent status`` and the event data."""

    def describe(self) -> str:
        return self.summary + (f" (raised at {self.frame})" if self.frame else "")

    def as_status(self, redact: Callable[[list[str]], list[str]], log: str) -> dict[str, Any]:
        """What ``agent status`` and the event carry (``redact`` hides the engine's keys)."""
        lines = redact([self.summary, self.frame or "", *self.lines])
        return {
            "time": time.time(),
            "summary": lines[0],
            "frame": lines[1] or None,
            "lines": lines[2:],
            "log": log,
        }


def _short(line: str) -> str:
    line = line.rstrip()
    return line if len(line) <= MAX_LINE else line[: MAX_LINE - 1] + "…"


def read_log_since(path: Path, offset: int) -> list[str]:
    """The engine log's lines written since ``offset`` (bounded to the last ``MAX_READ_BYTES``)."""
    try:
        with path.open("rb") as fh:
            end = fh.seek(0, os.SEEK_END)
            start = max(offset, end - MAX_READ_BYTES, 0) if offset <= end else max(0, end - MAX_READ_BYTES)
            fh.seek(start)
            data = fh.read()
    except OSError:
        return []
    return data.decode("utf-8", errors="replace").splitlines()


def startup_error(lines: list[str]) -> StartupError | None:
    """The last traceback's exception and raising frame, else the last lines mentioning an error."""
    clean = [line for line in lines if not any(n in line for n in _NOISE)]
    starts = [i for i, line in enumerate(clean) if TRACEBACK in line]
    if starts:
        block = clean[starts[-1] :]
        frame: str | None = None
        frame_at = 0
        for i, line in enumerate(block):
            match = _FRAME.match(line)
            if match:
                code = block[i + 1].strip() if i + 1 < len(block) and not _FRAME.match(block[i + 1]) else ""
                where = f"{match['file']}, line {match['line']}, in {match['func']}"
                frame, frame_at = (f"{where}: {code}" if code and set(code) != {"^"} else where), i
                continue
            if i > frame_at and _EXCEPTION.match(line.strip()) and not line.startswith((" ", "\t")):
                kept = [_short(x) for x in [block[0], *block[max(1, frame_at - 1) : i + 1]]][-12:]
                return StartupError(_short(line.strip()), frame and _short(frame), kept)
    errors = [line for line in clean if "error" in line.lower() or "fatal" in line.lower()]
    if errors:
        return StartupError(_short(errors[-1].strip()), None, [_short(x) for x in errors[-6:]])
    tail = [line for line in clean if line.strip()][-3:]
    if tail:
        return StartupError(_short(tail[-1].strip()), None, [_short(x) for x in tail])
    return None


@dataclass(frozen=True)
class PortHolder:
    host: str
    port: int
    pid: int | None
    cmdline: list[str] | None

    def as_status(self) -> dict[str, Any]:
        holder = {"host": self.host, "port": self.port, "pid": self.pid, "cmdline": self.cmdline}
        return {
            "time": time.time(),
            "summary": self.describe(),
            "frame": None,
            "lines": [],
            "port_holder": holder,
        }

    def describe(self) -> str:
        if self.pid is None:
            who = "a process this user cannot see (another user's, or in another namespace)"
        elif self.cmdline:
            who = f"pid {self.pid} ({' '.join(self.cmdline)[:MAX_LINE]})"
        else:
            who = f"pid {self.pid}"
        stop = (
            f"stop it (`agent stop --engine-too` on the agent that started it, or SIGTERM to pid "
            f"{self.pid}'s process group)"
            if self.pid is not None
            else "stop it"
        )
        return (
            f"Port {self.host}:{self.port} is held by {who}, which this agent did not start; not starting a "
            f"second server. To adopt it, run this agent with the --state-dir of the agent that started it "
            f"(it reattaches from that agent's engine record); to replace it, {stop}, then start the engine "
            "again (POST /v1/engine/start, or from the console)"
        )


def crash_words(pid: int, code: int | None, ready: bool, why: dict[str, Any] | None, counted: str) -> str:
    """The ``engine.crashed`` message: how it ended, the log's reason, and how it counts."""
    how = f"exit code {code}" if code is not None else "it is gone"
    before = "before it was ready " if not ready else ""
    said = f"The engine (pid {pid}) stopped {before}unexpectedly ({how})"
    if why:
        said += f": {why['summary']}" + (f" (raised at {why['frame']})" if why["frame"] else "")
    return f"{said}; {counted}"


def _matches(address: str, host: str) -> bool:
    return address in (host, "0.0.0.0", "::", "::ffff:" + host) or (
        host == "localhost" and address == "127.0.0.1"
    )


def port_holder(host: str, port: int) -> PortHolder | None:
    """Who listens on ``host:port`` (None when nobody does)."""
    if not port_in_use(host, port):
        return None
    pid: int | None = None
    try:
        for conn in psutil.net_connections(kind="inet"):
            listening = conn.status == psutil.CONN_LISTEN and conn.laddr and conn.laddr.port == port
            if listening and _matches(conn.laddr.ip, host) and conn.pid is not None:
                pid = conn.pid
                break
    except (psutil.Error, OSError):
        pid = None
    cmdline: list[str] | None = None
    if pid is not None:
        try:
            cmdline = psutil.Process(pid).cmdline() or None
        except (psutil.Error, OSError):
            cmdline = None
    return PortHolder(host, port, pid, cmdline)
