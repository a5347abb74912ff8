"""The telemetry loop must end when it is cancelled even if the cancel lands in the very tick its wait
is woken (an operator's new tick interval, as the agent stops). On Python 3.11 ``asyncio.wait_for``
returned the wake-up and swallowed the cancel: the loop ticked on, and ``shutdown()``, which awaits
it, never returned. The stream's keep-alive wait had the same flaw: a follower woken by a publish as
its connection was cancelled went on following."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agent.profile import load_profile
from agent.serve.daemon import Daemon, ServeConfig
from agent.serve.paths import StatePaths
from agent.serve.stream import StreamHub
from agent.wire import Event, Snapshot

PROFILE_PATH = Path(__file__).resolve().parents[2] / "profiles" / "local-sim.toml"


async def _parked() -> None:
    """A few loop steps, no clock: the waiter reaches its wait (``wait_for`` parks through an inner
    task, one step later), so a wake-up and a cancel in one step race exactly as in production."""
    for _ in range(3):
        await asyncio.sleep(0)


@pytest.fixture
async def daemon(tmp_path: Path) -> AsyncIterator[Daemon]:
    profile = load_profile(PROFILE_PATH)
    config = ServeConfig(
        profile, PROFILE_PATH, PROFILE_PATH.parent, "sim", StatePaths(tmp_path / "s").prepare()
    )
    made = Daemon(config, token="t" * 43)
    made.tick_interval_s = 60.0  # the loop's own timeout never fires in these tests
    yield made
    await made.http.aclose()


async def _ticking(daemon: Daemon) -> asyncio.Task[None]:
    """The telemetry loop, started as ``start()`` does, once it has published a tick and waits."""
    ticked = asyncio.Event()

    def listener(item: Snapshot | Event) -> None:
        if isinstance(item, Snapshot):
            ticked.set()

    daemon.hub.add_listener(listener)
    task = asyncio.create_task(daemon._telemetry_loop(), name="telemetry")
    daemon._telemetry_task = task
    async with asyncio.timeout(30):
        await ticked.wait()
    await _parked()
    assert not task.done()
    return task


async def test_a_cancel_in_the_tick_the_interval_changes_ends_the_loop(daemon: Daemon) -> None:
    task = await _ticking(daemon)
    daemon.set_tick_interval(1.0)  # wakes the loop's wait
    task.cancel()  # same tick
    await asyncio.wait({task}, timeout=10)  # a swallowed cancel never ends it: fail, don't hang
    assert task.cancelled()


async def test_shutdown_in_the_tick_the_interval_changes_returns(daemon: Daemon) -> None:
    task = await _ticking(daemon)
    daemon.set_tick_interval(1.0)
    stopping = asyncio.create_task(daemon.shutdown())  # its first step cancels the loop: same tick
    await asyncio.wait({stopping}, timeout=10)
    assert stopping.done() and stopping.exception() is None
    assert task.cancelled()


async def test_a_follower_cancelled_in_the_tick_an_item_is_published_ends() -> None:
    hub = StreamHub()
    got: list[int] = []

    async def follower() -> None:
        async for item in hub.follow(since=hub.last_seq, keepalive_s=60):
            if item is not None:
                got.append(item.seq)

    task = asyncio.create_task(follower())
    await _parked()
    hub.publish_snapshot(lambda seq: Snapshot(seq=seq, time=time.time()))  # wakes the keep-alive wait
    task.cancel()  # same tick: the client went away
    await asyncio.wait({task}, timeout=10)
    assert task.cancelled() and got == []
