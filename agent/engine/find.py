"""Finding the engine an unreadable record was about: its process and its port, from /proc.

A torn ``engine.json`` (a crash mid-write, a disk that failed, an operator's editor) must not make
the agent start a second engine beside the one that runs: the first would serve on, unsupervised.
Nor may it make the agent take a stranger for its engine: a number in a damaged file is a place to
look, never evidence (a record torn inside its pid, ``"pid": 4`` of pid 400, named a live process
that was then adopted and signalled). A process is this agent's engine only on evidence:

* its start time and command line are those the record names (both legible, both matching);
* or its command line names a file in this agent's engine directory (the simulated engine's
  ``--profile``, SGLang's ``--config`` and adaptive config);
* or its environment carries this agent's engine directory (``ENGINE_DIR_ENV``, set at launch);
* or, for SGLang, it is an SGLang server that holds the profile's port.

Where it serves is the process's own evidence too: its ``--host`` and ``--port``, or a port it is
seen to listen on; a salvaged port is used only when the process listens there.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent.engine import proc
from agent.engine.failure import port_holder

ENGINE_DIR_ENV = "K25_AGENT_ENGINE_DIR"
"""In every engine's environment: the engine directory of the agent that launched it (evidence)."""
ENVIRON_MAX = 1 << 20


@dataclass(frozen=True)
class FoundEngine:
    pid: int
    pgid: int
    start_ticks: int
    cmdline: list[str]
    host: str | None
    port: int | None
    evidence: str = ""
    """Why this process is taken for this agent's engine (words for the operator)."""

    @property
    def url(self) -> str | None:
        if self.host is None or self.port is None:
            return None
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def describe(self) -> str:
        return f"pid {self.pid} ({' '.join(self.cmdline)[:300]})"


def flag_value(cmdline: list[str], flag: str) -> str | None:
    """``--flag VALUE`` or ``--flag=VALUE`` in a command line."""
    for i, item in enumerate(cmdline):
        if item == flag and i + 1 < len(cmdline):
            return cmdline[i + 1]
        if item.startswith(flag + "="):
            return item.partition("=")[2]
    return None


def _listens_on(pid: int, host: str, port: int) -> bool:
    holder = port_holder(host, port)
    return holder is not None and holder.pid == pid


def _address(pid: int, cmdline: list[str], salvaged: dict[str, Any]) -> tuple[str | None, int | None]:
    """Where the process serves: its own ``--host``/``--port``; a salvaged port only when the
    process is seen listening on it (a torn ``"port": 54`` of 54619 is not where it serves)."""
    host = flag_value(cmdline, "--host") or _text(salvaged.get("host"))
    port_text = flag_value(cmdline, "--port")
    if port_text is not None and port_text.isdigit() and 0 < int(port_text) < 65536:
        return host, int(port_text)
    port = salvaged.get("port")
    if host is not None and isinstance(port, int) and _listens_on(pid, host, port):
        return host, port
    return host, None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _found(pid: int, evidence: str, salvaged: dict[str, Any] | None = None) -> FoundEngine | None:
    stat = proc.read_stat(pid)
    cmdline = proc.read_cmdline(pid)
    if stat is None or cmdline is None or stat.state in ("Z", "X", "x"):
        return None
    host, port = _address(pid, cmdline, salvaged or {})
    return FoundEngine(pid, stat.pgid, stat.start_ticks, cmdline, host, port, evidence)


def _names_dir(parts: list[str], where: str) -> bool:
    return any(where + os.sep in part or part == where for part in parts)


def _environ_names(pid: int, where: str) -> bool:
    """Whether the process's environment says it was launched by the agent of ``where``."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            raw = fh.read(ENVIRON_MAX)
    except OSError:
        return False
    return f"{ENGINE_DIR_ENV}={where}".encode(errors="surrogateescape") in raw.split(b"\0")


def evidence_of(pid: int, engine_dir: Path, salvaged: dict[str, Any]) -> str | None:
    """Why the live process ``pid`` is this agent's engine, or None when nothing says it is."""
    stat = proc.read_stat(pid)
    cmdline = proc.read_cmdline(pid)
    if stat is None or not cmdline or stat.state in ("Z", "X", "x"):
        return None
    ticks, hashed = salvaged.get("start_ticks"), salvaged.get("argv_hash")
    if (
        isinstance(ticks, int)
        and isinstance(hashed, str)
        and stat.start_ticks == ticks
        and proc.argv_hash(cmdline) == hashed
    ):
        return "its start time and command line are the record's"
    where = str(engine_dir)
    if _names_dir(cmdline, where):
        return f"its command line names this agent's engine directory {where}"
    if _environ_names(pid, where):
        return f"its environment names this agent's engine directory {where}"
    return None


def _leaders_of(engine_dir: Path) -> list[tuple[int, str]]:
    """Process-group leaders (an engine runs in its own group) proven this agent's engines."""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        pid = int(entry.name)
        stat = proc.read_stat(pid)
        if stat is None or stat.pgid != pid or stat.state in ("Z", "X", "x"):
            continue
        evidence = evidence_of(pid, engine_dir, {})
        if evidence is not None:
            found.append((pid, evidence))
    return sorted(found)


def find_engines(
    salvaged: dict[str, Any], engine_dir: Path, port_hint: tuple[str, int] | None
) -> list[FoundEngine]:
    """The engines of this agent an unreadable record may have been about, each with the evidence
    that it is one (may be empty). The salvaged pid is looked at first, and taken only on evidence."""
    pid = salvaged.get("pid")
    if isinstance(pid, int) and pid > 0:
        evidence = evidence_of(pid, engine_dir, salvaged)
        found = _found(pid, evidence, salvaged) if evidence is not None else None
        if found is not None:
            return [found]
    engines = [f for f in (_found(p, why) for p, why in _leaders_of(engine_dir)) if f is not None]
    if engines or port_hint is None:
        return engines
    holder = port_holder(*port_hint)
    if (
        holder is not None
        and holder.pid is not None
        and any("sglang" in part for part in holder.cmdline or [])
    ):
        why = f"an SGLang server that holds the profile's port {port_hint[1]}"
        found = _found(holder.pid, why, {"host": port_hint[0], "port": port_hint[1]})
        return [found] if found is not None else []
    return []
