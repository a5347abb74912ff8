"""Finding the engine an unreadable record was about: its process and its port, from /proc.

A torn ``engine.json`` (a crash mid-write, a disk that failed, an operator's editor) must not make
the agent start a second engine beside the one that runs: the first would serve on, unsupervised.
What identifies our engine without the record: the legible part of the record (its fields come
first, so a tear usually leaves the pid and the port), else a process-group leader whose command
line names a file in this agent's engine directory (the simulated engine's ``--profile``, SGLang's
``--config`` and adaptive config), else, for SGLang, whoever serves the profile's port.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent.engine import proc
from agent.engine.failure import port_holder


@dataclass(frozen=True)
class FoundEngine:
    pid: int
    pgid: int
    start_ticks: int
    cmdline: list[str]
    host: str | None
    port: int | None

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


def _found(pid: int, host: str | None = None, port: int | None = None) -> FoundEngine | None:
    stat = proc.read_stat(pid)
    cmdline = proc.read_cmdline(pid)
    if stat is None or cmdline is None or stat.state in ("Z", "X", "x"):
        return None
    port_text = flag_value(cmdline, "--port")
    if port is None and port_text is not None and port_text.isdigit():
        port = int(port_text)
    host = host or flag_value(cmdline, "--host")
    return FoundEngine(pid, stat.pgid, stat.start_ticks, cmdline, host, port)


def _leaders_naming(directory: Path) -> list[int]:
    """Process-group leaders (an engine runs in its own group) whose command line names ``directory``."""
    where = str(directory)
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        pid = int(entry.name)
        stat = proc.read_stat(pid)
        if stat is None or stat.pgid != pid or stat.state in ("Z", "X", "x"):
            continue
        cmdline = proc.read_cmdline(pid) or []
        if any(where + os.sep in part or part == where for part in cmdline):
            found.append(pid)
    return sorted(found)


def find_engines(
    salvaged: dict[str, Any], engine_dir: Path, port_hint: tuple[str, int] | None
) -> list[FoundEngine]:
    """The engines an unreadable record may have been about, best evidence first (may be empty)."""
    pid = salvaged.get("pid")
    if isinstance(pid, int):
        ticks = salvaged.get("start_ticks")
        alive = (
            proc.is_same_process(pid, ticks) if isinstance(ticks, int) else proc.read_stat(pid) is not None
        )
        cmdline = proc.read_cmdline(pid) if alive else None
        hashed = salvaged.get("argv_hash")
        if alive and cmdline and (not isinstance(hashed, str) or proc.argv_hash(cmdline) == hashed):
            found = _found(pid, salvaged.get("host"), salvaged.get("port"))
            if found is not None:
                return [found]
    engines = [f for f in (_found(p) for p in _leaders_naming(engine_dir)) if f is not None]
    if engines or port_hint is None:
        return engines
    holder = port_holder(*port_hint)
    if (
        holder is not None
        and holder.pid is not None
        and any("sglang" in part for part in holder.cmdline or [])
    ):
        found = _found(holder.pid, port_hint[0], port_hint[1])
        return [found] if found is not None else []
    return []
