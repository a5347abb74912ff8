"""The closed-loop concurrency sweep: at each level, C workers keep C streamed requests in flight.

Like ``bench_serving --max-concurrency C --request-rate inf``: the next request starts as soon as one
finishes. Per level: a warm-up (not measured), ``/flush_cache`` (so the engine's accept-length totals
cover only the measured requests), then the measured requests while a sampler reads the engine's
``num_running_reqs`` to show the concurrency the engine itself reached.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import statistics
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx

from agent.bench.engine import EngineError, EngineProbe
from agent.bench.http_stream import StreamConnection, Target
from agent.bench.options import BenchOptions
from agent.bench.progress import BenchProgress, ProgressCallback, ignore_progress
from agent.bench.stats import RequestRecord, level_metrics
from agent.bench.stream import EngineUnreachable, make_prompt, stream_request
from agent.sglang.info_view import ServerInfo
from agent.sglang.reading import MetricsReading

ACCEPT_FROM_COUNTERS = (
    "metrics: Δgeneration_tokens_total / Δspec_verify_calls_total over the measured requests"
)
ACCEPT_FROM_SERVER_INFO = "server_info: internal_states[0].avg_spec_accept_length after /flush_cache"
WARMUP_OUTPUT_LEN = 16


class BenchCancelled(RuntimeError):
    """The operator cancelled the run."""


@dataclass
class RunTracker:
    """Counts requests over a whole run (all arms), so progress is one fraction from 0 to 1."""

    total: int
    done: int = 0
    callback: ProgressCallback = ignore_progress

    def report(
        self, arm: str, concurrency: int, index: int, levels: int, completed: int, requests: int
    ) -> None:
        self.callback(
            BenchProgress(
                arm=arm,
                concurrency=concurrency,
                level_index=index,
                levels=levels,
                completed=completed,
                requests=requests,
                fraction=min(1.0, self.done / max(1, self.total)),
                message=f"level {index + 1}/{levels}",
            )
        )


def auth_headers(api_key: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}


def make_client(options: BenchOptions) -> httpx.AsyncClient:
    """One pooled client, with a connection for every in-flight request of the largest level."""
    connections = max(options.concurrency) + 16
    return httpx.AsyncClient(
        limits=httpx.Limits(max_connections=connections, max_keepalive_connections=connections),
        timeout=httpx.Timeout(options.request_timeout_s, connect=10.0),
    )


async def _until_cancelled(work: Awaitable[Any], cancel: asyncio.Event | None) -> Any:
    """Await ``work``; if ``cancel`` is set first, cancel it and raise BenchCancelled."""
    task = asyncio.ensure_future(work)
    if cancel is None:
        return await task
    waiter = asyncio.ensure_future(cancel.wait())
    try:
        await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiter.cancel()
    if not task.done():
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task
        raise BenchCancelled("cancelled by the operator")
    return task.result()


async def _closed_loop(
    target: Target,
    concurrency: int,
    count: int,
    send: Callable[[StreamConnection], Awaitable[RequestRecord]],
    on_done: Callable[[], None],
    min_seconds: float = 0.0,
) -> list[RequestRecord]:
    """Run at least ``count`` requests, and keep starting new ones until ``min_seconds`` have
    passed, with ``concurrency`` in flight, each worker on its own keep-alive connection; the first
    refused connection stops all."""
    records: list[RequestRecord] = []
    issued = 0
    deadline = time.perf_counter() + min_seconds

    async def worker() -> None:
        nonlocal issued
        conn = StreamConnection(target)
        try:
            while issued < count or time.perf_counter() < deadline:
                issued += 1
                records.append(await send(conn))
                on_done()
        finally:
            await conn.close()

    try:
        async with asyncio.TaskGroup() as group:
            for _ in range(min(concurrency, count)):
                group.create_task(worker())
    except* EngineUnreachable as errors:
        raise errors.exceptions[0] from None
    return records


@dataclass
class _RunningSampler:
    """Reads the engine's num_running_reqs every ``interval_s``, and once more as soon as every slot
    of the level has its first token (the moment the engine should hold all C requests), so a short
    level is not missed and a long one is not scraped more than needed."""

    probe: EngineProbe
    interval_s: float
    samples: list[float] = field(default_factory=list)
    failures: int = 0
    all_started: asyncio.Event = field(default_factory=asyncio.Event)
    stop: asyncio.Event = field(default_factory=asyncio.Event)

    burst: int = 4
    burst_interval_s: float = 0.05

    async def _sample(self) -> None:
        try:
            reading = await self.probe.metrics()
        except EngineError:
            self.failures += 1
            return
        running = None if reading is None else reading.gauge("running")
        if running is not None:
            self.samples.append(running)

    async def run(self) -> None:
        # SGLang refreshes the gauge every decode-log-interval batches, so one read at the moment
        # the level is full can be stale: read a short burst then, and periodically otherwise.
        while not self.all_started.is_set() and not self.stop.is_set():
            await self._sample()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.all_started.wait(), self.interval_s)
        for _ in range(self.burst):
            if self.stop.is_set():
                return
            await self._sample()
            await asyncio.sleep(self.burst_interval_s)
        while not self.stop.is_set():
            await self._sample()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.stop.wait(), self.interval_s)

    async def finish(self, task: asyncio.Future[None]) -> None:
        """Let a read in flight land (a level shorter than one scrape still gets its sample)."""
        self.stop.set()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(task, 2.0)


def _delta(after: MetricsReading | None, before: MetricsReading | None, name: str) -> float | None:
    if after is None or before is None:
        return None
    a, b = after.counter(name), before.counter(name)
    return None if a is None or b is None else a - b


class SweepSession:
    """One client and engine probe for a whole run; ``sweep(arm)`` measures every level once."""

    def __init__(
        self,
        url: str,
        options: BenchOptions,
        client: httpx.AsyncClient,
        tracker: RunTracker,
        cancel: asyncio.Event | None = None,
    ) -> None:
        self.url = url.rstrip("/")
        self.options = options
        self.client = client
        self.headers = auth_headers(options.api_key)
        self.probe = EngineProbe(client, self.url, self.headers, auth_headers(options.admin_api_key))
        self.target = Target.parse(self.url)
        self.tracker = tracker
        self.cancel = cancel
        self.chat_model: str | None = None
        self._seed = itertools.count(options.seed * 1_000_000)
        self._warmed = False

    async def prepare(self) -> ServerInfo:
        """Check the engine answers and return its /server_info view (the caller keeps what it needs)."""
        if not await self.probe.healthy():
            raise EngineError(f"{self.url}/health does not answer 200: the engine is not up")
        info = await self.probe.server_info()
        if self.options.chat:
            self.chat_model = await self.probe.served_model()
        return info

    async def _send(
        self,
        conn: StreamConnection,
        output_len: int,
        on_first_token: Callable[[], None] | None = None,
        seeds: Iterator[int] | None = None,
    ) -> RequestRecord:
        prompt = make_prompt(self.options.input_len, next(self._seed if seeds is None else seeds))
        return await stream_request(
            conn,
            prompt,
            output_len,
            chat_model=self.chat_model,
            headers=self.headers,
            on_first_token=on_first_token,
        )

    async def sweep(self, arm: str) -> list[dict[str, Any]]:
        levels = self.options.concurrency
        return [await self.level(arm, c, i, len(levels)) for i, c in enumerate(levels)]

    async def level(self, arm: str, concurrency: int, index: int, levels: int) -> dict[str, Any]:
        if self.cancel is not None and self.cancel.is_set():
            raise BenchCancelled("cancelled by the operator")
        opts = self.options
        level_seed = (opts.seed * 1000 + index + 1) * 1_000_000
        await self._warm_up(concurrency, itertools.count(level_seed + 500_000))
        flush_problem = await self.probe.flush_cache()
        before = await self.probe.metrics()
        count = opts.requests_at(concurrency)
        completed = 0
        # The prompts of a level (warm-up and measured) are the same for every arm (bench_serving's
        # one dataset and seed): arms then differ by their setting, not by which prompts they drew.
        # Unique within the level, and /flush_cache above keeps the prefix cache from remembering
        # another arm's.
        seeds = itertools.count(level_seed)

        def on_done() -> None:
            nonlocal completed
            completed += 1
            if completed <= count:  # requests beyond the plan (min_level_seconds) do not move the bar
                self.tracker.done += 1
            self.tracker.report(arm, concurrency, index, levels, completed, max(count, completed))

        sampler = _RunningSampler(self.probe, opts.sample_interval_s)
        first_tokens = 0

        def on_first_token() -> None:
            nonlocal first_tokens
            first_tokens += 1
            if first_tokens == min(concurrency, count):
                sampler.all_started.set()

        sampling = asyncio.ensure_future(sampler.run())
        cpu0, t0 = time.process_time(), time.perf_counter()
        try:
            records: list[RequestRecord] = await _until_cancelled(
                _closed_loop(
                    self.target,
                    concurrency,
                    count,
                    lambda conn: self._send(conn, opts.output_len, on_first_token, seeds),
                    on_done,
                    opts.min_level_seconds,
                ),
                self.cancel,
            )
        except EngineUnreachable as exc:
            raise EngineError(f"engine stopped answering during {arm} c={concurrency}: {exc}") from exc
        finally:
            await sampler.finish(sampling)
        duration = time.perf_counter() - t0
        cpu = time.process_time() - cpu0
        result = level_metrics(records, duration)
        if result["failed"] and not await self.probe.healthy():
            raise EngineError(
                f"engine stopped answering during {arm} c={concurrency}: {result.get('errors', ['?'])[0]}"
            )
        if result["completed"] == 0:
            raise EngineError(
                f"every request failed at {arm} c={concurrency}: {result.get('errors', ['?'])[0]}"
            )
        after = await self.probe.metrics()
        info = await self.probe.server_info()
        result = {"max_concurrency": concurrency, "requests": len(records), **result}
        result |= self._engine_fields(result, before, after, info, sampler, flush_problem)
        result["client_cpu_fraction"] = cpu / max(duration, 1e-9)
        return result

    async def _warm_up(self, concurrency: int, seeds: Iterator[int] | None = None) -> None:
        """Short requests before each level; before the run's first level, full-length ones, so an
        adaptive engine's acceptance EMA has settled before anything is measured (the first arm
        measured would otherwise pay for it)."""
        n = min(self.options.warmup_requests, concurrency)
        if n <= 0:
            return
        output_len = (
            self.options.output_len if not self._warmed else min(WARMUP_OUTPUT_LEN, self.options.output_len)
        )
        self._warmed = True
        try:
            records = await _until_cancelled(
                _closed_loop(
                    self.target, n, n, lambda conn: self._send(conn, output_len, seeds=seeds), lambda: None
                ),
                self.cancel,
            )
        except EngineUnreachable as exc:
            raise EngineError(f"engine stopped answering during warm-up: {exc}") from exc
        failures = [r.error for r in records if not r.success]
        if len(failures) == n:
            raise EngineError(f"warm-up request failed: {failures[0]}")

    def _engine_fields(
        self,
        result: dict[str, Any],
        before: MetricsReading | None,
        after: MetricsReading | None,
        info: ServerInfo,
        sampler: _RunningSampler,
        flush_problem: str | None,
    ) -> dict[str, Any]:
        concurrency = int(result["max_concurrency"])
        duration = float(result["duration"])
        generated = _delta(after, before, "generation_tokens")
        verifies = _delta(after, before, "spec_verify_calls")
        server_accept = info.state0.avg_spec_accept_length
        fields: dict[str, Any] = {
            "engine_generated_tokens": generated,
            "engine_output_throughput": None if generated is None else generated / max(duration, 1e-9),
            "accept_length_server_info": None if flush_problem else server_accept,
        }
        if generated is not None and verifies:
            fields["accept_length"] = generated / verifies
            fields["accept_length_source"] = ACCEPT_FROM_COUNTERS
        elif server_accept is not None and not flush_problem:
            fields["accept_length"] = float(server_accept)
            fields["accept_length_source"] = ACCEPT_FROM_SERVER_INFO
        else:
            fields["accept_length"] = None
            fields["accept_length_source"] = "none: the engine reports no speculative verify counts"
        if flush_problem:
            fields["flush_cache_problem"] = flush_problem
        samples = sampler.samples
        peak = max(samples) if samples else None
        fields["engine_running_samples"] = len(samples)
        fields["engine_max_running_reqs"] = peak
        fields["engine_mean_running_reqs"] = statistics.fmean(samples) if samples else None
        cap = info.max_running_total
        fields["concurrency_reached"] = None if peak is None else peak >= concurrency
        if peak is None:
            fields["concurrency_note"] = "no num_running_reqs samples (/metrics not exported?)"
        elif peak < concurrency:
            why = f"; the server caps running requests at {cap}" if cap and int(cap) < concurrency else ""
            fields["concurrency_note"] = (
                f"engine reached {int(peak)} running requests, not {concurrency}{why}"
            )
        return fields


def planned_requests(options: BenchOptions, arms: int = 1) -> int:
    return arms * sum(options.requests_at(c) for c in options.concurrency)


async def run_sweep(
    url: str,
    options: BenchOptions,
    progress: ProgressCallback = ignore_progress,
    cancel: asyncio.Event | None = None,
) -> dict[str, Any]:
    """A plain sweep of the server as it runs (no speculation setting is touched)."""
    started = time.time()
    tracker = RunTracker(total=planned_requests(options), callback=progress)
    async with make_client(options) as client:
        session = SweepSession(url, options, client, tracker, cancel)
        info = await session.prepare()
        levels = await session.sweep("sweep")
    return {
        "kind": "sweep",
        "url": url,
        "options": options.public_dict(),
        "server": server_summary(info),
        "levels": levels,
        "started_at": started,
        "duration_s": time.time() - started,
    }


def server_summary(info: ServerInfo) -> dict[str, Any]:
    """The few /server_info fields a result needs (never the whole object: it carries API keys)."""
    return info.summary()
