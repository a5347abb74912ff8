"""One measured closed loop: C streams replaced as they finish until the window ends, then cut.

The loop feeds every first token and completion to a ``WindowTracker``. The engine's ``/metrics``
is read at the window's two ends (right after the completions that start and end it: its counters
then bracket whole cycles) and every ``sample_interval_s`` for its running count. When the window
ends no stream is replaced; once the end's reading is back, the requests still in flight are cut
(their connections closed, which aborts them in SGLang): what they would still do is after the
window, and waiting for them would cost up to a whole request's time per level.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

from agent.bench.engine import EngineError, EngineProbe
from agent.bench.http_stream import StreamConnection, Target
from agent.bench.stats import RequestRecord
from agent.bench.window import Window, WindowRule, WindowTracker
from agent.sglang.reading import MetricsReading

Send = Callable[[StreamConnection, RequestRecord, Callable[[int], None]], Awaitable[RequestRecord]]
"""``send(conn, record, on_tokens)``: stream one request into ``record``."""


class StaggeredRamp:
    """Stream ``i`` sends its first request when stream 0 has delivered ``i/S`` of its output, where
    S is the streams the server runs at once (``spread``: the level, or the server's limit below it);
    streams beyond S start with the last of them and queue.

    Started all at once, C streams of one length finish together and restart together: the loop
    runs in waves (every arrival's prefill stalls every stream at once), and with speculation the
    waves melt only over many cycles as acceptance draws spread the streams apart, so the first
    cycles are not the loop's steady state. Measured on the simulator (speedup 20) with all streams
    started at once: at c=64, speculation off, 10,260 tok/s against 12,873 staggered, and with
    speculation on, SGLang's finish-counted tokens over the window 5-10 % above what the window
    delivered at c=16 and c=64. Spread over one request of stream 0, the running streams' progress
    is uniform from the first completion on: the state the loop settles into with speculation
    anyway, and the one production traffic, arriving at random, is in. A queue (more streams than
    the server runs) is a delay line in front of that: each completion admits the queue's head into
    the slot it leaves, so the slots stay spread.
    """

    def __init__(self, concurrency: int, output_len: int, spread: int | None = None) -> None:
        self.concurrency = concurrency
        self.spread = max(1, min(concurrency, spread or concurrency))
        self.output_len = max(1, output_len)
        self.gates = [asyncio.Event() for _ in range(concurrency)]
        self.gates[0].set()
        self.opened = 1

    def progress(self, delivered: int) -> None:
        wanted = min(self.spread, 1 + delivered * self.spread // self.output_len)
        if wanted >= self.spread:
            wanted = self.concurrency
        while self.opened < wanted:
            self.gates[self.opened].set()
            self.opened += 1

    def open_all(self) -> None:
        self.progress(self.output_len)


@dataclass(frozen=True)
class EngineRead:
    sent: float
    received: float
    reading: MetricsReading | None
    """None: the engine exports no /metrics, or did not answer (``error``)."""
    error: str | None = None
    settled: float = 0.0
    """When every chunk that had reached us with the answer was handled: the requests SGLang
    counted as finished in this reading (it counts a request before sending its last chunk) are
    done in our records by then."""

    @property
    def time(self) -> float:
        return (self.sent + self.received) / 2


SETTLE_PASSES = 3
"""Event-loop passes after a /metrics answer before our records are compared with it."""


async def read_engine(probe: EngineProbe) -> EngineRead:
    sent = time.perf_counter()
    try:
        reading = await probe.metrics()
    except EngineError as exc:
        now = time.perf_counter()
        return EngineRead(sent, now, None, str(exc), now)
    received = time.perf_counter()
    for _ in range(SETTLE_PASSES):
        await asyncio.sleep(0)
    return EngineRead(sent, received, reading, None, time.perf_counter())


@dataclass
class LoopResult:
    records: list[RequestRecord]
    tracker: WindowTracker
    at_start: EngineRead | None
    at_end: EngineRead | None
    running_samples: list[tuple[float, float]] = field(default_factory=list)
    """(time, the engine's num_running_reqs) read during the loop."""
    seconds: float = 0.0
    """From the first request to the cut: ramp, window and the end's reading."""
    cpu_s: float = 0.0
    gave_up: str | None = None
    """Why the loop stopped without a window (requests kept failing)."""

    @property
    def window(self) -> Window | None:
        return self.tracker.window()


def _raise_first_failure(tasks: set[asyncio.Task[None]]) -> None:
    """A stream that could not connect (EngineUnreachable) or broke stops the whole loop."""
    for task in tasks:
        error = None if task.cancelled() else task.exception()
        if error is not None:
            raise error


async def _wait(event: asyncio.Event) -> None:
    await event.wait()


async def measured_loop(
    target: Target,
    concurrency: int,
    rule: WindowRule,
    send: Send,
    probe: EngineProbe,
    sample_interval_s: float,
    on_completion: Callable[[WindowTracker], None] = lambda _: None,
    stagger_tokens: int | None = None,
    watch: Callable[[Callable[[], int], asyncio.Event], Coroutine[Any, Any, None]] | None = None,
) -> LoopResult:
    """Run the level until its window ends (or its requests keep failing); EngineUnreachable
    when a stream cannot connect. ``stagger_tokens``: the output length to stagger the first
    requests over (``StaggeredRamp``); None starts every stream at once. ``watch(decoding,
    first_token)`` runs beside the loop until it returns or the loop ends (``settle.watch_in_force``)."""
    tracker = WindowTracker(rule)
    first_token = asyncio.Event()
    watching: asyncio.Task[None] | None = (
        None if watch is None else asyncio.create_task(watch(lambda: tracker.running, first_token))
    )
    ramp = StaggeredRamp(concurrency, stagger_tokens, rule.target) if stagger_tokens else None
    result = LoopResult(records=[], tracker=tracker, at_start=None, at_end=None)
    stop = asyncio.Event()
    reads: dict[str, asyncio.Task[EngineRead]] = {}
    tally = {"ok": 0, "failed": 0}
    give_up_after = max(concurrency, 8)

    def watcher(record: RequestRecord) -> Callable[[int], None]:
        def on_tokens(count: int) -> None:
            if len(record.chunk_counts) == 1:
                tracker.first_token(record.chunk_times[0])
                first_token.set()
            if ramp is not None and record.worker == 0:
                ramp.progress(count)

        return on_tokens

    async def worker(index: int) -> None:
        if ramp is not None:
            await ramp.gates[index].wait()
        conn = StreamConnection(target)
        try:
            while not stop.is_set():
                record = RequestRecord(start=time.perf_counter(), worker=index)
                result.records.append(record)
                try:
                    await send(conn, record, watcher(record))
                finally:
                    if ramp is not None and index == 0:
                        ramp.open_all()
                if stop.is_set():
                    tracker.finished(index, record.end, record.success, record.first_token_at is not None)
                    return
                started = tracker.started
                ended = tracker.finished(index, record.end, record.success, record.first_token_at is not None)
                tally["ok" if record.success else "failed"] += 1
                if tracker.started and not started:
                    reads["start"] = asyncio.create_task(read_engine(probe))
                on_completion(tracker)
                if ended:
                    reads["end"] = asyncio.create_task(read_engine(probe))
                    stop.set()
                elif tally["failed"] >= give_up_after and tally["failed"] > tally["ok"]:
                    result.gave_up = f"{tally['failed']} of {sum(tally.values())} requests failed"
                    stop.set()
        finally:
            await conn.close()

    async def sample() -> None:
        while True:
            read = await read_engine(probe)
            running = None if read.reading is None else read.reading.gauge("running")
            if running is not None:
                result.running_samples.append((read.time, running))
                tracker.engine_running(read.time, running)
            await asyncio.sleep(sample_interval_s)

    cpu0, t0 = time.process_time(), time.perf_counter()
    workers: set[asyncio.Task[None]] = {asyncio.create_task(worker(i)) for i in range(concurrency)}
    sampler: asyncio.Task[None] = asyncio.create_task(sample())
    stopped: asyncio.Task[None] = asyncio.create_task(_wait(stop))
    try:
        pending = set(workers)
        while pending:
            done, _ = await asyncio.wait(pending | {stopped}, return_when=asyncio.FIRST_COMPLETED)
            _raise_first_failure(done & workers)
            if stopped in done:
                break
            pending -= done
        if "end" in reads:
            result.at_end = await reads["end"]
    finally:
        others = (sampler, stopped) if watching is None else (sampler, stopped, watching)
        for task in (*workers, *others):
            task.cancel()
        for task in (*workers, *others):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        for read in reads.values():
            if not read.done():
                read.cancel()
    if "start" in reads and not reads["start"].cancelled():
        result.at_start = await reads["start"]
    result.seconds = time.perf_counter() - t0
    result.cpu_s = time.process_time() - cpu0
    return result
