"""One closed-loop load client whose concurrency follows a ramp, and timed windows measured on it.

Built from the bench's own parts (``agent.bench``): each stream is a ``StreamConnection`` sending the
bench's requests (``stream_request``: native ``/generate`` with ``input_ids`` from ``make_prompt``,
``max_new_tokens`` with ``ignore_eos``, streamed) back to back into ``RequestRecord``s; a window is
bracketed by two ``/metrics`` reads (``loop.read_engine``) and judged by the bench's counters module
(``counters.engine_fields``) beside what our streams delivered (``window.delivered``).

What differs from ``agent bench``'s closed loop (``agent.bench.loop``), and why: the bench runs a
fresh loop per level and arm and waits for whole cycles; a ramp is one load whose concurrency
changes while it runs, so here the streams outlive the windows:

* ``set_concurrency(C)`` starts streams up to C at once and cuts the streams beyond C (their
  connections closed, which aborts their requests in SGLang, as the bench cuts a level's tail);
* a stream's first request has a random output length in [1, L]: C streams added at once would
  otherwise finish together and restart together (the waves ``loop.StaggeredRamp`` avoids by
  holding streams back, which a ramp cannot afford); with random first lengths their completions
  are spread over a cycle from the first one on, and every later request is L long;
* a window is a span of time, not of whole cycles: the streams are spread, so every part of a
  cycle is in it in proportion, and it can be cut into equal slices for its spread.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import random
import statistics
import time
from dataclasses import dataclass, field
from typing import Any

from agent.bench.counters import engine_fields
from agent.bench.engine import EngineProbe
from agent.bench.http_stream import StreamConnection, Target
from agent.bench.loop import EngineRead, read_engine
from agent.bench.stats import RequestRecord
from agent.bench.stream import EngineUnreachable, make_prompt, stream_request
from agent.bench.window import delivered, mean_running

FAILED_PAUSE_S = 0.2
"""After a failed request a stream waits this long before the next (an engine answering 503 at once
must not be hammered in a tight loop)."""
CUT_TIMEOUT_S = 10.0


@dataclass
class RampLoad:
    """C streams of back-to-back requests against ``url``; C changes with ``set_concurrency``."""

    url: str
    input_len: int
    output_len: int
    headers: dict[str, str]
    seed: int = 1
    records: list[RequestRecord] = field(default_factory=list)
    failure: str | None = None
    """Why a stream stopped: the engine refused the connection (it is down)."""
    failed_requests: int = 0
    _workers: dict[int, asyncio.Task[None]] = field(default_factory=dict)
    _cut: set[int] = field(default_factory=set)
    """ids of the requests cut at a level change: what they delivered is in no later window."""

    def __post_init__(self) -> None:
        self.target = Target.parse(self.url)
        self._seeds = itertools.count((self.seed * 1000 + 900) * 1_000_000)
        self._lengths = random.Random(self.seed)

    @property
    def concurrency(self) -> int:
        return len(self._workers)

    async def set_concurrency(self, concurrency: int) -> None:
        """Streams 0..C-1 run: new ones start now, those beyond C are cut (and awaited, bounded)."""
        for index in range(concurrency):
            if index not in self._workers:
                self._workers[index] = asyncio.create_task(self._stream(index), name=f"ramp-stream-{index}")
        cut = [self._workers.pop(i) for i in sorted(self._workers) if i >= concurrency]
        for task in cut:
            task.cancel()
        if cut:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(CUT_TIMEOUT_S):
                    await asyncio.gather(*cut, return_exceptions=True)
        self.forget_finished()

    async def close(self) -> None:
        await self.set_concurrency(0)

    def forget_finished(self) -> None:
        """Keep only the requests in flight: the ones that ended (or were cut) are in no later window.

        Called at level changes, between windows, so that a four-minute ramp does not keep every
        chunk time of every request it ever sent."""
        self.records = [r for r in self.records if not r.done and id(r) not in self._cut]
        self._cut.clear()

    async def _stream(self, index: int) -> None:
        conn = StreamConnection(self.target)
        first = True
        try:
            while True:
                length = self._lengths.randint(1, self.output_len) if first else self.output_len
                first = False
                record = RequestRecord(start=time.perf_counter(), worker=index)
                self.records.append(record)
                try:
                    await stream_request(
                        conn,
                        make_prompt(self.input_len, next(self._seeds)),
                        length,
                        chat_model=None,
                        headers=self.headers,
                        record=record,
                    )
                except asyncio.CancelledError:
                    self._cut.add(id(record))
                    raise
                if not record.success:
                    self.failed_requests += 1
                    await asyncio.sleep(FAILED_PAUSE_S)
        except EngineUnreachable as exc:
            self.failure = str(exc)
        finally:
            await conn.close()


@dataclass(frozen=True)
class Reads:
    """A window's two engine reads and the live threshold the engine read back at each end."""

    start: EngineRead
    end: EngineRead
    wall_start: float
    wall_end: float
    threshold_start: int | None
    threshold_end: int | None
    wall_readback: float
    """When the end's threshold read-back came (what ran then is what it says)."""


