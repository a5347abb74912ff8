"""One long-lived thread that takes GPU samples for the collector, so a hanging driver call cannot
stall the event loop.

``asyncio.to_thread`` did the same job for ~75 µs more CPU per tick (context copy, the default
executor's bookkeeping, a shield and a ``wait_for``; bench/costs/agent_tick.py). This thread is a daemon:
an NVML call that never returns must not keep the agent from exiting either (the executors'
threads are joined at exit).
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar

R = TypeVar("R")


class SampleThread(Generic[R]):
    """``submit()`` → a future of ``sample()`` run on the thread; calls run one after another."""

    def __init__(self, sample: Callable[[], R], name: str = "gpu-sample") -> None:
        self._sample = sample
        self._jobs: queue.SimpleQueue[tuple[asyncio.AbstractEventLoop, asyncio.Future[R]] | None] = (
            queue.SimpleQueue()
        )
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._started = False

    def submit(self) -> asyncio.Future[R]:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[R] = loop.create_future()
        if not self._started:
            self._thread.start()
            self._started = True
        self._jobs.put((loop, future))
        return future

    def close(self) -> None:
        """Let the thread end once its current call returns (a hung call keeps it, harmlessly)."""
        if self._started:
            self._jobs.put(None)

    def _run(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            loop, future = job
            try:
                result = self._sample()
            except BaseException as exc:  # handed to the awaiting side, which reports it
                _post(loop, _settle_exception, future, exc)
            else:
                _post(loop, _settle_result, future, result)


def _post(loop: asyncio.AbstractEventLoop, settle: Callable[..., None], *args: Any) -> None:
    with contextlib.suppress(RuntimeError):  # the loop closed while the driver call ran
        loop.call_soon_threadsafe(settle, *args)


def _settle_result(future: asyncio.Future[R], result: R) -> None:
    if not future.done():
        future.set_result(result)


def _settle_exception(future: asyncio.Future[Any], exc: BaseException) -> None:
    if not future.done():
        future.set_exception(exc)
