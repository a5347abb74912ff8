"""Messages from the stream worker to the app."""

from __future__ import annotations

from textual.message import Message


class ModelUpdated(Message):
    """New data is in the model. Coalesces: a backlog of these collapses to the newest one."""

    def __init__(self, version: int) -> None:
        super().__init__()
        self.version = version

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, ModelUpdated)