async def live_threshold(probe: EngineProbe) -> int | None:
    """The engine's own read-back of the live threshold (None: it could not say)."""
    try:
        live = await probe.live_state()
    except Exception:  # a read-back that failed is recorded as unknown, never a lost window
        return None
    return None if live is None else live.threshold


async def timed_window(probe: EngineProbe, seconds: float) -> Reads:
    """Read the engine, let ``seconds`` of load pass (the window is this wait), read it again."""
    threshold_start = await live_threshold(probe)
    start, wall_start = await read_engine(probe), time.time()
    await asyncio.sleep(seconds)
    end, wall_end = await read_engine(probe), time.time()
    threshold_end = await live_threshold(probe)
    return Reads(start, end, wall_start, wall_end, threshold_start, threshold_end, time.time())


def window_figures(load: RampLoad, reads: Reads, slices: int) -> dict[str, Any]:
    """What one window holds: our streams' tokens/s over it (and per slice), the engine's counters'."""
    records = load.records
    # The span our streams' tokens are counted over is the counters module's (each read's ``settled``:
    # the chunks that had reached us with the answer are handled), so the two figures cover one span.
    a, b = reads.start.settled, reads.end.settled
    span = max(b - a, 1e-9)
    ours = delivered(records, a, b)
    cuts = [a + span * i / slices for i in range(slices + 1)]
    parts = [(delivered(records, x, y), y - x) for x, y in itertools.pairwise(cuts)]
    rates = [tokens / seconds for tokens, seconds in parts if seconds > 0]
    engine = engine_fields(reads.start, reads.end, records)
    running = [r.reading.gauge("running") for r in (reads.start, reads.end) if r.reading is not None]
    known = [v for v in running if v is not None]
    inside = [r for r in records if r.done and a < r.end <= b]
    return {
        "seconds": span,
        "client_tokens": ours,
        "client_tps": ours / span,
        "slices": [[tokens, seconds] for tokens, seconds in parts],
        "slice_cv": statistics.pstdev(rates) / statistics.fmean(rates)
        if len(rates) > 1 and statistics.fmean(rates) > 0
        else None,
        "engine_tps": engine.get("engine_output_throughput"),
        "engine_finished_tps": engine.get("engine_finished_throughput"),
        "engine_stream_diff": engine.get("engine_stream_diff"),
        "engine_stream_mismatch": engine.get("engine_stream_mismatch"),
        "engine_race_tokens": engine.get("engine_race_tokens"),
        "engine_note": engine.get("engine_note"),
        "accept_length_counters": engine.get("accept_length_counters"),
        "engine_running": statistics.fmean(known) if known else None,
        "streams_decoding": mean_running(records, a, b),
        "completed": sum(1 for r in inside if r.success),
        "failed": sum(1 for r in inside if not r.success),
        "threshold_start": reads.threshold_start,
        "threshold_end": reads.threshold_end,
    }
