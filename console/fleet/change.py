"""One change asked of several hosts: each host's agent plans it, one confirm applies them host by host.

Every host's request carries the same ``change_id`` (each host's audit keeps it on both lines), and
its own ``request_id``. Plans are asked of every host at once; applying goes one host after another,
in the order the operator saw, and stops at nothing: a host that refuses, fails or cannot be reached
is named with why, and the next host is applied. Nothing is retried: a host whose link dropped while
it applied is reported as such, and what it runs is what its own row shows once it is back.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, get_args

from agent.wire import ActionKind, ActionRequest, Plan
from agent.wire.actions import CATALOGUE
from console.link import LinkError
from console.link.client import AgentClient

FleetKind = Literal["threshold", "steps", "apply_profile"]
KIND_WORDS: dict[FleetKind, str] = {kind: CATALOGUE[kind].name for kind in get_args(FleetKind)}
"""The kinds a fleet change offers, in the action catalogue's words (``agent.wire.actions``)."""

Outcome = Literal["applied", "applying", "failed", "rejected", "noop", "unreachable", "lost", "cancelled"]


@dataclass(frozen=True)
class HostPlan:
    host: str
    plan: Plan | None
    error: str | None = None
    """Why there is no plan: the host could not be reached or refused the request."""

    @property
    def will_apply(self) -> bool:
        return self.plan is not None and self.plan.mode in ("live", "restart")


@dataclass(frozen=True)
class HostOutcome:
    host: str
    outcome: Outcome
    message: str


def parse_value(kind: FleetKind, text: str) -> int | str:
    """The operator's typed value as the action catalogue parses it ("release" is the step pin's),
    within what the kind takes at all; ValueError says what it takes. Each host's agent then says
    what that host allows (the steps it built)."""
    spec = CATALOGUE[kind]
    value = spec.parse(text)
    if value is None or isinstance(value, bool):
        raise ValueError(f"{spec.name} takes {spec.allowed}")
    if isinstance(value, int):
        outside = spec.out_of_bounds(value)
        if outside is not None:
            raise ValueError(outside)
    return value


class FleetChange:
    """One change: its id, what it asks, and the hosts it goes to, in order."""

    def __init__(self, kind: FleetKind, value: int | str, hosts: Sequence[str], operator: str) -> None:
        self.change_id = "chg-" + uuid.uuid4().hex[:16]
        self.kind: ActionKind = kind
        self.value = value
        self.hosts = list(hosts)
        self.operator = operator
        self.plans: list[HostPlan] = []
        self.outcomes: list[HostOutcome] = []

    def request(self) -> ActionRequest:
        return ActionRequest(
            request_id=uuid.uuid4().hex,
            kind=self.kind,
            value=self.value,
            operator=self.operator,
            change_id=self.change_id,
        )

    async def plan(self, clients: Mapping[str, AgentClient | None]) -> list[HostPlan]:
        """Every host's plan, asked at once; a host not connected or not answering has an error."""

        async def one(host: str) -> HostPlan:
            client = clients.get(host)
            if client is None:
                return HostPlan(host, None, "not connected: no plan asked")
            try:
                return HostPlan(host, await client.plan(self.request()))
            except LinkError as exc:
                return HostPlan(host, None, f"could not ask for a plan: {exc}")

        self.plans = list(await asyncio.gather(*(one(h) for h in self.hosts)))
        return self.plans

    async def cancel(self, clients: Mapping[str, AgentClient | None]) -> None:
        """The operator said no: every planned host is told, so each audit says cancelled."""
        for hp in self.plans:
            client = clients.get(hp.host)
            if client is None or hp.plan is None or hp.plan.mode not in ("live", "restart"):
                continue
            try:
                await client.cancel_plan(hp.plan.action_id, self.operator)
            except LinkError:
                continue  # the unconfirmed plan expires on that host
        self.outcomes = [
            HostOutcome(hp.host, "cancelled", "cancelled; nothing was changed") for hp in self.plans
        ]

    async def apply(
        self,
        clients: Callable[[str], AgentClient | None],
        progress: Callable[[str, int], None] = lambda host, index: None,
    ) -> list[HostOutcome]:
        """Host by host, in order; each host's outcome as its agent says it. Never retried.

        ``clients`` is asked at each host's turn (a link that dropped meanwhile gives None)."""
        self.outcomes = []
        for index, hp in enumerate(self.plans):
            progress(hp.host, index)
            self.outcomes.append(await self._apply_one(hp, clients(hp.host)))
        return self.outcomes

    async def _apply_one(self, hp: HostPlan, client: AgentClient | None) -> HostOutcome:
        plan = hp.plan
        if plan is None:
            return HostOutcome(hp.host, "unreachable", hp.error or "no plan")
        if plan.mode == "rejected":
            return HostOutcome(hp.host, "rejected", f"refused: {plan.reason}")
        if plan.mode == "noop":
            return HostOutcome(hp.host, "noop", f"nothing to do: {plan.reason}")
        if client is None:
            return HostOutcome(hp.host, "unreachable", "the link went down before its turn; not applied")
        try:
            result = await client.confirm(plan.action_id)
        except LinkError as exc:
            return HostOutcome(
                hp.host,
                "lost",
                f"the link dropped while it applied ({exc}); not retried: its row shows what it runs "
                "once it is back, its audit what came of it",
            )
        if result.status == "applied":
            return HostOutcome(hp.host, "applied", result.message or "applied")
        if result.status == "applying":
            return HostOutcome(hp.host, "applying", result.message or "restarting")
        return HostOutcome(hp.host, "failed", f"{result.status}: {result.message}")
