"""Typed calls to the agent's API over any :class:`Link`; the only place that knows the routes."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from pydantic import ValidationError

from agent.wire import ActionRequest, ActionResult, Event, Plan, Snapshot
from console.link.base import Link, LinkError, StreamItem


def _parse(model: Any, data: Any, what: str) -> Any:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise LinkError(
            f"the agent sent a {what} this console cannot read: {exc.errors()[0]['msg']}"
        ) from exc


class AgentClient:
    """The agent API as methods. Raises :class:`LinkError` for transport and HTTP errors alike."""

    def __init__(self, link: Link) -> None:
        self.link = link

    async def version(self) -> dict[str, Any]:
        result: dict[str, Any] = await self.link.request("GET", "/v1/version")
        return result

    async def status(self) -> dict[str, Any]:
        result: dict[str, Any] = await self.link.request("GET", "/v1/status")
        return result

    async def stream(self, since: int | None) -> AsyncIterator[Snapshot | Event]:
        item: StreamItem
        async for item in self.link.stream(since):
            if item.kind == "snapshot":
                yield _parse(Snapshot, item.data, "snapshot")
            else:
                yield _parse(Event, item.data, "event")

    async def plan(self, request: ActionRequest) -> Plan:
        data = await self.link.request("POST", "/v1/actions", body=request.model_dump(mode="json"))
        plan: Plan = _parse(Plan, data, "plan")
        return plan

    async def confirm(self, action_id: str) -> ActionResult:
        data = await self.link.request("POST", f"/v1/actions/{action_id}/confirm")
        result: ActionResult = _parse(ActionResult, data, "action result")
        return result

    async def action(self, action_id: str) -> ActionResult:
        data = await self.link.request("GET", f"/v1/actions/{action_id}")
        result: ActionResult = _parse(ActionResult, data, "action")
        return result

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

    async def kv_whatif(self, running: int, context: int, pool: int | None = None) -> dict[str, Any]:
        params: dict[str, str | int] = {"running": running, "context": context}
        if pool is not None:
            params["pool"] = pool
        result: dict[str, Any] = await self.link.request("GET", "/v1/kv/whatif", params=params)
        return result

    async def profiles(self) -> list[dict[str, Any]]:
        data = await self.link.request("GET", "/v1/profiles")
        return list(data.get("profiles", []))

    async def running_profile(self) -> dict[str, Any]:
        """The profile the engine runs now, live changes included (GET /v1/profile)."""
        result: dict[str, Any] = await self.link.request("GET", "/v1/profile")
        return result

    async def profile(self, name: str) -> dict[str, Any]:
        result: dict[str, Any] = await self.link.request("GET", f"/v1/profiles/{name}")
        return result

    async def profile_diff(self, name: str) -> dict[str, Any]:
        result: dict[str, Any] = await self.link.request("GET", f"/v1/profiles/{name}/diff")
        return result

    async def save_profile(self, name: str, toml_text: str) -> dict[str, Any]:
        result: dict[str, Any] = await self.link.request(
            "PUT", f"/v1/profiles/{name}", body={"toml": toml_text}
        )
        return result

    async def logs(self, tail: int, search: str | None = None) -> list[str]:
        params: dict[str, str | int] = {"tail": tail}
        if search:
            params["search"] = search
        data = await self.link.request("GET", "/v1/logs", params=params)
        return [str(line) for line in data.get("lines", [])]

    async def bench_start(self, body: dict[str, Any]) -> str:
        data = await self.link.request("POST", "/v1/bench", body=body)
        return str(data["bench_id"])

    async def bench_runs(self) -> list[dict[str, Any]]:
        data = await self.link.request("GET", "/v1/bench")
        return list(data.get("runs", []))

    async def bench_result(self, bench_id: str) -> dict[str, Any]:
        result: dict[str, Any] = await self.link.request("GET", f"/v1/bench/{bench_id}")
        return result
