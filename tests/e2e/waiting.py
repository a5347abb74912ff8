"""Waiting on conditions that raise no event we can await (another process's state, a painted widget).

Polling with a deadline, never a blind sleep: the wait ends as soon as the condition holds.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from agent_harness import wait_until

__all__ = ["until", "until_async", "wait_until"]

T = TypeVar("T")


async def until(
    condition: Callable[[], T], *, timeout_s: float = 30.0, what: str, interval_s: float = 0.05
) -> T:
    """The async twin of :func:`wait_until`, for use inside a running app (keeps its loop turning)."""
    deadline = time.monotonic() + timeout_s
    last_error: Exception | None = None
    while True:
        try:
            value = condition()
            if value:
                return value
        except Exception as exc:
            last_error = exc
        if time.monotonic() >= deadline:
            raise TimeoutError(
                f"timed out after {timeout_s} s waiting for {what} (last error: {last_error!r})"
            )
        await asyncio.sleep(interval_s)


async def until_async(
    condition: Callable[[], Awaitable[T]], *, timeout_s: float = 30.0, what: str, interval_s: float = 0.1
) -> T:
    deadline = time.monotonic() + timeout_s
    last_error: Exception | None = None
    while True:
        try:
            value = await condition()
            if value:
                return value
        except Exception as exc:
            last_error = exc
        if time.monotonic() >= deadline:
            raise TimeoutError(
                f"timed out after {timeout_s} s waiting for {what} (last error: {last_error!r})"
            )
        await asyncio.sleep(interval_s)
