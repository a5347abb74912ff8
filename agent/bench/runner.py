"""The benchmark runs as the daemon drives them: start, progress events, cancel, stored results.

Kept free of FastAPI: the daemon's routes call :class:`BenchRuns` and turn :class:`BenchEvent` into
wire ``Event(kind="bench", name=..., message=..., data=...)`` on its stream.

    runs = BenchRuns(BenchStore(state_dir), publish=lambda e: ring.append_event("bench", e.name, e.message, e.data))
    bench_id = runs.start(engine_url, body, api_key=key, admin_api_key=admin_key)
                                                 # POST /v1/bench (BenchOptionError -> 422, BenchBusy -> 409)
    runs.list()                                                # GET /v1/bench -> {"runs": runs.list()}
    runs.get(bench_id)                                         # GET /v1/bench/{id} (UnknownBench -> 404)
    runs.cancel(bench_id)                                      # optional DELETE/POST cancel
    await runs.close()                                         # on shutdown: cancels, restores the threshold
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from agent.bench.compare import run_compare
from agent.bench.options import BenchOptionError, BenchOptions, options_from_mapping
from agent.bench.progress import BenchProgress
from agent.bench.store import BenchStore, new_bench_id
from agent.bench.sweep import BenchCancelled, run_sweep
from agent.wire.events import EventName

PROGRESS_EVENT_INTERVAL_S = 1.0


class BenchBusy(RuntimeError):
    """A benchmark is already running; two at once would measure each other."""


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
    def __init__(self, store: BenchStore, publish: Callable[[BenchEvent], None] | None = None) -> None:
        self.store = store
        self.publish = publish or (lambda _: None)
        self._tasks: dict[str, asyncio.Task[dict[str, Any]]] = {}
        self._cancels: dict[str, asyncio.Event] = {}
        store.mark_abandoned("the agent stopped while this benchmark was running")

    def running(self) -> str | None:
        return next((i for i, t in self._tasks.items() if not t.done()), None)

    def start(
        self,
        url: str,
        body: Mapping[str, Any],
        *,
        api_key: str | None = None,
        baseline_url: str | None = None,
        admin_api_key: str | None = None,
    ) -> str:
        """Validate, record and launch a run; returns its id at once (needs a running event loop)."""
        mode = body.get("mode", "compare")
        if mode not in ("sweep", "compare"):
            raise BenchOptionError("mode", f"{mode!r}: must be 'sweep' or 'compare'")
        options = options_from_mapping(body).with_api_key(api_key, admin_api_key)
        if baseline_url is None and body.get("baseline_url") is not None:
            baseline_url = body["baseline_url"]
            if not isinstance(baseline_url, str) or not baseline_url.startswith(("http://", "https://")):
                raise BenchOptionError(
                    "baseline_url", f"{baseline_url!r}: must be an http:// or https:// URL"
                )
        busy = self.running()
        if busy is not None:
            raise BenchBusy(f"benchmark {busy} is still running; wait for it or cancel it")
        bench_id = new_bench_id()
        record: dict[str, Any] = {
            "bench_id": bench_id,
            "mode": mode,
            "state": "running",
            "url": url,
            "baseline_url": baseline_url,
            "options": options.public_dict(),
            "created_at": time.time(),
            "finished_at": None,
            "error": None,
        }
        self.store.save(record)
        cancel = asyncio.Event()
        self._cancels[bench_id] = cancel
        self._tasks[bench_id] = asyncio.create_task(
            self._run(record, options, cancel, baseline_url), name=f"bench-{bench_id}"
        )
        self.publish(
            BenchEvent("bench.started", f"benchmark {bench_id} ({mode}) started", {"bench_id": bench_id})
        )
        return bench_id

    def cancel(self, bench_id: str) -> bool:
        event = self._cancels.get(bench_id)
        task = self._tasks.get(bench_id)
        if event is None or task is None or task.done():
            return False
        event.set()
        return True

    async def wait(self, bench_id: str) -> dict[str, Any]:
        task = self._tasks.get(bench_id)
        if task is not None:
            await asyncio.wait({task})
        return self.store.get(bench_id)

    def list(self) -> list[dict[str, Any]]:
        return self.store.list()

    def get(self, bench_id: str) -> dict[str, Any]:
        return self.store.get(bench_id)

    async def close(self) -> None:
        for bench_id in list(self._tasks):
            self.cancel(bench_id)
        pending = [t for t in self._tasks.values() if not t.done()]
        if pending:
            await asyncio.wait(pending)

    async def _run(
        self, record: dict[str, Any], options: BenchOptions, cancel: asyncio.Event, baseline_url: str | None
    ) -> dict[str, Any]:
        bench_id = record["bench_id"]
        last_sent = 0.0
        last_key: tuple[str, int] | None = None

        def on_progress(progress: BenchProgress) -> None:
            nonlocal last_sent, last_key
            now = time.monotonic()
            key = (progress.arm, progress.concurrency)
            if key == last_key and now - last_sent < PROGRESS_EVENT_INTERVAL_S:
                return
            last_sent, last_key = now, key
            self.publish(
                BenchEvent(
                    "bench.progress",
                    f"benchmark {bench_id}: {progress.arm} c={progress.concurrency} "
                    f"{progress.completed}/{progress.requests} ({progress.fraction:.0%})",
                    {"bench_id": bench_id, **progress.as_dict()},
                )
            )

        try:
            if record["mode"] == "sweep":
                result = await run_sweep(record["url"], options, on_progress, cancel)
            else:
                result = await run_compare(record["url"], options, on_progress, cancel, baseline_url)
        except BenchCancelled as exc:
            return self._finish(record, "cancelled", failure_reason(exc))
        except asyncio.CancelledError:
            self._finish(record, "cancelled", "the agent stopped the benchmark")
            raise
        except Exception as exc:
            return self._finish(record, "failed", failure_reason(exc))
        return self._finish(record, "finished", None, result)

    def _finish(
        self, record: dict[str, Any], state: str, error: str | None, result: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        final = {**(result or {}), **record, "state": state, "error": error, "finished_at": time.time()}
        if result is not None:
            final["recommended_threshold"] = result.get("recommended_threshold")
        with contextlib.suppress(OSError):
            self.store.save(final)
        names: dict[str, EventName] = {
            "finished": "bench.finished",
            "failed": "bench.failed",
            "cancelled": "bench.cancelled",
        }
        name = names[state]
        message = f"benchmark {record['bench_id']} {state}" + (f": {error}" if error else "")
        self.publish(
            BenchEvent(
                name,
                message,
                {
                    "bench_id": record["bench_id"],
                    "state": state,
                    "error": error,
                    "recommended_threshold": final.get("recommended_threshold"),
                },
            )
        )
        return final
