"""``--record FILE``: any link, with every stream item and every GET answer appended to a JSON-lines file.

The file is what :class:`console.link.replay.ReplayLink` plays back, so an incident seen live can be
replayed later, screens and all (profiles, logs, benchmark results included as they were fetched).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import IO, Any, Literal

from console.link.base import Link, StreamItem


class RecordingLink(Link):
    def __init__(self, inner: Link, path: Path) -> None:
        self.inner = inner
        self.path = path
        self.writable = inner.writable
        self._file: IO[str] | None = None

    def describe(self) -> str:
        return f"{self.inner.describe()} (recording)"

    def _write(self, record: dict[str, Any]) -> None:
        if self._file is None:
            self._file = self.path.open("a", encoding="utf-8")
        self._file.write(json.dumps(record, separators=(",", ":")) + "\n")  # compact: a tenth smaller
        self._file.flush()

    async def connect(self) -> None:
        await self.inner.connect()

    async def close(self) -> None:
        await self.inner.close()
        if self._file is not None:
            self._file.close()
            self._file = None

    async def request(
        self,
        method: Literal["GET", "POST", "PUT", "DELETE"],
        path: str,
        *,
        params: Mapping[str, str | int] | None = None,
        body: Any = None,
        headers: Mapping[str, str] | None = None,
    ) -> Any:
        answer = await self.inner.request(method, path, params=params, body=body, headers=headers)
        if method == "GET":  # a replay answers a path with its last recorded answer, whatever the query
            self._write({"kind": "response", "method": method, "path": path, "data": answer})
        return answer

    async def stream(self, since: int | None) -> AsyncIterator[StreamItem]:
        async for item in self.inner.stream(since):
            self._write({"seq": item.seq, "kind": item.kind, "data": item.data})
            yield item
