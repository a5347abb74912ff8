"""What /proc says about a process, and signalling its process group safely.

A pid alone does not identify a process: it is reused. The start time in clock ticks
(``/proc/<pid>/stat`` field 22) together with the pid does, so every signal we send to an engine we
did not fork ourselves (a reattached one) is preceded by that check.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class ProcStat:
    state: str
    pgid: int
    start_ticks: int


def read_stat(pid: int) -> ProcStat | None:
    """Fields of ``/proc/<pid>/stat``; None when the process does not exist."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            raw = fh.read().decode("ascii", errors="replace")
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    # comm (field 2) may contain spaces and ')' itself; everything after the LAST ')' is fixed.
    fields = raw[raw.rfind(")") + 2 :].split()
    # fields[0] is field 3 (state); field 5 is pgrp, field 22 starttime.
    try:
        return ProcStat(state=fields[0], pgid=int(fields[2]), start_ticks=int(fields[19]))
    except (IndexError, ValueError):
        return None


def read_cmdline(pid: int) -> list[str] | None:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            raw = fh.read()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    return [part.decode("utf-8", errors="surrogateescape") for part in raw.split(b"\0")[:-1]]


def argv_hash(argv: Sequence[str]) -> str:
    return hashlib.sha256(json.dumps(list(argv)).encode("utf-8", errors="surrogateescape")).hexdigest()


def is_same_process(pid: int, start_ticks: int) -> bool:
    """True while ``pid`` is still the very process that started at ``start_ticks`` and has not exited."""
    stat = read_stat(pid)
    return stat is not None and stat.start_ticks == start_ticks and stat.state not in ("Z", "X", "x")


def group_alive(pgid: int) -> bool:
    """Whether any non-zombie process is left in the group.

    Scans /proc instead of ``killpg(pgid, 0)``: that also succeeds for zombies, which an adopted
    engine's workers become when their new parent (PID 1 in a container) does not reap them.
    """
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        stat = read_stat(int(entry.name))
        if stat is not None and stat.pgid == pgid and stat.state not in ("Z", "X", "x"):
            return True
    return False


def signal_group(pgid: int, sig: signal.Signals) -> bool:
    """Send ``sig`` to the whole group (the TP workers die with the leader); False if it is gone."""
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return False
    return True
