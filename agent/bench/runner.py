"""The benchmark runs as the daemon drives them: start, progress events, cancel, stored results.

Kept free of FastAPI: the daemon's routes call :class:`BenchRuns` and turn :class:`BenchEvent` into
wire ``Event(kind="bench", name=..., message=..., data=...)`` on its stream.

    runs = BenchRuns(BenchStore(state_dir), publish=lambda e: ring.append_event("bench", e.name, e.message, e.data))
    bench_id = runs.start(engine_url, request, api_key=key, admin_api_key=admin_key)
                                                 # POST /v1/bench (a BenchRequest; BenchBusy -> 409)
    runs.list()                                                # GET /v1/bench -> {"runs": runs.list()}
    runs.get(bench_id)                                         # GET /v1/bench/{id} (UnknownBench -> 404)
    runs.cancel(bench_id)                                      # optional DELETE/POST cancel
    await runs.close()                                         # on shutdown: cancels, restores the threshold
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from agent.bench.compare import run_compare
from agent.bench.engine import live_unavailable_reason
from agent.bench.guard import LiveGuard
from agent.bench.open_loop import run_rates
from agent.bench.options import BenchOptionError, BenchOptions
from agent.bench.progress import BenchProgress
from agent.bench.provenance import RunContext
from agent.bench.store import BenchStore, new_bench_id
from agent.bench.sweep import BenchCancelled, run_sweep
from agent.bench.workload import resolve as resolve_workload
from agent.profile.words import given_words
from agent.sglang.info_view import ServerInfo
from agent.wire.bench_request import BenchRequest
from agent.wire.bench_result import BenchResult
from agent.wire.events import EventName

PROGRESS_EVENT_INTERVAL_S = 5.0
"""At most one bench.progress event this often (the first one at once): the stream is shared with
every console's event log, and a compare that sent one a second filled it with a few hundred lines.
The run's end is its own event (bench.finished / failed / cancelled), never coalesced away."""


BEFORE_WINDOWS = ("waiting", "probing")
"""Phases before the first window: the next phase is sent at once, not after the event interval."""


class BenchBusy(RuntimeError):
    """A benchmark is already running; two at once would measure each other."""


class BenchRefused(BenchOptionError):
    """The run could not give what it is asked for, or needs the operator's confirmation first; said
    before any request is sent."""


def production_refusal(request: BenchRequest, profile_name: str, production: bool) -> BenchRefused | None:
    """A production server gets load only when the request repeats its profile's name.

    The console asks the operator to type the name; a script must say it too. A benchmark sends up
    to the highest concurrency level at once to the server that serves real traffic.
    """
    if not production:
        return None
    given = request.confirm_production
    if given == profile_name:
        return None
    load = f"up to {max(request.concurrency)} concurrent requests"
    got = "" if given is None else f" (got {given_words(given)})"
    return BenchRefused(
        "confirm_production",
        f"{profile_name} is a production profile: a benchmark sends {load} to the server that serves its "
        f"traffic. Repeat the profile's name in confirm_production to start it{got}",
    )


def compare_refusal(request: BenchRequest, server_info: ServerInfo) -> BenchRefused | None:
    """A compare that cannot force speculation on and off would run every level for one arm and then
    recommend nothing; it is refused before it starts, with SGLang's reason."""
    if request.mode != "compare" or request.baseline_url is not None:
        return None
    reason = live_unavailable_reason(server_info)
    if reason is None:
        return None
    return BenchRefused(
        "mode",
        f"a compare needs the live speculation threshold to measure speculation on and off on one server, "
        f"and this server has none ({reason}). Run a sweep (mode sweep) to measure the server as it is "
        "configured, or give baseline_url (a second server launched without a drafter) to compare against it",
    )


@dataclass(frozen=True)
class BenchEvent:
    name: EventName
    """bench.started | bench.progress | bench.finished | bench.failed | bench.cancelled"""
    message: str
    data: dict[str, Any] = field(default_factory=dict)


def failure_reason(exc: BaseException) -> str:
    notes = getattr(exc, "__notes__", None) or []
    text = str(exc) or type(exc).__name__
    return "; ".join([text, *notes])


