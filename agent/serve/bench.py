"""Benchmarks over the API: the bench helper's runner, wired to the stream and the engine's drain.

A drain (before a stop or restart) cancels the running benchmark first: the agent cannot stop
admission at SGLang's door, but it can stop its own traffic.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, Protocol

from fastapi import HTTPException

from agent.bench.engine import EngineError, EngineProbe
from agent.bench.estimate import estimate, request_time
from agent.bench.evidence import newest_evidence
from agent.bench.provenance import RunContext, agent_context
from agent.bench.runner import (
    BenchBusy,
    BenchEvent,
    BenchRefused,
    BenchRuns,
    compare_refusal,
    production_refusal,
)
from agent.bench.store import BenchStore, UnknownBench, UnreadableBench
from agent.control.audit import AuditUnavailable
from agent.serve.bench_forcing import ForcingWatch, forcer_alive, forcings
from agent.sglang.info_view import ServerInfo
from agent.wire.api import BenchAnnounce
from agent.wire.bench_evidence import BenchEvidence
from agent.wire.bench_request import BenchRequest
from agent.wire.bench_result import BenchResult

if TYPE_CHECKING:
    from pathlib import Path

    import httpx

    from agent.control.actions import ActionBook
    from agent.engine.supervisor import Supervisor
    from agent.profile.schema import Profile
    from agent.serve.operations import Operations
    from agent.serve.paths import StatePaths
    from agent.serve.reconcile import LiveLedger
    from agent.serve.stream import StreamHub
    from agent.wire.events import EventKind


class _Launch(Protocol):
    @property
    def profile(self) -> Profile: ...
    @property
    def profile_path(self) -> Path | None: ...


class BenchHost(Protocol):
    """What the bench service uses of the daemon (``agent.serve.daemon.Daemon`` is one), named by shape
    so that the daemon can build the service without the two modules importing each other."""

    @property
    def paths(self) -> StatePaths: ...
    @property
    def supervisor(self) -> Supervisor: ...
    @property
    def actions(self) -> ActionBook: ...
    @property
    def ops(self) -> Operations: ...
    @property
    def live_ledger(self) -> LiveLedger: ...
    @property
    def hub(self) -> StreamHub: ...
    @property
    def http(self) -> httpx.AsyncClient: ...
    @property
    def config(self) -> _Launch: ...
    @property
    def profile(self) -> Profile: ...
    @property
    def launched_profile(self) -> Profile: ...
    def emit(self, kind: EventKind, name: str, message: str, data: dict[str, Any] | None = None) -> None: ...
    def engine_headers(self, admin: bool = True) -> dict[str, str]: ...


def unknown_words() -> str:
    """A 404's words for a benchmark id: what ids look like, never the id sent (any text of a path)."""
    return "no benchmark with that id here (ids look like 20261207-164500-a1b2c3; GET /v1/bench lists them)"


def unreadable(bench_id: str, exc: Exception) -> BenchResult:
    """A stored result that is torn or damaged, as the list shows it: failed, saying why."""
    return BenchResult(bench_id=bench_id, state="failed", error=f"unreadable result file: {exc}")


ANNOUNCED_MAX = 4
"""Announced runs of ``agent bench`` kept as on the engine (each announce is bounded, so is their number)."""
_ENDED = {"bench.finished": "finished", "bench.failed": "failed", "bench.cancelled": "cancelled"}
_ANNOUNCED = {"running": "bench.started", "finished": "bench.finished", "failed": "bench.failed",
              "cancelled": "bench.cancelled"}  # fmt: skip


