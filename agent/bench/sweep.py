"""Closed-loop levels: at each, C workers keep C streamed requests in flight, measured over a
steady-state window (``window``), repeated and interleaved (``schedule``).

Like ``bench_serving --max-concurrency C --request-rate inf``: the next request starts as soon as one
finishes. One step (one arm at one level, once): a discarded warm-up batch (``settle``), then
``/flush_cache`` (the prefix cache forgets the prompts another arm sent, and the accept-length totals
restart), then the measured loop until its window ends (``loop``).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import statistics
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, cast

import httpx

from agent.bench.aggregate import RunOutcome, arm_estimates, arm_result
from agent.bench.counters import engine_fields
from agent.bench.drain import DrainOutcome, wait_for_drain
from agent.bench.engine import EngineError, EngineProbe
from agent.bench.http_stream import StreamConnection, Target
from agent.bench.loop import LoopResult, measured_loop
from agent.bench.options import BenchOptions
from agent.bench.partial import Keep, partial_levels
from agent.bench.progress import ProgressCallback, RunTracker, ignore_progress
from agent.bench.provenance import RunContext, environment, simulated_gpus
from agent.bench.schedule import DurationModel, Step
from agent.bench.settle import Settling, switch_record, warm_up_batch, watch_in_force
from agent.bench.stats import RequestRecord
from agent.bench.stopping import LevelStop, Outcomes, first_steps, measure, stopping_record, whole_test
from agent.bench.stream import EngineUnreachable, make_prompt, stream_request
from agent.bench.window import WindowRule, slices
from agent.bench.window_stats import window_metrics
from agent.bench.workload import load as load_workload
from agent.sglang import kv, paths
from agent.sglang.info_view import ServerInfo
from agent.wire.bench_env import GpuFacts


class BenchCancelled(RuntimeError):
    """The operator cancelled the run."""


@dataclass(frozen=True)
class LiveSwitch:
    """A live change made just before a step: what, when it was asked, when it read back."""

    change: dict[str, Any]
    called: float
    set_done: float
    threshold: int | None
    """The live threshold now in force (what the warm-up checks the engine's steps against)."""


def auth_headers(api_key: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}


def make_client(options: BenchOptions) -> httpx.AsyncClient:
    """One pooled client for the control and telemetry endpoints (the load has its own connections)."""
    return httpx.AsyncClient(
        limits=httpx.Limits(max_connections=32, max_keepalive_connections=32),
        timeout=httpx.Timeout(options.request_timeout_s, connect=10.0),
    )


async def until_cancelled(work: Awaitable[Any], cancel: asyncio.Event | None) -> Any:
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


def new_tracker(
    steps: list[Step], options: BenchOptions, levels: int, progress: ProgressCallback
) -> RunTracker:
    model = DurationModel(options.min_window_s)
    windows = options.repeats if options.stop is None else options.stop.min_windows
    tracker = RunTracker(steps, model, levels, windows, progress)
    tracker.rule_words = None if options.stop is None else options.stop.words()
    return tracker


class SweepSession:
    """One engine's probe and request recipe for a whole run; ``run_step`` measures one step."""

    def __init__(
        self, url: str, options: BenchOptions, client: httpx.AsyncClient, cancel: asyncio.Event | None = None
    ) -> None:
        self.url = url.rstrip("/")
        self.options = options
        self.client = client
        self.headers = auth_headers(options.api_key)
        self.probe = EngineProbe(client, self.url, self.headers, auth_headers(options.admin_api_key))
        self.target = Target.parse(self.url)
        self.cancel = cancel
        self.chat_model: str | None = None
        self.info: ServerInfo | None = None
        self.workload = load_workload(options.workload, options.input_len, options.output_len)
        """The run's requests (``agent.bench.workload``): a seed's prompt and output length."""

    async def prepare(self) -> ServerInfo:
        """Check the engine answers and return its /server_info view (the caller keeps what it needs)."""
        if not await self.probe.healthy():
            raise EngineError(f"{self.url}{paths.HEALTH} does not answer 200: the engine is not up")
        self.info = await self.probe.server_info()
        if self.options.chat:
            self.chat_model = await self.probe.served_model()
        return self.info

    async def simulated_host(self) -> GpuFacts | None:
        """The host the engine models when it is ``agent sim`` (``provenance.simulated_gpus``)."""
        return await simulated_gpus(self.client, self.url, self.headers)

    async def wait_for_drain(self, tracker: RunTracker) -> DrainOutcome:
        """Wait (up to ``drain_wait_s``) until other clients' requests have left the engine."""
        return cast(
            DrainOutcome,
            await until_cancelled(
                wait_for_drain(self.probe, self.options.drain_wait_s, tracker.waiting), self.cancel
            ),
        )

    def _sender(
        self, output_len: int | None, seeds: Iterator[int], input_len: int | None = None
    ) -> Callable[[StreamConnection, RequestRecord, Callable[[int], None]], Awaitable[RequestRecord]]:
        """Requests of the seeds: the workload's (``output_len`` None), or of a fixed shape (probes,
        warm-ups)."""
        length = self.options.input_len if input_len is None else input_len

        async def send(
            conn: StreamConnection, record: RequestRecord, on_tokens: Callable[[int], None]
        ) -> RequestRecord:
            seed = next(seeds)
            if output_len is None:
                item = self.workload.item(seed)
                prompt, out = item.prompt, item.output_len
            else:
                prompt, out = make_prompt(length, seed), output_len
            return await stream_request(
                conn,
                prompt,
                out,
                chat_model=self.chat_model,
                headers=self.headers,
                on_tokens=on_tokens,
                record=record,
            )

        return send

    def workload_sender(
        self, seeds: Iterator[int]
    ) -> Callable[[StreamConnection, RequestRecord, Callable[[int], None]], Awaitable[RequestRecord]]:
        """The workload's requests of ``seeds``, for a loop of another kind (``open_loop``)."""
        return self._sender(None, seeds)

    async def probe_request(self) -> float:
        """One full-length request alone, before anything is measured: what a request costs (the run's
        first duration guess), and the engine's first request after a start is not a level's."""
        conn = StreamConnection(self.target)
        record = RequestRecord(start=time.perf_counter())
        send = self._sender(self.options.output_len, itertools.count(7_000_000 + self.options.seed))
        try:
            await until_cancelled(send(conn, record, lambda _: None), self.cancel)
        except EngineUnreachable as exc:
            raise EngineError(f"engine stopped answering before the run: {exc}") from exc
        finally:
            await conn.close()
        if not record.success:
            raise EngineError(f"the engine failed the run's first request: {record.error}")
        return record.latency

    async def probe_batch(self, concurrency: int) -> float | None:
        """``concurrency`` full-length requests at once, before anything is measured: a request's time
        at the top level, for the expected duration (and the engine has seen that batch size)."""
        if concurrency <= 1:
            return None
        send = self._sender(self.options.output_len, itertools.count(8_000_000 + self.options.seed))
        try:
            records = await until_cancelled(warm_up_batch(self.target, concurrency, send), self.cancel)
        except EngineUnreachable as exc:
            raise EngineError(f"engine stopped answering before the run: {exc}") from exc
        latencies = [r.latency for r in records if r.success]
        return statistics.median(latencies) if latencies else None

    async def probe_durations(self, model: DurationModel) -> None:
        """The run's first two requests' worth: one alone, then a batch at the top level."""
        model.probe_s = await self.probe_request()
        top = max(self.options.concurrency)
        at_top = await self.probe_batch(min(top, self._target(top)[0]))
        if at_top is not None:
            model.probes[top] = at_top

    def _target(self, concurrency: int) -> tuple[int, str | None]:
        """The running requests the window waits for: the asked level, unless the server cannot hold
        that many (its running cap, or its KV pool at this request shape); then why not."""
        info = self.info
        if info is None:
            return concurrency, None
        limits: list[tuple[int, str]] = []
        if info.max_running_total:
            limits.append(
                (int(info.max_running_total), f"the server caps running requests at {info.max_running_total}")
            )
        pool = info.pool_tokens
        if pool:
            page = info.page_size or 1
            per_request = (
                kv.ceil_to_page(self.options.input_len, page)
                + self.options.output_len
                + kv.reserve_per_decode(info.spec_shape(), page)
            )
            fit = max(1, pool // per_request)
            limits.append((fit, f"its KV pool ({pool} tokens) holds {fit} requests of this shape"))
        below = [(n, why) for n, why in limits if n < concurrency]
        return min(below) if below else (concurrency, None)

    async def run_step(
        self,
        step: Step,
        tracker: RunTracker,
        switch: Callable[[], Awaitable[LiveSwitch]] | None = None,
    ) -> RunOutcome:
        """One arm at one level: (an extra warm-up), /flush_cache, the live switch, the loop."""
        if self.cancel is not None and self.cancel.is_set():
            raise BenchCancelled("cancelled by the operator")
        opts = self.options
        c = step.concurrency
        level_seed = (opts.seed * 1000 + step.level_index + 1) * 1_000_000
        # The prompts of a level are the same for every arm and repeat (bench_serving's one dataset
        # and seed): arms then differ by their setting, not by which prompts they drew. /flush_cache
        # before each loop keeps the prefix cache from remembering them.
        where = f"{step.arm} c={c}"
        target, capped = self._target(c)
        rule = WindowRule(target, opts.min_window_s, opts.min_requests)
        needed = opts.requests_at(c)
        settling = Settling()
        live: LiveSwitch | None = None
        try:
            if opts.warmup_requests:
                warm_send = self._sender(opts.warmup_output_len, itertools.count(level_seed + 500_000))
                await until_cancelled(warm_up_batch(self.target, opts.warmup_at(c), warm_send), self.cancel)
            flush_problem = await self.probe.flush_cache()
            if switch is not None:
                live = await switch()
            threshold = None if live is None else live.threshold

            async def watch(decoding: Callable[[], int], first_token: asyncio.Event) -> None:
                await watch_in_force(self.probe, threshold, decoding, settling, first_token)

            loop: LoopResult = await until_cancelled(
                measured_loop(
                    self.target,
                    c,
                    rule,
                    self._sender(None, itertools.count(level_seed)),
                    self.probe,
                    opts.sample_interval_s,
                    lambda t: tracker.measuring(step, t.completions, t.min_completions or needed),
                    stagger_tokens=opts.output_len,
                    watch=None if live is None else watch,
                ),
                self.cancel,
            )
        except EngineUnreachable as exc:
            raise EngineError(f"engine stopped answering during {where}: {exc}") from exc
        failures = [r.error for r in loop.records if r.done and not r.success]
        window = loop.window
        if window is None or loop.gave_up:
            if not await self.probe.healthy():
                raise EngineError(f"engine stopped answering during {where}: {(failures or ['?'])[0]}")
            raise EngineError(f"requests kept failing at {where} ({loop.gave_up}): {(failures or ['?'])[0]}")
        info = await self.probe.server_info()
        outcome = self._outcome(step, loop, flush_problem, info, capped)
        if live is not None:
            first = min(
                (r.first_token_at for r in loop.records if r.first_token_at is not None), default=None
            )
            outcome.result["switch"] = switch_record(
                live.change, live.called, live.set_done, settling, live.threshold, first, window.start
            )
        request_s = outcome.result["median_e2e_latency_ms"] / 1000 or None
        tracker.measured(
            step, f"{outcome.result['output_throughput']:.1f} tok/s over {window.seconds:.1f} s", request_s
        )
        return outcome

    def _outcome(
        self, step: Step, loop: LoopResult, flush_problem: str | None, info: ServerInfo, capped: str | None
    ) -> RunOutcome:
        window = loop.window
        assert window is not None
        c = step.concurrency
        metrics = window_metrics([(loop.records, window)])
        cut = slices(loop.records, window, self.options.window_slices)
        result: dict[str, Any] = {
            "repeat": step.repeat,
            "step": step.index,
            "requests": len(loop.records),
            **metrics,
            "window_s": window.seconds,
            "window": {
                "start_source": window.start_source,
                "ramp_s": round(window.start - min(r.start for r in loop.records), 4),
                "cycles": len(window.cycles) - 1,
                "min_requests": window.min_completions,
                "target": window.target,
                "loop_s": round(loop.seconds, 4),
            },
            "slices": [[s.tokens, round(s.seconds, 6)] for s in cut],
        }
        result |= engine_fields(loop.at_start, loop.at_end, loop.records, (window.start, window.end))
        server_accept = None if flush_problem else info.state0.avg_spec_accept_length
        result["accept_length_server_info"] = server_accept
        result["accept_length"] = result["accept_length_counters"]
        if result["accept_length"] is None and server_accept is not None:
            result["accept_length"] = float(server_accept)
        if flush_problem:
            result["flush_cache_problem"] = flush_problem
        inside = [v for t, v in loop.running_samples if window.start <= t <= window.end]
        engine_peak = max((v for _, v in loop.running_samples), default=None)
        peak = max(loop.tracker.peak_running, int(engine_peak or 0))
        result |= {
            "engine_running_samples": len(inside),
            "engine_max_running_reqs": max(inside) if inside else engine_peak,
            "engine_mean_running_reqs": statistics.fmean(inside) if inside else None,
            "concurrency_reached": peak >= c,
            "client_cpu_fraction": loop.cpu_s / max(loop.seconds, 1e-9),
        }
        if peak < c:
            why = f"; {capped}" if capped else ""
            result["concurrency_note"] = f"engine reached {peak} running requests, not {c}{why}"
        slices_samples = [(float(s.tokens), s.seconds) for s in cut]
        return RunOutcome(result, (loop.records, window), slices_samples)


async def run_sweep(
    url: str,
    options: BenchOptions,
    progress: ProgressCallback = ignore_progress,
    cancel: asyncio.Event | None = None,
    context: RunContext | None = None,
    keep: Keep | None = None,
) -> dict[str, Any]:
    """A plain sweep of the server as it runs (no speculation setting is touched), over the levels
    until the stopping rule says (``stopping``; without one ``repeats`` times); ``context``: what the
    caller knows of where the server runs (``provenance``)."""
    started = time.time()
    steps = first_steps(options.concurrency, ["sweep"], options.stop, options.repeats)
    tracker = new_tracker(steps, options, len(options.concurrency), progress)
    async with make_client(options) as client:
        session = SweepSession(url, options, client, cancel)
        info = await session.prepare()
        simulated = await session.simulated_host()
        drain = await session.wait_for_drain(tracker)
        tracker.probing(max(options.concurrency))
        await session.probe_durations(tracker.model)
        expected = tracker.planned()

        async def run_step(step: Step) -> RunOutcome:
            return await session.run_step(step, tracker)

        def kept(outcomes: Outcomes, stops: Mapping[int, LevelStop]) -> None:
            if keep is None:
                return
            rows, partial = partial_levels(options.concurrency, ["sweep"], outcomes,
                                           whole_test(options, ["sweep"], outcomes, stops))  # fmt: skip
            keep({"kind": "sweep", "url": url, "options": options.public_dict(), "server": server_summary(info),
                  "environment": environment(info, context, simulated=simulated), "started_at": started,
                  "levels": [r["cells"]["sweep"] for r in rows], "partial": partial,
                  "duration_s": time.time() - started})  # fmt: skip

        outcomes, stops = await measure(
            options.concurrency, ["sweep"], options.stop, steps, tracker, run_step, started, kept=kept
        )
    figures, noise = arm_estimates(outcomes)
    levels = [
        arm_result(c, "sweep", outcomes[("sweep", i)], figures[("sweep", i)], noise)
        | {"stopping": stops[i].as_dict(options.stop)}
        for i, c in enumerate(options.concurrency)
    ]
    return {
        "kind": "sweep",
        "url": url,
        "options": options.public_dict(),
        "workload": session.workload.describe(),
        "server": server_summary(info),
        "environment": environment(info, context, simulated=simulated),
        "levels": levels,
        "stopping": stopping_record(options.stop, stops, options.concurrency),
        "expected_duration_s": expected,
        "drain": drain.as_dict(),
        "started_at": started,
        "duration_s": time.time() - started,
    }


def server_summary(info: ServerInfo) -> dict[str, Any]:
    """The few /server_info fields a result needs (never the whole object: it carries API keys)."""
    return info.summary()