class BenchRuns:
    def __init__(
        self,
        store: BenchStore,
        publish: Callable[[BenchEvent], None] | None = None,
        *,
        progress_interval_s: float = PROGRESS_EVENT_INTERVAL_S,
    ) -> None:
        self.store = store
        self.publish = publish or (lambda _: None)
        self.progress_interval_s = progress_interval_s
        self._tasks: dict[str, asyncio.Task[BenchResult]] = {}
        self._cancels: dict[str, asyncio.Event] = {}
        store.mark_abandoned("the agent stopped while this benchmark was running")

    def running(self) -> str | None:
        return next((i for i, t in self._tasks.items() if not t.done()), None)

    def start(
        self,
        url: str,
        request: BenchRequest,
        *,
        api_key: str | None = None,
        admin_api_key: str | None = None,
        profile: str | None = None,
        context: RunContext | None = None,
        guard_for: Callable[[str], LiveGuard] | None = None,
    ) -> str:
        """Validate, record and launch a run; returns its id at once (needs a running event loop).

        ``profile`` names what the server ran, so a listed run says which deployment it measured;
        ``context`` is where it runs, recorded in the result (``provenance``); ``guard_for(bench_id)``:
        what writes a compare's forced settings ahead (``agent.bench.guard``)."""
        mode, baseline_url = request.mode, request.baseline_url
        options = request.options.with_api_key(api_key, admin_api_key)
        try:  # a dataset the agent ships, read and checked before anything starts
            options = options.model_copy(update={"workload": resolve_workload(options.workload, False)})
        except BenchOptionError as exc:
            raise BenchRefused(exc.field_name, str(exc).split(": ", 1)[1]) from None
        busy = self.running()
        if busy is not None:
            raise BenchBusy(f"benchmark {busy} is still running; wait for it or cancel it")
        bench_id = new_bench_id()
        record = BenchResult(
            bench_id=bench_id,
            mode=mode,
            state="running",
            url=url,
            baseline_url=baseline_url,
            options=options.public_dict(),
            profile=profile,
            created_at=time.time(),
            finished_at=None,
            error=None,
        )
        self.store.save(record)
        cancel = asyncio.Event()
        self._cancels[bench_id] = cancel
        self._tasks[bench_id] = asyncio.create_task(
            self._run(record, options, cancel, baseline_url, context, guard_for and guard_for(bench_id)),
            name=f"bench-{bench_id}",
        )
        self.publish(
            BenchEvent(
                "bench.started",
                f"benchmark {bench_id} ({mode}) started",
                record.run_line(),
            )
        )
        return bench_id

    def cancel(self, bench_id: str) -> bool:
        event = self._cancels.get(bench_id)
        task = self._tasks.get(bench_id)
        if event is None or task is None or task.done():
            return False
        event.set()
        return True

    async def wait(self, bench_id: str) -> BenchResult:
        task = self._tasks.get(bench_id)
        if task is not None:
            await asyncio.wait({task})
        return self.store.get(bench_id)

    def list(self) -> list[BenchResult]:
        return self.store.list()

    def get(self, bench_id: str) -> BenchResult:
        return self.store.get(bench_id)

    async def close(self) -> None:
        for bench_id in list(self._tasks):
            self.cancel(bench_id)
        pending = [t for t in self._tasks.values() if not t.done()]
        if pending:
            await asyncio.wait(pending)

    async def _run(
        self,
        record: BenchResult,
        options: BenchOptions,
        cancel: asyncio.Event,
        baseline_url: str | None,
        context: RunContext | None = None,
        guard: LiveGuard | None = None,
    ) -> BenchResult:
        bench_id = record.bench_id
        started = time.monotonic()
        last_sent: float | None = None
        last: tuple[BenchProgress, float] | None = None
        """The newest progress and when it came: the heartbeat moves its clock on."""

        def send(progress: BenchProgress, now: float) -> None:
            nonlocal last_sent
            last_sent = now
            elapsed = now - started
            eta = progress.eta_s
            left = f", about {eta:.0f} s left" if eta is not None else ""
            what = (
                progress.message
                if progress.phase in ("planned", "waiting", "probing")
                else f"{progress.arm} c={progress.concurrency} repeat {progress.repeat + 1}/{progress.repeats}"
            )
            self.publish(
                BenchEvent(
                    "bench.progress",
                    f"benchmark {bench_id}: {what} ({progress.fraction:.0%}{left})",
                    {
                        "bench_id": bench_id,
                        **progress.model_dump(),
                        "elapsed_s": round(elapsed, 1),
                        "eta_s": None if eta is None else round(eta, 1),
                    },
                )
            )

        def on_progress(progress: BenchProgress) -> None:
            nonlocal last
            now = time.monotonic()
            phase_changed = (
                last is not None and last[0].phase in BEFORE_WINDOWS and last[0].phase != progress.phase
            )
            last = (progress, now)
            if last_sent is not None and now - last_sent < self.progress_interval_s and not phase_changed:
                return
            send(progress, now)

        async def heartbeat() -> None:
            """A step can run for minutes without a completion (a long first request): the bar and the
            ETA still move, by the clock, at the event interval."""
            while True:
                await asyncio.sleep(self.progress_interval_s)
                now = time.monotonic()
                if last is None or (last_sent is not None and now - last_sent < self.progress_interval_s):
                    continue
                progress, at = last
                eta = None if progress.eta_s is None else max(0.0, progress.eta_s - (now - at))
                elapsed = now - started
                fraction = progress.fraction if eta is None else min(1.0, elapsed / max(elapsed + eta, 1e-9))
                send(
                    progress.model_copy(update={"eta_s": eta, "fraction": max(progress.fraction, fraction)}),
                    now,
                )

        kept: dict[str, Any] = {}

        def keep(partial: dict[str, Any]) -> None:
            """The windows so far, stored as the run goes: a kill -9 leaves them on disk."""
            kept.clear()
            kept.update(partial)
            with contextlib.suppress(OSError, ValidationError):
                self.store.save(BenchResult.model_validate({**partial, **record.stored()}))

        beat = asyncio.create_task(heartbeat(), name=f"bench-{bench_id}-heartbeat")
        try:
            url = str(record.url)
            if record.mode == "sweep" and options.request_rates:
                result = await run_rates(url, options, on_progress, cancel, context)
            elif record.mode == "sweep":
                result = await run_sweep(url, options, on_progress, cancel, context, keep)
            else:
                result = await run_compare(
                    url, options, on_progress, cancel, baseline_url, context, guard, keep
                )
        except BenchCancelled as exc:
            return self._finish(record, "cancelled", failure_reason(exc), partial=kept)
        except asyncio.CancelledError:
            self._finish(record, "cancelled", "the agent stopped the benchmark", partial=kept)
            raise
        except Exception as exc:
            return self._finish(record, "failed", failure_reason(exc), partial=kept)
        finally:
            beat.cancel()
        return self._finish(record, "finished", None, result)

    def _finish(
        self,
        record: BenchResult,
        state: str,
        error: str | None,
        result: dict[str, Any] | None = None,
        partial: dict[str, Any] | None = None,
    ) -> BenchResult:
        """The stored run: the benchmark's result (the open dict its builders made, checked here
        against ``BenchResult``) under the agent's own record of the run; a run cut short keeps the
        windows it completed (``partial``, ``agent.bench.partial``)."""
        final_data = {
            **(result or partial or {}),
            **record.stored(),
            "state": state,
            "error": error,
            "finished_at": time.time(),
        }
        if result is not None:
            final_data["recommended_threshold"] = result.get("recommended_threshold")
        try:
            final = BenchResult.model_validate(final_data)
        except ValidationError as exc:  # a builder's bug: the figures are kept, the run says why it failed
            first = exc.errors()[0]
            error = (
                f"the result does not fit BenchResult at {'.'.join(map(str, first['loc']))}: {first['msg']}"
            )
            kept = {**record.stored(), "state": "failed", "error": error, "finished_at": time.time()}
            final, state = BenchResult.model_validate({**kept, "unchecked_result": result}), "failed"
        with contextlib.suppress(OSError):
            self.store.save(final)
        names: dict[str, EventName] = {
            "finished": "bench.finished",
            "failed": "bench.failed",
            "cancelled": "bench.cancelled",
        }
        name = names[state]
        message = f"benchmark {record.bench_id} {state}" + (f": {error}" if error else "")
        if final.partial is not None:
            message += f" ({final.partial.words})"
        self.publish(
            BenchEvent(
                name,
                message,
                final.run_line(),  # the run's line in GET /v1/bench, as it is now
            )
        )
        return final
