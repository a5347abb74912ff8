"""Following one agent: connect, catch up from its ring buffer, follow; on a drop back off and again.

The one reconnect loop of the console: the single-host App runs it for its link, the fleet runs one
per host, so every host's link reconnects on its own and a host that cannot be reached never holds
up another. It never returns on a drop; only a failure that retrying cannot fix (a refused host key,
a name that never resolves) ends it, with the link's state saying why.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from agent.wire import WIRE_VERSION, Event, Snapshot
from agent.wire.api import AgentStatus
from console.link import Link, LinkError
from console.link.backoff import Backoff
from console.link.client import AgentClient
from console.model import ConsoleModel, LinkStatus


@dataclass(frozen=True)
class Follower:
    """What one followed agent is, and what to tell its owner (all called in the app's loop)."""

    link: Link
    client: AgentClient
    model: ConsoleModel
    backoff: Backoff
    check: Callable[[], Awaitable[None]]
    """Asked after every connect of a writable link (the wire version, the agent's status)."""
    arrived: Callable[[Snapshot | Event], None]
    """A new item is in the model."""
    changed: Callable[[], None]
    """The link's state changed: draw it."""
    failed: Callable[[str], None]
    """Connecting gave up for good (not for a recording's end): tell the operator."""


async def checked_status(client: AgentClient) -> AgentStatus:
    """The agent's status, once it is known to speak this console's wire version (else a LinkError
    that retrying cannot fix)."""
    version = await client.version()
    if version.wire_version != WIRE_VERSION:
        raise LinkError(
            f"the agent speaks wire version {version.wire_version}, this console "
            f"{WIRE_VERSION}: install the same k25console version on both sides",
            retryable=False,
        )
    return await client.status()


async def follow(f: Follower) -> None:
    attempt = 0
    while True:
        try:
            await f.link.connect()
            if f.link.writable:
                await f.check()
            f.model.set_link(LinkStatus("connected"))
            attempt = 0
            # since=0 on the first connect: the agent's ring buffer (an hour) becomes the charts' history.
            since = f.model.last_seq if f.model.last_seq is not None else 0
            async for item in f.client.stream(since):
                if f.model.ingest(item):
                    f.arrived(item)
        except Exception as exc:
            # Anything unexpected is reported and retried like a drop: the stream must never die
            # silently and leave the operator looking at a frozen screen.
            if not isinstance(exc, LinkError):
                exc = LinkError(f"unexpected error while following the agent: {exc!r}")
            giving_up = exc.retryable and f.backoff.gives_up(attempt + 1, slow=exc.slow)
            if not exc.retryable or giving_up:
                ended = not f.link.writable
                message = f"gave up after {attempt + 1} attempts: {exc}" if giving_up else str(exc)
                f.model.set_link(LinkStatus("ended" if ended else "failed", message, attempt))
                if not ended:
                    f.failed(message)
                f.changed()
                return
            attempt += 1
            delay = f.backoff.delay(attempt, slow=exc.slow)
            f.model.set_link(LinkStatus("reconnecting", str(exc), attempt, retry_in_s=delay))
            f.changed()
            await asyncio.sleep(delay)