class BenchService:
    def __init__(self, daemon: BenchHost) -> None:
        self.daemon = daemon
        self.runs = BenchRuns(BenchStore(daemon.paths.root), publish=self._publish)
        self._started: dict[str, tuple[str | None, list[int] | None]] = {}
        """Who started each run of this agent and at which levels: its end is audited under their name."""
        self._announced: dict[str, None] = {}
        """Runs of ``agent bench`` straight at this agent's engine, announced running and not yet ended,
        oldest first (at most ``ANNOUNCED_MAX``: one whose end never came is forgotten in time)."""
        daemon.supervisor.drain_hooks.append(self.cancel_running)
        self.forcing = ForcingWatch(daemon.live_ledger.forcings, lambda: daemon.supervisor.url, self._gone)
        """What ``agent bench compare`` runs at this engine force, watched (``agent.serve.bench_forcing``)."""
        for intent in forcings(daemon.live_ledger.pending.values() if daemon.live_ledger.pending else []):
            if forcer_alive(intent.get("action") or {}):  # a run that outlived the agent before this one
                self.forcing.watch({"action": intent["action"], "operator": intent.get("operator"),
                                    "source": intent.get("source")})  # fmt: skip
        self._evidence: tuple[Profile, int, BenchEvidence | None] | None = None
        """The newest finished bench on the engine, for the launched profile and the store's state
        (its directory's mtime: a result written there) it was found for."""

    def _publish(self, event: BenchEvent) -> None:
        self.daemon.emit("bench", event.name, event.message, event.data)
        ended = _ENDED.get(event.name)
        if ended is not None:
            self._evidence = None  # a finished run may be the newest evidence: look again
        if ended is not None:  # the run's end, audited under the name of whoever started it
            data = event.data
            bench_id = str(data.get("bench_id"))
            operator, levels = self._started.pop(bench_id, (None, None))
            self.daemon.ops.record(
                "bench_end", operator=operator, source={"via": "agent"}, status=ended,
                detail={"bench_id": bench_id, "mode": data.get("mode"), "levels": levels}, message=event.message,
            )  # fmt: skip

    def evidence(self) -> BenchEvidence | None:
        """The newest finished compare on this engine (``agent.bench.evidence``): read from the store
        again when a run ends, a result is written there, or another profile is launched, else kept."""
        launched = self.daemon.launched_profile
        try:
            stamp = self.runs.store.root.stat().st_mtime_ns
        except OSError:
            stamp = 0
        kept = self._evidence
        if kept is None or kept[0] is not launched or kept[1] != stamp:
            found = newest_evidence(self.runs.store.list(), launched, self.daemon.supervisor.kind)
            self._evidence = kept = (launched, stamp, found)
        return kept[2]

    def on_engine(self) -> str | None:
        """The benchmark whose requests are on the engine now (this agent's run, or one ``agent bench``
        announced): the health findings its load raises say that it caused them."""
        return self.runs.running() or next(iter(self._announced), None)

    async def cancel_running(self) -> None:
        running = self.runs.running()
        if running is not None:
            self.runs.cancel(running)
            await self.runs.wait(running)

    def _gone(self, bench_id: str) -> None:
        """An announced run whose process ended without its end announce (killed): audited as failed."""
        if bench_id in self._announced:
            self._announced.pop(bench_id, None)
            self.daemon.ops.record("bench_end", operator=None, source={"via": "agent"}, status="failed",
                                   detail={"bench_id": bench_id, "external": True},
                                   message=f"benchmark {bench_id}: its agent bench process ended without a word")  # fmt: skip

    def cancel(
        self, bench_id: str, operator: str | None, source: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """Stop a run at once (its requests in flight are cut; the live threshold is put back by the
        run itself). Audited as an operator's decision, like a cancelled plan."""
        try:
            record = self.runs.get(bench_id)
        except UnknownBench:
            raise HTTPException(404, unknown_words()) from None
        except (UnreadableBench, OSError) as exc:  # torn, or not a file: no run of this agent's
            record = unreadable(bench_id, exc)
        if record.state != "running":
            cancelled = False
        else:
            try:  # write-ahead, like any change
                op = self.daemon.ops.begin("bench_cancel", operator=operator, source=source,
                                           detail={"bench_id": bench_id, "mode": record.mode})  # fmt: skip
            except AuditUnavailable as exc:
                raise HTTPException(503, f"refused: {exc}; the benchmark runs on") from None
            cancelled = self.runs.cancel(bench_id)
        state = "cancelled" if cancelled else record.state
        message = (
            f"benchmark {bench_id} is being cancelled; its requests in flight are cut"
            if cancelled
            else f"benchmark {bench_id} is not running (it is {state}); nothing to cancel"
        )
        if record.state == "running":
            self.daemon.ops.end(op, "applied" if cancelled else "noop", message)
        return {"cancelled": cancelled, "state": state, "message": message}

    def plan(self, request: BenchRequest) -> dict[str, Any]:
        """What a start with ``request`` would run, and for how long (nothing is started)."""
        mode, options, baseline_url = request.mode, request.options, request.baseline_url
        snap = self.daemon.hub.latest
        busy = None
        request_s = None
        running = 1
        if snap is not None:
            load, lat = snap.load, snap.latency
            if load.running is not None:
                busy = load.running + (load.queued or 0)
                running = load.running
            request_s = request_time(lat.ttft_p50_s, lat.itl_p50_s, options.output_len)
        earlier = []
        earlier = [r for r in self.runs.list()[:50] if r.state == "finished" and r.mode == mode]
        est = estimate(
            mode,
            options,
            baseline=baseline_url is not None,
            earlier=earlier,
            request_s=request_s,
            request_at=running,
            busy_now=busy,
        )
        return {**est.as_dict(), "busy_now": busy}

    async def announce(self, body: BenchAnnounce, source: dict[str, Any] | None = None) -> None:
        """A run driven from ``agent bench`` straight at this agent's engine starts or ends: said on the
        stream, and audited (its start and its end, with who runs it), as a run of the agent's is. A
        compare's start writes ahead what it will force; its end (or its process gone) puts it back."""
        detail = {"bench_id": body.bench_id, "mode": body.mode, "external": True}
        if body.state == "running" and body.mode == "compare":
            try:
                await self.forcing.announced(
                    body.bench_id, operator=body.operator, source=source, pid=body.pid
                )
            except AuditUnavailable as exc:
                raise HTTPException(
                    503, f"refused: {exc}; what this compare would force cannot be written ahead"
                ) from None
        elif body.state != "running":
            await self.forcing.ended(body.bench_id, body.state)
        if body.state == "running":
            self._announced[body.bench_id] = None
            while len(self._announced) > ANNOUNCED_MAX:
                del self._announced[next(iter(self._announced))]
            self.daemon.ops.record("bench_start", operator=body.operator, source=source, detail=detail,
                                   message=f"benchmark {body.bench_id} started (agent bench straight at the engine)")  # fmt: skip
        else:
            self._announced.pop(body.bench_id, None)
            self.daemon.ops.record("bench_end", operator=body.operator, source=source, detail=detail,
                                   status=body.state, message=body.error or f"benchmark {body.bench_id} {body.state}")  # fmt: skip
        data = {"bench_id": body.bench_id, "mode": body.mode, "state": body.state, "url": body.url,
                "error": body.error, "external": True}  # fmt: skip
        words = "started" if body.state == "running" else body.state
        error = f": {body.error}" if body.error else ""
        self.daemon.emit(
            "bench", _ANNOUNCED[body.state],
            f"benchmark {body.bench_id} ({body.mode}, agent bench straight at the engine) {words}{error}", data,
        )  # fmt: skip

    async def close(self) -> None:
        await self.runs.close()
        await self.forcing.close()

    async def _server_info(self, url: str) -> ServerInfo:
        probe = EngineProbe(self.daemon.http, url, self.daemon.engine_headers(admin=False))
        return await probe.server_info()

    def _context(self) -> RunContext:
        """Where the benchmark runs: this agent's GPUs, the launched profile, the stack."""
        daemon = self.daemon
        snap = daemon.hub.latest
        launched = daemon.launched_profile
        same_file = launched.identity.name == daemon.config.profile.identity.name
        return agent_context(
            launched,
            daemon.config.profile_path if same_file else None,
            None if snap is None else snap.gpus,
            daemon.supervisor.kind,
        )

    async def start(self, request: BenchRequest, source: dict[str, Any] | None = None) -> str:
        """Start a run after its intent is audited; a refusal (the engine not ready, a run going, a
        production name not repeated, a compare this server cannot measure) is one audit line too,
        with who asked and what: one record per start, applied or rejected. The body's fields were
        checked by its model (``BenchRequest``) before it got here: a bad one never reaches the audit."""
        daemon = self.daemon
        operator = request.operator
        identity = daemon.profile.identity
        levels = list(request.concurrency)
        detail = {"mode": request.mode, "levels": levels, "profile": identity.name}

        def refuse(status: int, why: str) -> HTTPException:
            daemon.ops.record("bench_start", operator=operator, source=source, detail=detail,
                              status="rejected", message=why)  # fmt: skip
            return HTTPException(status, why)

        url = daemon.supervisor.url
        if url is None or daemon.supervisor.state != "ready":
            raise refuse(409, f"the engine is not ready (state {daemon.supervisor.state})")
        if daemon.actions.audit.using_reserve:
            raise HTTPException(
                503, "refused: the state disk is full (the audit writes into its reserve, which is kept for "
                "the engine's changes); no benchmark was started",
            )  # fmt: skip
        key = daemon.engine_headers(admin=True).get("Authorization", "").removeprefix("Bearer ") or None
        try:
            refused = production_refusal(request, identity.name, identity.production)
            busy = self.runs.running()
            if refused is None and busy is not None:
                raise BenchBusy(f"benchmark {busy} is still running; wait for it or cancel it")
            if refused is None:
                refused = compare_refusal(request, await self._server_info(url))
            if refused is not None:
                raise refused
            op = daemon.ops.begin("bench_start", operator=operator, source=source, detail=detail)
            guard = functools.partial(daemon.live_ledger.forcings.guard, operator=operator, source=source)
            try:
                bench_id = self.runs.start(
                    url, request, api_key=key, profile=identity.name, context=self._context(), guard_for=guard
                )
            except Exception as exc:
                daemon.ops.end(op, "failed", f"not started: {exc}")
                raise
            self._started[bench_id] = (operator, levels)
            daemon.ops.end(op | {"bench_id": bench_id}, "applied", f"benchmark {bench_id} started")
        except BenchRefused as exc:
            raise refuse(422, str(exc)) from None
        except BenchBusy as exc:
            raise refuse(409, str(exc)) from None
        except EngineError as exc:
            raise refuse(409, f"the engine did not answer before the benchmark: {exc}") from None
        except AuditUnavailable as exc:
            raise HTTPException(503, f"refused: {exc}; no benchmark was started") from None
        return bench_id
