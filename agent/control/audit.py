"""The audit log: one JSON line per applied (or failed) operator action, append-only, fsynced.

Opened with O_APPEND for every line, so concurrent writers never interleave within a line and
nothing earlier is ever rewritten. Values are those of the profile and the plan, never secrets: key
*files* are named in profiles, keys are not.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any


class AuditLog:
    def __init__(self, path: Path) -> None:
        self.path = path

    def append(
        self,
        *,
        operator: str | None,
        action: dict[str, Any],
        before: Any,
        after: Any,
        result: dict[str, Any],
        when: float | None = None,
    ) -> dict[str, Any]:
        line = {
            "time": time.time() if when is None else when,
            "operator": operator,
            "action": action,
            "before": before,
            "after": after,
            "result": result,
        }
        data = (json.dumps(line, sort_keys=True, default=str) + "\n").encode("utf-8")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        return line

    def read(self, limit: int = 100) -> list[dict[str, Any]]:
        try:
            lines = self.path.read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            return []
        return [json.loads(x) for x in lines[-limit:] if x.strip()]
