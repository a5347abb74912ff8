"""Adopting the engine a previous agent left running: its record, checked against /proc.

The record holds the profile the engine was launched with (what its process has) and the running
profile with the operator's live values: a restarted agent needs both, the first to know what the
server can do live, the second to show and keep what the operator set. What the record says was
under way is finished: live values not yet put back (``live_pending``) are put back, and a restart
whose engine is gone (``restart_to``) is launched.

An unreadable record is never read as "no engine": the engine it was about is looked for
(``agent.engine.find``), adopted when it is found and answers where it says, named when it cannot
be adopted, and only when none runs is a new one started. The unreadable file is kept beside it.
What the tear left legible is only where to look: a process is adopted (and so ever signalled) on
evidence that it is this agent's engine, and it serves where its own command line says.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import psutil

from agent.engine import proc
from agent.engine.find import FoundEngine, find_engines, flag_value
from agent.engine.record import EngineKind, EngineRecord, clear_record, load_record, set_aside
from agent.engine.running import RunningEngine
from agent.profile import Profile, ProfileError, load_profile, parse_profile
from agent.sglang.redact import REDACTED, fill_hidden_flags

Origin = Literal["launched", "adopted", "adopted_pending", "resumed"]
"""How the engine came to this agent: it launched it; it adopted one in force (its live values are
the engine's to tell); it adopted one whose live values were not put back yet; it launched the
restart the previous agent had begun. Only "adopted" keeps the engine's values without restoring."""

Emit = Callable[[str, str, dict[str, Any]], None]


@dataclass(frozen=True)
class Adopted:
    engine: RunningEngine | None
    """None: the recorded engine is gone in the middle of a restart; launch ``launched``."""
    launched: Profile
    """The profile the engine process was launched with (or is to be)."""
    running: Profile
    """``launched`` with the live values applied since (the same profile when there were none)."""
    origin: Origin


@dataclass(frozen=True)
class Found:
    """What the agent found at its start: an engine to adopt (or a restart to finish), engines it
    could not adopt (never start a second one then), and what was wrong with the record."""

    adopted: Adopted | None = None
    named: list[FoundEngine] = field(default_factory=list)
    problem: str | None = None
    """The record was unreadable: why, and what was done (a finding while the agent runs)."""


def fill_hidden(profile: Profile, given: Profile | None) -> Profile:
    """The record keeps env values and secret flag values hidden (``record.write_record``): put back
    those ``given`` (the agent's own ``--profile``) has, so that a restart launches with them."""
    if given is None:
        return profile
    server = profile.server
    env = server.env
    if REDACTED in env.values():
        env = {k: given.server.env.get(k, v) if v == REDACTED else v for k, v in env.items()}
    flags = fill_hidden_flags(server.extra_flags, given.server.extra_flags) or server.extra_flags
    if env == server.env and flags == server.extra_flags:
        return profile
    return profile.model_copy(update={"server": server.model_copy(update={"env": env, "extra_flags": flags})})


def _parse(text: str | None, where: Path, given: Profile | None) -> Profile | None:
    if text is None:
        return None
    try:
        return fill_hidden(parse_profile(text, str(where)), given)
    except ProfileError:
        return None


def _engine_of(record: EngineRecord) -> RunningEngine:
    return RunningEngine(
        pid=record.pid,
        pgid=record.pgid,
        start_ticks=record.start_ticks,
        url=record.url,
        kind=record.kind,
        launched_at=record.launched_at,
    )


def _resume(record: EngineRecord, path: Path, given: Profile | None, emit: Emit) -> Found:
    """The recorded engine is gone while it was being replaced: launch what was to replace it."""
    restart = record.restart_to
    assert restart is not None
    launched = _parse(restart.profile_toml, path, given)
    running = _parse(restart.live_profile_toml, path, given) or launched
    if launched is None or running is None:
        return Found()
    emit(
        "engine.restart_resumed",
        f"The engine (pid {record.pid}) was being restarted when the agent stopped; starting it with the "
        "recorded profile and putting the operator's live values back once it is ready",
        {"pid": record.pid},
    )
    return Found(Adopted(None, launched, running, "resumed"))


def adopt_recorded(
    record_path: Path,
    emit: Emit,
    given: Profile | None = None,
    *,
    engine_dir: Path | None = None,
    port_hint: tuple[str, int] | None = None,
) -> Found:
    """The engine of the record when its process still is the one recorded (see the module)."""
    read = load_record(record_path)
    record = read.record
    if read.problem is not None:
        return _unreadable(record_path, read.problem, read.salvaged, emit, given, engine_dir, port_hint)
    if record is None:
        return Found()
    alive = proc.is_same_process(record.pid, record.start_ticks)
    cmdline = proc.read_cmdline(record.pid) if alive else None
    if not alive or cmdline is None or proc.argv_hash(cmdline) != record.argv_hash:
        if record.restart_to is not None:
            return _resume(record, record_path, given, emit)
        clear_record(record_path)
        emit(
            "engine.record_stale",
            f"The recorded engine (pid {record.pid}) is gone or its pid now belongs to another process; "
            "starting a new engine",
            {"pid": record.pid},
        )
        return Found()
    launched = _parse(record.profile_toml, record_path, given)
    if launched is None:
        return Found()
    running = _parse(record.live_profile_toml, record_path, given) or launched
    if record.restart_to is not None:
        return _cut_short(record, record_path, given, emit, launched, running)
    origin: Origin = "adopted_pending" if record.live_pending else "adopted"
    return Found(Adopted(_engine_of(record), launched, running, origin))


def _cut_short(
    record: EngineRecord, path: Path, given: Profile | None, emit: Emit, launched: Profile, running: Profile
) -> Found:
    """The previous agent had begun to stop this engine to restart it (it was told to stop, or was
    about to be): the restart the operator asked for is finished, as the record says."""
    restart = record.restart_to
    assert restart is not None
    new_launch = _parse(restart.profile_toml, path, given)
    new_running = _parse(restart.live_profile_toml, path, given) or new_launch
    if new_launch is None or new_running is None:
        return Found(Adopted(_engine_of(record), launched, running, "adopted"))
    emit(
        "engine.restart_resumed",
        f"The engine (pid {record.pid}) was being stopped for a restart when the agent stopped; finishing "
        "the restart",
        {"pid": record.pid},
    )
    return Found(Adopted(_engine_of(record), new_launch, new_running, "resumed"))


def _unreadable(
    path: Path,
    problem: str,
    salvaged: dict[str, Any],
    emit: Emit,
    given: Profile | None,
    engine_dir: Path | None,
    port_hint: tuple[str, int] | None,
) -> Found:
    kept = set_aside(path)
    where = f"{path} ({problem}; kept as {kept})" if kept else f"{path} ({problem})"
    engines = find_engines(salvaged, engine_dir, port_hint) if engine_dir is not None else []
    if not engines:
        said = f"The engine record {where} is unreadable and no engine of this agent runs; starting one"
        emit("engine.record_unreadable", said, {"record": str(path), "problem": problem, "pids": []})
        return Found(problem=said)
    pids = [e.pid for e in engines]
    if len(engines) > 1 or engines[0].url is None:
        said = (
            f"The engine record {where} is unreadable, and {', '.join(e.describe() for e in engines)} "
            f"{'run' if len(engines) > 1 else 'runs'} from this agent's engine directory, which the agent "
            "cannot adopt without knowing where it serves; not starting a second engine. Stop "
            f"{'them' if len(engines) > 1 else 'it'} (SIGTERM to the process group), then start the engine "
            "again (POST /v1/engine/start, or from the console)"
        )
        emit("engine.record_unreadable", said, {"record": str(path), "problem": problem, "pids": pids})
        return Found(named=engines, problem=said)
    found = engines[0]
    assert found.url is not None
    launched, basis = _launch_profile_of(found, given)
    kind: EngineKind = (
        "sim" if "sim" in found.cmdline and flag_value(found.cmdline, "--profile") else "sglang"
    )
    engine = RunningEngine(found.pid, found.pgid, found.start_ticks, found.url, kind, _started_at(found.pid))
    said = (
        f"The engine record {where} is unreadable; found the engine it was about, {found.describe()} at "
        f"{found.url} ({found.evidence}), and adopted it ({basis}); its live values are read from it and kept"
    )
    emit("engine.record_unreadable", said, {"record": str(path), "problem": problem, "pids": pids})
    if launched is None:
        return Found(named=[found], problem=said)
    return Found(Adopted(engine, launched, launched, "adopted"), problem=said)


def _started_at(pid: int) -> float:
    try:
        return float(psutil.Process(pid).create_time())
    except (psutil.Error, OSError):
        return time.time()


def _launch_profile_of(found: FoundEngine, given: Profile | None) -> tuple[Profile | None, str]:
    """What the found engine was launched with: the simulated engine's own profile file, else the
    agent's ``--profile`` (the real engine's command line is not read back into a profile)."""
    path = flag_value(found.cmdline, "--profile")
    if path is not None:
        try:
            return fill_hidden(load_profile(path), given), f"launched with {path}"
        except ProfileError:
            pass
    return given, "taken as launched with the agent's --profile"
