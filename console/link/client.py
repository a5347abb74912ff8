"""Typed calls to the agent's API over any :class:`Link`; the only place that knows the routes.

Every answer is read into its ``agent.wire`` model here (``agent/wire/api.py``), so a screen reads
attributes and an answer of the wrong shape is one clear error, not a ``KeyError`` on a screen.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from agent.wire import ActionRequest, ActionResult, Event, Plan, Snapshot, read_event
from agent.wire.api import (
    AgentStatus,
    BenchCancelled,
    BenchList,
    BenchPlan,
    BenchStarted,
    BenchSummary,
    KvWhatIf,
    LogLines,
    ProfileDiff,
    ProfileList,
    ProfileRead,
    ProfileSaved,
    RunningProfile,
    VersionInfo,
)
from agent.wire.audit import AuditPage
from agent.wire.bench_request import BenchRequest
from agent.wire.bench_result import BenchResult
from agent.wire.router import RouterView
from console.link.base import Link, LinkError, StreamItem

M = TypeVar("M", bound=BaseModel)


def _parse(model: type[M], data: Any, what: str) -> M:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"])
        raise LinkError(
            f"the agent sent a {what} this console cannot read"
            + (f" ({where}: {error['msg']})" if where else f": {error['msg']}")
        ) from exc


def _event(data: Any) -> Event:
    """An event of the stream, its payload typed by its name; a name this console does not know is
    kept as ``agent.unknown_event`` (``agent.wire.events.read_event``), a bad payload is one clear error."""
    try:
        return read_event(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"])
        raise LinkError(
            f"the agent sent an event this console cannot read ({where}: {error['msg']})"
        ) from exc


class AgentClient:
    """The agent API as methods. Raises :class:`LinkError` for transport and HTTP errors alike."""

    def __init__(self, link: Link) -> None:
        self.link = link

    async def version(self) -> VersionInfo:
        return _parse(VersionInfo, await self.link.request("GET", "/v1/version"), "version")

    async def status(self) -> AgentStatus:
        return _parse(AgentStatus, await self.link.request("GET", "/v1/status"), "status")

    async def stream(self, since: int | None) -> AsyncIterator[Snapshot | Event]:
        item: StreamItem
        async for item in self.link.stream(since):
            if item.kind == "snapshot":
                yield _parse(Snapshot, item.data, "snapshot")
            else:
                yield _event(item.data)

    async def plan(self, request: ActionRequest) -> Plan:
        data = await self.link.request("POST", "/v1/actions", body=request.model_dump(mode="json"))
        return _parse(Plan, data, "plan")

    async def confirm(self, action_id: str) -> ActionResult:
        data = await self.link.request("POST", f"/v1/actions/{action_id}/confirm")
        return _parse(ActionResult, data, "action result")

    async def action(self, action_id: str) -> ActionResult:
        data = await self.link.request("GET", f"/v1/actions/{action_id}")
        return _parse(ActionResult, data, "action")

    async def cancel_plan(self, action_id: str, operator: str | None = None) -> bool:
        """Tell the agent the operator cancelled a plan, so its audit says "cancelled". Returns False
        for an agent without the cancel route (the unconfirmed plan then simply expires there)."""
        try:
            await self.link.request("POST", f"/v1/actions/{action_id}/cancel", body={"operator": operator})
        except LinkError as exc:
            if exc.status in (404, 405):
                return False
            raise
        return True

    async def kv_whatif(self, running: int, context: int, pool: int | None = None) -> KvWhatIf:
        params: dict[str, str | int] = {"running": running, "context": context}
        if pool is not None:
            params["pool"] = pool
        data = await self.link.request("GET", "/v1/kv/whatif", params=params)
        return _parse(KvWhatIf, data, "KV what-if")

    async def profiles(self) -> ProfileList:
        return _parse(ProfileList, await self.link.request("GET", "/v1/profiles"), "profile list")

    async def running_profile(self) -> RunningProfile:
        """The profile the engine runs now, live changes included (GET /v1/profile)."""
        return _parse(RunningProfile, await self.link.request("GET", "/v1/profile"), "running profile")

    async def profile(self, name: str) -> ProfileRead:
        return _parse(ProfileRead, await self.link.request("GET", f"/v1/profiles/{name}"), "profile")

    async def profile_diff(self, name: str) -> ProfileDiff:
        data = await self.link.request("GET", f"/v1/profiles/{name}/diff")
        return _parse(ProfileDiff, data, "profile diff")

    async def save_profile(
        self,
        name: str,
        toml_text: str,
        *,
        replaces: str | None = None,
        confirm_production: str | None = None,
        operator: str | None = None,
    ) -> ProfileSaved:
        """Write a profile: over the version whose digest is ``replaces`` (If-Match; the agent answers
        412 when the file changed since), or, without it, as a new file only (If-None-Match: *)."""
        headers = {"If-Match": f'"{replaces}"'} if replaces else {"If-None-Match": "*"}
        body: dict[str, Any] = {"toml": toml_text}
        if operator is not None:  # who asks, for the audit (an older agent's body had no such field)
            body["operator"] = operator
        if confirm_production is not None:
            body["confirm_production"] = confirm_production
        data = await self.link.request("PUT", f"/v1/profiles/{name}", body=body, headers=headers)
        return _parse(ProfileSaved, data, "profile save answer")

    async def logs(self, tail: int, search: str | None = None) -> list[str]:
        params: dict[str, str | int] = {"tail": tail}
        if search:
            params["search"] = search
        data = await self.link.request("GET", "/v1/logs", params=params)
        return _parse(LogLines, data, "log tail").lines

    async def router(self) -> RouterView:
        """SGLang's router as this agent reads it (``agent serve --router-url``)."""
        return _parse(RouterView, await self.link.request("GET", "/v1/router"), "router view")

    async def audit(self, limit: int = 500) -> AuditPage:
        """The newest ``limit`` audit records (and the damaged lines the agent skipped)."""
        data = await self.link.request("GET", "/v1/audit", params={"limit": limit})
        return _parse(AuditPage, data, "audit log")

    # -- benchmarks -------------------------------------------------------------------------------
    # Every answer is a model: the Bench screen (console/model/bench_result.py) reads
    # ``agent.wire.bench_result.BenchResult`` and the run list's ``BenchSummary`` lines.

    async def bench_started(self, request: BenchRequest) -> BenchStarted:
        answer = await self.link.request("POST", "/v1/bench", body=request.body())
        return _parse(BenchStarted, answer, "bench start")

    async def bench_list(self) -> BenchList:
        return _parse(BenchList, await self.link.request("GET", "/v1/bench"), "bench run list")

    async def bench_result(self, bench_id: str) -> BenchResult:
        data = await self.link.request("GET", f"/v1/bench/{bench_id}")
        return _parse(BenchResult, data, "bench result")

    async def bench_plan(self, request: BenchRequest) -> BenchPlan:
        """What a start with ``request`` would run and how long it should take; nothing starts."""
        data = await self.link.request("POST", "/v1/bench/plan", body=request.body())
        return _parse(BenchPlan, data, "bench plan")

    async def bench_cancel(self, bench_id: str, operator: str | None) -> BenchCancelled:
        data = await self.link.request("POST", f"/v1/bench/{bench_id}/cancel", body={"operator": operator})
        return _parse(BenchCancelled, data, "bench cancel answer")

    async def bench_start(self, request: BenchRequest) -> str:
        return (await self.bench_started(request)).bench_id

    async def bench_runs(self) -> list[BenchSummary]:
        return (await self.bench_list()).runs
