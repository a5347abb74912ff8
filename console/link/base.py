"""The link interface: what the console needs from any path to the agent.

The interface is deliberately HTTP-shaped (get/post/put of JSON, and a stream of items) because the
agent's API is HTTP; a recording answers the same calls from a file. Nothing here imports Textual.
"""

from __future__ import annotations

import abc
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

JsonDict = dict[str, Any]


class LinkError(Exception):
    """The agent could not be reached or answered with an error; ``status`` is the HTTP status if any.

    ``retryable`` tells the reconnect loop whether trying again can help (a dropped connection) or
    not (a refused host key, a wrong token): the console never retries what cannot succeed. ``slow``
    marks a failure that will not fix itself in seconds (a name that does not resolve): the loop
    backs off to minutes for it, then gives up.
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        retryable: bool = True,
        detail: Any = None,
        slow: bool = False,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.retryable = retryable
        self.detail = detail
        self.slow = slow


@dataclass(frozen=True)
class StreamItem:
    """One item of the agent's event stream: a snapshot or an event, as raw JSON (the client reads
    it into its ``agent.wire`` model: ``console.link.client``)."""

    seq: int
    kind: Literal["snapshot", "event"]
    data: JsonDict
    time: float = 0.0
    """Its agent time, where the link knows it (a replay keeps the recorded pace by it)."""


class Stamp(BaseModel):
    """What every stream item carries, read from its raw JSON before its model is: its cursor and time."""

    model_config = ConfigDict(extra="ignore")

    seq: int = 0
    time: float = 0.0


class Link(abc.ABC):
    """A path to one agent. ``connect`` may be called again after a drop to re-establish it."""

    #: A link that can never change anything (a recording) says so; the console then runs read-only.
    writable: bool = True

    @abc.abstractmethod
    def describe(self) -> str:
        """Where this link goes, for the header: ``user@host`` or the socket path."""

    @abc.abstractmethod
    async def connect(self) -> None:
        """Open (or reopen) the path to the agent. Raises :class:`LinkError`."""

    @abc.abstractmethod
    async def close(self) -> None:
        """Release everything; safe to call twice."""

    @abc.abstractmethod
    async def request(
        self,
        method: Literal["GET", "POST", "PUT", "DELETE"],
        path: str,
        *,
        params: Mapping[str, str | int] | None = None,
        body: Any = None,
        headers: Mapping[str, str] | None = None,
    ) -> Any:
        """One API call; returns the decoded JSON body. Raises :class:`LinkError` on any failure."""

    @abc.abstractmethod
    def stream(self, since: int | None) -> AsyncIterator[StreamItem]:
        """Items after ``since`` (the ring buffer's catch-up first), then live ones until the link drops."""
