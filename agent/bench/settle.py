"""How long a live switch takes to settle, and the optional extra warm-up batch.

Every measured loop discards its first batch: the window starts only at the first completion once
the engine holds the level's concurrency (``window``), so the ramp's requests, one per stream, run
in the new setting and are thrown away. That batch is the warm-up after each change of threshold
or pin: the engine then has run this batch size in this setting (on the real engine the first
batches of a new size or step state paid hundreds of milliseconds of TTFT: the motivating
comparison's 2x gaps between identical arms) and the step policy's slot has warmed (SGLang's 10
warm-up batches and more: a whole request).

When the step changed the live threshold or reset the steps, the ramp also measures the switch,
in seconds from the ``set_live`` call to:

* ``set_s``: the read-back showing the new value (``set_live`` returns then);
* ``in_force_s``: the read-back's ``active_steps`` showing the state the new setting implies for
  the batch running at that moment (0 steps at or above the threshold, speculating below it),
  polled every ``READBACK_POLL_S`` from the ramp's first token: the engine picks a change up
  between batches;
* ``first_token_s``: the ramp's first token (its first prefill has run in the new state);
* ``settle_s``: the later of the two: the new state is in force and a batch has run in it;
* ``window_start_s``: the window's start (the ramp's discarded batch is over).

``warmup_requests`` > 0 adds a separate batch of that many short requests before the loop
(``warm_up_batch``), for an engine that needs more than one cycle to settle.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from agent.bench.engine import EngineError, EngineProbe
from agent.bench.http_stream import StreamConnection, Target
from agent.bench.stats import RequestRecord
from agent.sglang.live_control import NO_THRESHOLD
from agent.wire.bench import WARMUP_OUTPUT_LEN as WARMUP_OUTPUT_LEN

READBACK_POLL_S = 0.02

WarmSend = Callable[[StreamConnection, RequestRecord, Callable[[int], None]], Awaitable[RequestRecord]]


def in_force(threshold: int | None, active_steps: int | None, batch: int) -> bool:
    """Does ``active_steps`` show what ``threshold`` means for a running batch of ``batch``?"""
    if threshold is None or active_steps is None or batch <= 0:
        return False
    stops = threshold > NO_THRESHOLD and batch >= threshold
    return active_steps == 0 if stops else active_steps > 0


@dataclass
class Settling:
    """What the read-back showed while a switch's first batch ran."""

    in_force_at: float | None = None
    active_steps_seen: list[int] = field(default_factory=list)
    """Distinct ``active_steps`` values, in the order they were read."""
    readback_error: str | None = None


async def watch_in_force(
    probe: EngineProbe,
    threshold: int | None,
    decoding: Callable[[], int],
    settling: Settling,
    first_token: asyncio.Event,
) -> None:
    """From the ramp's first token, poll the read-back until ``active_steps`` shows ``threshold`` in
    force for the batch running then (``decoding()``: our streams with a first token, not finished).
    The loop cancels it when it ends; a state seen only after the window started says so."""
    await first_token.wait()
    while True:
        asked = time.perf_counter()
        try:
            live = await probe.live_state()
        except (EngineError, ValueError) as exc:
            settling.readback_error = str(exc)
            return
        steps = None if live is None else live.active_steps
        seen = settling.active_steps_seen
        if steps is not None and (not seen or seen[-1] != steps):
            seen.append(steps)
        if in_force(threshold, steps, decoding()):
            settling.in_force_at = (asked + time.perf_counter()) / 2
            return
        await asyncio.sleep(READBACK_POLL_S)


def switch_record(
    change: dict[str, Any],
    called: float,
    set_done: float,
    settling: Settling,
    threshold: int | None,
    first_token_at: float | None,
    window_start: float | None,
) -> dict[str, Any]:
    """What one live change cost, in seconds from the ``set_live`` call (None: not seen)."""

    def since(at: float | None) -> float | None:
        return None if at is None else round(at - called, 4)

    record: dict[str, Any] = {
        "change": change,
        "threshold": threshold,
        "set_s": since(set_done),
        "in_force_s": since(settling.in_force_at),
        "first_token_s": since(first_token_at),
        "window_start_s": since(window_start),
        "active_steps_seen": settling.active_steps_seen,
    }
    force, first = record["in_force_s"], record["first_token_s"]
    record["settle_s"] = None if force is None else max(force, first if first is not None else force)
    start = record["window_start_s"]
    record["settled_before_window"] = None if force is None or start is None else force <= start
    if settling.readback_error:
        record["readback_error"] = settling.readback_error
    elif force is None:
        record["note"] = (
            "the read-back never showed the state this setting implies while the level ran "
            f"(active_steps seen: {', '.join(str(s) for s in settling.active_steps_seen) or 'none'})"
        )
    elif record["settled_before_window"] is False:
        record["note"] = "the new state was in force only after the window had started"
    return record


async def warm_up_batch(target: Target, requests: int, send: WarmSend) -> list[RequestRecord]:
    """``requests`` sent at once, each on its own connection, awaited and thrown away."""
    records: list[RequestRecord] = []

    async def one() -> None:
        conn = StreamConnection(target)
        record = RequestRecord(start=time.perf_counter())
        records.append(record)
        try:
            await send(conn, record, lambda _: None)
        finally:
            await conn.close()

    sends = [asyncio.create_task(one()) for _ in range(requests)]
    try:
        await asyncio.gather(*sends)
    finally:
        for task in sends:
            task.cancel()
        for task in sends:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
    return records
