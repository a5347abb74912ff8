"""Adopting the engine a previous agent left running: its record, checked against /proc.

The record holds the profile the engine was launched with (what its process has) and, when live
changes were applied since, the running profile with those values: a restarted agent needs both,
the first to know what the server can do live, the second to show and keep what the operator set.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent.engine import proc
from agent.engine.record import clear_record, read_record
from agent.engine.running import RunningEngine
from agent.profile import Profile, ProfileError, parse_profile
from agent.sglang.redact import REDACTED


@dataclass(frozen=True)
class Adopted:
    engine: RunningEngine
    launched: Profile
    """The profile the engine process was launched with."""
    running: Profile
    """``launched`` with the live values applied since (the same profile when there were none)."""


def _with_env_of(profile: Profile, given: Profile | None) -> Profile:
    """The record keeps env values hidden (``record.write_record``): put back those ``given`` (the
    agent's own ``--profile``) has, so that a restart of the adopted engine launches with them."""
    env = profile.server.env
    if given is None or REDACTED not in env.values():
        return profile
    filled = {k: given.server.env.get(k, v) if v == REDACTED else v for k, v in env.items()}
    return profile.model_copy(update={"server": profile.server.model_copy(update={"env": filled})})


def adopt_recorded(
    record_path: Path, emit: Callable[[str, str, dict[str, Any]], None], given: Profile | None = None
) -> Adopted | None:
    """The engine of the record when its process still is the one recorded; None otherwise.

    A record whose pid is gone or now belongs to another process (pid reuse) is cleared, with an
    event, and nothing is signalled.
    """
    record = read_record(record_path)
    if record is None:
        return None
    alive = proc.is_same_process(record.pid, record.start_ticks)
    cmdline = proc.read_cmdline(record.pid) if alive else None
    if not alive or cmdline is None or proc.argv_hash(cmdline) != record.argv_hash:
        clear_record(record_path)
        emit(
            "engine.record_stale",
            f"The recorded engine (pid {record.pid}) is gone or its pid now belongs to another process; "
            "starting a new engine",
            {"pid": record.pid},
        )
        return None
    try:
        launched = parse_profile(record.profile_toml, str(record_path))
    except ProfileError:
        return None
    running = launched
    if record.live_profile_toml is not None:
        try:
            running = parse_profile(record.live_profile_toml, str(record_path))
        except ProfileError:
            running = launched  # the live values are lost; what the process was built with is not
    launched, running = _with_env_of(launched, given), _with_env_of(running, given)
    engine = RunningEngine(
        pid=record.pid,
        pgid=record.pgid,
        start_ticks=record.start_ticks,
        url=record.url,
        kind=record.kind,
        launched_at=record.launched_at,
    )
    return Adopted(engine, launched, running)
