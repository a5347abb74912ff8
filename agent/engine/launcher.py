"""Starting one engine process: its log header, the process in its own session, and its record.

A state write that fails here (the log header or rotation on a full disk) must not lose the engine
that was just started: the process runs, the failure goes to the state disk
(``agent.engine.state_disk``), and supervision goes on. The record is the supervisor's to write
(``agent.engine.keeper``). Only a failure to start the process itself is an engine failure.
"""

from __future__ import annotations

import os
import subprocess
import time

from agent.engine import proc
from agent.engine.keeper import live_toml
from agent.engine.logfile import EngineLog
from agent.engine.record import EngineRecord
from agent.engine.running import RunningEngine
from agent.engine.spec import EngineSpec
from agent.engine.state_disk import StateDisk, check_injected
from agent.profile import Profile, dump_profile


def _header(log: EngineLog, disk: StateDisk, fd: int, kind: str) -> int:
    """The start line in the engine log; the offset where this start's output begins."""
    header = (
        f"\n--- k25console agent: starting the {kind} engine at {time.strftime('%Y-%m-%dT%H:%M:%S%z')} ---\n"
    )
    disk.write("the engine log", lambda: _write_all(fd, header.encode()), retry=False)
    return os.lseek(fd, 0, os.SEEK_END)


def _write_all(fd: int, data: bytes) -> None:
    if os.write(fd, data) != len(data):
        raise OSError(28, os.strerror(28))


def launch(
    spec: EngineSpec, profile: Profile, running: Profile, log: EngineLog, disk: StateDisk
) -> tuple[RunningEngine, int, EngineRecord]:
    """Start the engine of ``spec`` launched with ``profile``, to run ``running`` (its live values
    are put back once it is ready); (the engine, its log offset, its record)."""
    check_injected()  # the fault suite's full disk, where it cannot mount one (a no-op otherwise)
    disk.write("the engine log rotation", lambda: (log.rotate_if_needed(), None)[1], retry=False)
    fd = log.open_for_engine()
    try:
        offset = _header(log, disk, fd, spec.kind)
        popen = subprocess.Popen(
            spec.argv,
            stdin=subprocess.DEVNULL,
            stdout=fd,
            stderr=fd,
            env=spec.env,
            start_new_session=True,
            close_fds=True,
        )
    finally:
        os.close(fd)
    stat = proc.read_stat(popen.pid)
    engine = RunningEngine(
        pid=popen.pid,
        pgid=popen.pid,
        start_ticks=stat.start_ticks if stat else 0,
        url=spec.url,
        kind=spec.kind,
        launched_at=time.time(),
        popen=popen,
    )
    launch_toml = dump_profile(profile)
    live = live_toml(launch_toml, running)
    record = EngineRecord(
        kind=spec.kind,
        pid=engine.pid,
        pgid=engine.pgid,
        start_ticks=engine.start_ticks,
        argv_hash=proc.argv_hash(spec.argv),
        host=spec.host,
        port=spec.port,
        launched_at=engine.launched_at,
        profile_name=profile.identity.name,
        profile_toml=launch_toml,
        log_path=str(log.path),
        live_profile_toml=live,
        live_pending=live is not None,
    )
    return engine, offset, record
