"""Arrivals in the open (issue 45 item 2): requests sent at a rate, whatever the server does with
them, as SGLang's ``bench_serving --request-rate R --burstiness B`` sends them.

The gaps between requests are gamma-distributed with shape ``B`` and mean ``1 / R``
(``scale = 1 / (R × B)``, bench_serving's ``theta``): ``B = 1`` is a Poisson process, below 1 the
arrivals come in bursts, above 1 they are more even. A rate of ``inf`` sends every request at once.
A window is one batch of requests on that schedule, from the first one sent to the last one's end
(bench_serving's own duration), so its output throughput is what the server delivered under that
arrival process; the closed loop's pacing stream has no place here.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import random
import time
from collections.abc import Awaitable, Callable, Iterator

from agent.bench.http_stream import StreamConnection, Target
from agent.bench.stats import RequestRecord
from agent.bench.window import Window

Send = Callable[[StreamConnection, RequestRecord, Callable[[int], None]], Awaitable[RequestRecord]]
OPEN_WINDOW = "open loop: from the first request sent to the last one's end"


def gaps(rate: float, burstiness: float, seed: int) -> Iterator[float]:
    """The seconds before each request after the first (``math.inf`` rate: 0, all at once)."""
    rng = random.Random(seed)
    while True:
        yield 0.0 if math.isinf(rate) else rng.gammavariate(burstiness, 1.0 / (rate * burstiness))


async def open_window(
    target: Target, rate: float, burstiness: float, count: int, send: Send, seed: int
) -> tuple[list[RequestRecord], Window]:
    """``count`` requests on the schedule, each on its own connection; their records and window."""
    records: list[RequestRecord] = []

    async def one() -> None:
        conn = StreamConnection(target)
        record = RequestRecord(start=time.perf_counter())
        records.append(record)
        try:
            await send(conn, record, lambda _: None)
        finally:
            await conn.close()

    tasks: list[asyncio.Task[None]] = []
    schedule = gaps(rate, burstiness, seed)
    try:
        for n in range(count):
            if n:
                await asyncio.sleep(next(schedule))
            tasks.append(asyncio.create_task(one()))
        await asyncio.gather(*tasks)
    finally:
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
    start = min(r.start for r in records)
    end = max(r.end for r in records)
    ok = sum(1 for r in records if r.success)
    window = Window(start=start, end=end, pacer=0, cycles=(start, end), start_source=OPEN_WINDOW,
                    target=count, target_reached=True, target_reached_at=None, completions=ok,
                    min_completions=count)  # fmt: skip
    return records, window


def parse_rates(text: str) -> list[float | str]:
    """``"2,8,inf"`` → [2.0, 8.0, "inf"] (the request's form: JSON holds no infinity)."""
    rates: list[float | str] = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        if part.lower() == "inf":
            rates.append("inf")
            continue
        try:
            rates.append(float(part))
        except ValueError:
            rates.append(part)  # the request's own rule refuses it, in its words
    return rates


def rate_of(value: float | str) -> float:
    return math.inf if value == "inf" else float(value)
