"""The engine record as the supervisor keeps it: the last one in memory, and on disk through the
state disk (a write that fails is retried on every tick; only the newest record is ever retried).

What each step of an engine's life writes, so that a restarted agent finishes what was under way:

* launched: the engine's identity, its launch profile and the running one (``live_pending`` while the
  operator's live values differ from the launch's and are not yet put back);
* ready, live values in force: ``live_pending`` off;
* crashed, or being stopped for a restart: ``restart_to``, the profiles the next launch uses (the
  record is kept, not removed, so a restart cut short still knows the operator's values);
* stopped by the operator, or given up (crash loop): removed.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from agent.engine import proc
from agent.engine.record import EngineRecord, RestartTo, clear_record, read_record, write_record
from agent.engine.running import RunningEngine
from agent.engine.state_disk import StateDisk
from agent.profile import Profile, dump_profile
from agent.sglang.redact import hidden_profile_toml

WHAT = "the engine record"


def _same(a: str, b: str) -> bool:
    """Two profile TOMLs equal but for hidden values (a record read back has them hidden)."""
    return a == b or hidden_profile_toml(a) == hidden_profile_toml(b)


def live_toml(launched: str, running: Profile) -> str | None:
    """The running profile's TOML when it differs from the launch's (None: nothing live to keep)."""
    live = dump_profile(running)
    return None if _same(live, launched) else live


def record_writer(path: Path, record: EngineRecord) -> Callable[[], None]:
    """The write of ``record``; retried later, a record of a running engine is written only while
    that engine still lives (one that died since would be read as one to adopt). A record that says
    what replaces the engine (``restart_to``) is written whatever became of it."""

    def write() -> None:
        if record.restart_to is not None or proc.is_same_process(record.pid, record.start_ticks):
            write_record(path, record)

    return write


class RecordKeeper:
    def __init__(self, path: Path, disk: StateDisk) -> None:
        self.path = path
        self.disk = disk
        self.record: EngineRecord | None = None

    def put(self, record: EngineRecord) -> bool:
        self.record = record
        return self.disk.write(WHAT, record_writer(self.path, record))

    def adopted(self) -> None:
        """The record on disk is the adopted engine's: keep it as the one to update."""
        self.record = read_record(self.path)

    def live(self, pid: int | None, running: Profile, *, pending: bool) -> None:
        """The running profile in force (``pending``: not yet put on the engine)."""
        record = self.record
        if record is None or pid is None or record.pid != pid:
            return
        value = live_toml(record.profile_toml, running)
        new = record.model_copy(
            update={
                "live_profile_toml": value,
                "live_pending": pending and value is not None,
                "restart_to": None,
            }
        )
        if new != record:
            self.put(new)

    def restarting(self, launched: Profile, running: Profile) -> None:
        """The engine is gone, or about to be stopped, and ``launched`` is what replaces it."""
        record = self.record
        if record is None:
            return
        launch = dump_profile(launched)
        restart = RestartTo(profile_toml=launch, live_profile_toml=live_toml(launch, running))
        self.put(record.model_copy(update={"restart_to": restart}))

    def found(self, engine: RunningEngine, launched: Profile, log_path: Path) -> None:
        """A fresh record for an engine adopted without a readable one (``agent.engine.find``)."""
        host, _, port = engine.url.removeprefix("http://").rpartition(":")
        self.put(
            EngineRecord(
                kind=engine.kind,
                pid=engine.pid,
                pgid=engine.pgid,
                start_ticks=engine.start_ticks,
                argv_hash=proc.argv_hash(proc.read_cmdline(engine.pid) or []),
                host=host.strip("[]"),
                port=int(port),
                launched_at=engine.launched_at,
                profile_name=launched.identity.name,
                profile_toml=dump_profile(launched),
                log_path=str(log_path),
            )
        )

    def clear(self) -> None:
        self.record = None
        self.disk.ok(WHAT)  # a write still waiting for room is of a record that no longer holds
        clear_record(self.path)
