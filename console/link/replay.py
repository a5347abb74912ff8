"""A recording played back as if it were an agent: ``k25console --replay FILE``.

The file is JSON lines, one stream item each, as ``--record`` writes them
(``{"seq": 7, "kind": "snapshot", "data": {...}}``); a bare Snapshot object per line is accepted too.
Lines of kind ``response`` (``{"kind": "response", "method": "GET", "path": "/v1/profiles", "data":
...}``) hold answers the agent gave during the recording; a replay answers the same GET with the
last one recorded. A replay is read-only: every other call is refused with a clear reason. It is
also how the snapshot tests feed the app a fixed, deterministic sequence.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, JsonValue, ValidationError

from console.link.base import Link, LinkError, Stamp, StreamItem

Recording = tuple[list[StreamItem], dict[str, Any]]


def response_key(method: str, path: str) -> str:
    return f"{method} {path}"


class RecordedLine(BaseModel):
    """One line of a recording, as ``--record`` writes it: a stream item, or an answer the agent gave."""

    model_config = ConfigDict(extra="ignore")

    kind: str | None = None
    method: str = "GET"
    path: str = ""
    data: JsonValue = None


def _line(line: str, where: str, responses: dict[str, Any]) -> StreamItem | None:
    try:
        raw = json.loads(line)
    except ValueError as exc:
        raise LinkError(f"{where}: not JSON ({exc})", retryable=False) from exc
    if not isinstance(raw, dict):
        raise LinkError(f"{where}: expected a JSON object", retryable=False)
    try:
        recorded = RecordedLine.model_validate(raw)
    except ValidationError as exc:
        raise LinkError(f"{where}: {exc.errors()[0]['msg']}", retryable=False) from exc
    if recorded.kind == "response":
        responses[response_key(recorded.method, recorded.path)] = recorded.data
        return None
    framed = {"kind", "data"} <= recorded.model_fields_set
    kind, data = (recorded.kind, recorded.data) if framed else ("snapshot", raw)
    if kind not in ("snapshot", "event") or not isinstance(data, dict) or "seq" not in data:
        raise LinkError(f"{where}: expected a snapshot or event with a 'seq'", retryable=False)
    try:
        stamp = Stamp.model_validate(data)
    except ValidationError as exc:
        raise LinkError(f"{where}: {exc.errors()[0]['msg']}", retryable=False) from exc
    return StreamItem(
        seq=stamp.seq, kind="snapshot" if kind == "snapshot" else "event", data=data, time=stamp.time
    )


def load_recording(path: str | Path) -> Recording:
    """All stream items of a recording in file order, and its recorded answers; errors name file and line."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise LinkError(f"cannot read the recording {path}: {exc.strerror or exc}", retryable=False) from exc
    responses: dict[str, Any] = {}
    items = [
        _line(line, f"{path}:{n}", responses) for n, line in enumerate(text.splitlines(), 1) if line.strip()
    ]
    return [item for item in items if item is not None], responses


class ReplayLink(Link):
    """Plays ``items`` in order; ``speed`` 1.0 keeps the recorded pace, 0 plays everything at once."""

    writable = False

    def __init__(self, path: str | Path, *, speed: float = 1.0) -> None:
        self.path = Path(path)
        self.speed = speed
        self._items: list[StreamItem] | None = None
        self._responses: dict[str, Any] = {}

    def describe(self) -> str:
        return f"replay {self.path.name}"

    async def connect(self) -> None:
        if self._items is None:
            self._items, self._responses = load_recording(self.path)

    async def close(self) -> None:
        return None

    async def request(
        self,
        method: Literal["GET", "POST", "PUT", "DELETE"],
        path: str,
        *,
        params: Mapping[str, str | int] | None = None,
        body: Any = None,
        headers: Mapping[str, str] | None = None,
    ) -> Any:
        key = response_key(method, path)
        if method == "GET" and key in self._responses:
            return self._responses[key]
        raise LinkError(f"not available while replaying a recording ({method} {path})", retryable=False)

    async def stream(self, since: int | None) -> AsyncIterator[StreamItem]:
        items = self._items or []
        previous_time: float | None = None
        for item in items:
            if since is not None and item.seq <= since:
                continue
            when = item.time
            if self.speed > 0 and previous_time is not None and when > previous_time:
                await asyncio.sleep((when - previous_time) / self.speed)
            previous_time = when
            yield item
        # A recording ends; the app shows that instead of reconnecting forever.
        raise LinkError("end of the recording", retryable=False)
