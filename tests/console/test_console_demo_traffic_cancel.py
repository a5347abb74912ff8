"""The demo traffic's wait for a new engine address must let a cancel through even when it lands in
the very tick the address changes (the demo stopping as the engine turns ready): on Python 3.11
``asyncio.wait_for`` returned and swallowed the cancel, and the worker went on sending requests."""

from __future__ import annotations

import asyncio

from console.demo.traffic import EngineAddress


async def test_a_cancel_in_the_tick_the_address_changes_ends_the_wait() -> None:
    address = EngineAddress()
    waiting = asyncio.create_task(address.wait_change(60.0))
    for _ in range(3):  # no clock: the wait parks (wait_for parks through an inner task, a step later)
        await asyncio.sleep(0)
    address.set_url("http://127.0.0.1:30000")  # wakes the wait
    waiting.cancel()  # same tick
    await asyncio.wait({waiting}, timeout=10)  # a swallowed cancel ends it normally: fail, don't hang
    assert waiting.cancelled()


async def test_it_still_returns_on_a_change_and_on_its_timeout() -> None:
    address = EngineAddress()
    waiting = asyncio.create_task(address.wait_change(60.0))
    await asyncio.sleep(0)
    address.set_benchmark(True)
    async with asyncio.timeout(10):
        await waiting
        await address.wait_change(0.01)  # nothing changes: back after its timeout, no error
