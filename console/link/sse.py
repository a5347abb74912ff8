"""A small parser for the agent's server-sent events (``id:``, ``event:``, ``data:`` and blank lines).

It is fed line by line so the transport stays in charge of reading; comment lines (``: ping``) are
keep-alives and only prove the link is alive.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from pydantic import ValidationError

from console.link.base import LinkError, Stamp, StreamItem


@dataclass
class SseParser:
    """Accumulates one event's fields until the blank line that ends it."""

    _id: str | None = None
    _event: str | None = None
    _data: list[str] = field(default_factory=list)

    def feed(self, line: str) -> StreamItem | None:
        """Take one line (without its newline); returns an item when one is complete."""
        if line == "":
            return self._finish()
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "id":
            self._id = value
        elif name == "event":
            self._event = value
        elif name == "data":
            self._data.append(value)
        return None

    def _finish(self) -> StreamItem | None:
        event, data, ident = self._event, "\n".join(self._data), self._id
        self._id, self._event, self._data = None, None, []
        if not data:
            return None
        if event != "snapshot" and event != "event":
            return None  # a kind this console does not know yet: skip rather than fail
        try:
            payload = json.loads(data)
        except ValueError as exc:
            raise LinkError(f"the agent sent a stream item that is not JSON: {exc}") from exc
        try:
            stamp = Stamp.model_validate(payload)
        except ValidationError as exc:
            raise LinkError(
                f"the agent sent a stream item without its seq and time: {exc.errors()[0]['msg']}"
            ) from exc
        seq = int(ident) if ident and ident.isdigit() else stamp.seq
        return StreamItem(
            seq=seq, kind="snapshot" if event == "snapshot" else "event", data=payload, time=stamp.time
        )
