"""Benchmarks over the API: the bench helper's runner, wired to the stream and the engine's drain.

A drain (before a stop or restart) cancels the running benchmark first: the agent cannot stop
admission at SGLang's door, but it can stop its own traffic.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from fastapi import APIRouter, HTTPException, Request
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agent.bench.engine import EngineError, EngineProbe
from agent.bench.estimate import estimate, request_time
from agent.bench.evidence import newest_evidence
from agent.bench.options import BenchOptionError
from agent.bench.provenance import RunContext, agent_context
from agent.bench.runner import BenchBusy, BenchEvent, BenchRuns, compare_refusal, production_refusal
from agent.bench.store import BenchStore, UnknownBench, UnreadableBench
from agent.control.audit import AuditUnavailable
from agent.serve.operations import source_of
from agent.sglang.info_view import ServerInfo
from agent.wire.actions import NAME_MAX
from agent.wire.api import BenchAnnounce, BenchCancelled, BenchList, BenchPlan, BenchStarted
from agent.wire.bench_evidence import BenchEvidence
from agent.wire.bench_result import BenchResult
from agent.wire.plans import PRINTABLE

if TYPE_CHECKING:
    from pathlib import Path

    import httpx

    from agent.control.actions import ActionBook
    from agent.engine.supervisor import Supervisor
    from agent.profile.schema import Profile
    from agent.serve.operations import Operations
    from agent.serve.paths import StatePaths
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


class CancelBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    operator: str | None = Field(
        None, max_length=NAME_MAX, pattern=PRINTABLE, description="SSH user as the console passes it"
    )


MAX_FIELD_TEXT = 2048
"""The longest text any field of a benchmark body holds (a URL); a longer one is refused, unquoted."""


def bounded(body: dict[str, Any]) -> None:
    """Refuse (422) a field name or text too long for any field, naming it without quoting what was sent."""
    for key, value in body.items():
        if len(key) > NAME_MAX:
            raise HTTPException(
                422, f"a field name of {len(key)} characters: no field's name is over {NAME_MAX}"
            )
        if isinstance(value, str) and len(value) > MAX_FIELD_TEXT:
            raise HTTPException(422, f"{key}: text of {len(value)} characters; at most {MAX_FIELD_TEXT}")


def split_operator(body: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    """The body without ``operator`` (who asks, for the audit; no option of the run), and the operator;
    a 422 names the field when it is no printable name of at most ``NAME_MAX`` characters."""
    rest = {k: v for k, v in body.items() if k != "operator"}
    try:
        return rest, _Asker.model_validate({"operator": body.get("operator")}).operator
    except ValidationError:
        raise HTTPException(
            422, f"operator: who asks, for the audit: printable text of at most {NAME_MAX} characters"
        ) from None


class _Asker(BaseModel):
    operator: str | None = Field(None, max_length=NAME_MAX, pattern=PRINTABLE)


def _levels(body: dict[str, Any]) -> list[int] | None:
    levels = body.get("concurrency")
    ok = isinstance(levels, list) and 0 < len(levels) <= 64 and all(type(n) is int for n in levels)
    return list(levels) if ok and isinstance(levels, list) else None


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

    def cancel(
        self, bench_id: str, operator: str | None, source: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """Stop a run at once (its requests in flight are cut; the live threshold is put back by the
        run itself). Audited as an operator's decision, like a cancelled plan."""
        try:
            record = self.runs.get(bench_id)
        except UnknownBench:
            raise HTTPException(404, f"no benchmark {bench_id!r}") from None
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

    def plan(self, body: dict[str, Any]) -> dict[str, Any]:
        """What a start with ``body`` would run, and for how long (nothing is started)."""
        mode, options, baseline_url = self.runs.check(body)
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

    def announce(self, body: BenchAnnounce, source: dict[str, Any] | None = None) -> None:
        """A run driven from ``agent bench`` straight at this agent's engine starts or ends: said on the
        stream, and audited (its start and its end, with who runs it), as a run of the agent's is."""
        detail = {"bench_id": body.bench_id, "mode": body.mode, "external": True}
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

    async def start(self, body: dict[str, Any], http: Request) -> str:
        """Start a run after its intent is audited; a refusal (the engine not ready, a bad field, a
        run going, a production name not repeated, a compare this server cannot measure) is one audit
        line too, with who asked and what: one record per start, applied or rejected."""
        daemon = self.daemon
        bounded(body)  # a body no client of ours sends: refused unquoted and unaudited (hostile input)
        body, operator = split_operator(body)
        identity = daemon.profile.identity
        detail = {"mode": body.get("mode", "compare"), "levels": _levels(body), "profile": identity.name}
        source = source_of(http)

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
            self.runs.check(body)  # a bad field is named before anything else is said
            refused = production_refusal(body, identity.name, identity.production)
            busy = self.runs.running()
            if refused is None and busy is not None:
                raise BenchBusy(f"benchmark {busy} is still running; wait for it or cancel it")
            if refused is None:
                refused = compare_refusal(body, await self._server_info(url))
            if refused is not None:
                raise refused
            op = daemon.ops.begin("bench_start", operator=operator, source=source, detail=detail)
            try:
                bench_id = self.runs.start(
                    url, body, api_key=key, profile=identity.name, context=self._context()
                )
            except Exception as exc:
                daemon.ops.end(op, "failed", f"not started: {exc}")
                raise
            self._started[bench_id] = (operator, detail["levels"])
            daemon.ops.end(op | {"bench_id": bench_id}, "applied", f"benchmark {bench_id} started")
        except BenchOptionError as exc:
            raise refuse(422, str(exc)) from None
        except BenchBusy as exc:
            raise refuse(409, str(exc)) from None
        except EngineError as exc:
            raise refuse(409, f"the engine did not answer before the benchmark: {exc}") from None
        except AuditUnavailable as exc:
            raise HTTPException(503, f"refused: {exc}; no benchmark was started") from None
        return bench_id

    def add_routes(self, api: APIRouter) -> None:
        runs = self.runs

        @api.post("/bench", status_code=202, response_model=BenchStarted)
        async def start_bench(body: dict[str, Any], http: Request) -> dict[str, Any]:
            return {"bench_id": await self.start(body, http)}

        @api.get("/bench", response_model=BenchList)
        async def list_bench() -> dict[str, Any]:
            return {"runs": [r.run_line() for r in runs.list()]}

        @api.get("/bench/{bench_id}", response_model=BenchResult, response_model_exclude_unset=True)
        async def get_bench(bench_id: str) -> BenchResult:
            try:
                return runs.get(bench_id)
            except UnknownBench:
                raise HTTPException(404, f"no benchmark {bench_id[:64]!r}") from None
            except (UnreadableBench, OSError) as exc:  # torn or damaged: said, as the list says it
                return unreadable(bench_id, exc)

        @api.post("/bench/plan", response_model=BenchPlan)
        async def plan_bench(body: dict[str, Any]) -> dict[str, Any]:
            bounded(body)
            body, _ = split_operator(body)
            try:
                return self.plan(body)
            except BenchOptionError as exc:
                raise HTTPException(422, str(exc)) from None

        @api.post("/bench/external", status_code=204)
        async def announce_bench(body: BenchAnnounce, http: Request) -> None:
            self.announce(body, source_of(http))

        @api.post("/bench/{bench_id}/cancel", response_model=BenchCancelled)
        async def cancel_bench(
            bench_id: str, http: Request, body: CancelBody | None = None
        ) -> dict[str, Any]:
            return self.cancel(bench_id, body.operator if body else None, source_of(http))
