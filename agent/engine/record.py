"""The engine state file: enough to find, verify and adopt a running engine after an agent restart.

Written atomically (temp file, fsync, rename) with mode 0600 in the agent's state directory. It
holds the profile the engine was launched with, so a restarted agent knows what really runs even
when its ``--profile`` file has been edited since, and, once live values were applied (threshold,
pinned steps), the running profile with them, so that they survive an agent restart too.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from agent.profile.atomic import write_atomic
from agent.sglang.redact import hidden_profile_toml

EngineKind = Literal["sglang", "sim"]


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
    """The running profile with the live values applied since the launch; None when there were none."""

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"


def write_record(path: Path, record: EngineRecord) -> None:
    """Write the record with its profiles' env values and secrets hidden: the state directory is no
    place for HF_TOKEN; an adopting agent takes them from its own ``--profile`` (``adopt``)."""
    live = record.live_profile_toml
    hidden = record.model_copy(
        update={
            "profile_toml": hidden_profile_toml(record.profile_toml),
            "live_profile_toml": None if live is None else hidden_profile_toml(live),
        }
    )
    write_atomic(path, hidden.model_dump_json(indent=1))


def read_record(path: Path) -> EngineRecord | None:
    """The saved record, or None when there is none or it cannot be trusted (then nothing is signalled)."""
    try:
        return EngineRecord.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, ValidationError):
        return None


def clear_record(path: Path) -> None:
    path.unlink(missing_ok=True)
