"""One operator's session with one agent: what every screen needs, and nothing of the App.

The App builds one ``Session`` and hands it to each screen as the screen is built (Dolphie's model:
panels get the tab, not the app). It holds the agent client, who the operator is, whether this
console may write, the model the stream fills, and the view settings the operator chose (chart
window, raw throughput, pause). The plan → confirm → apply flow lives here too, so an action started
from any screen is planned, confirmed and audited the same way; the confirm dialog is passed in (the
App's, which knows the screens), so this module needs no screen and no App.

Screens never reach the App for any of this: no cast, no attribute lookups by name.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal, Protocol

from rich.text import Text
from textual.screen import Screen

from agent.wire import ActionKind, ActionRequest, ActionResult, Plan
from console.link import Link, LinkError
from console.link.client import AgentClient
from console.model import ConsoleModel
from console.model.window import DEFAULT_WINDOW_S, next_window
from console.registry import VIEW_WORDS
from console.widgets.action_words import action_label, rejection_text, result_text

ConfirmPlan = Callable[[Plan, str | None, bool], Awaitable[bool]]
"""Shows the plan (with the profile that runs and whether it is production) and answers the confirm."""

Ask = Callable[[Screen[bool]], Awaitable[bool]]
"""Shows a yes/no dialog (a screen's own, such as a bench run's confirm) and answers it."""

Notify = Callable[[str, str], None]
"""``notify(message, title)``: an error toast the operator sees wherever they are."""


class View(Protocol):
    """The screen in view, as the painter sees it: it draws the model and says what it drew."""

    painted_version: int

    def paint(self, model: ConsoleModel, *, frozen: bool) -> None: ...

    def repaint(self) -> None:
        """Draw everything again now, charts included (a view setting or the theme changed)."""


@dataclass(frozen=True)
class Pending:
    """An action this screen confirmed that is still applying (a restart): followed until it ends."""

    request: ActionRequest
    action_id: str


@dataclass(frozen=True)
class FlowEnd:
    """How the flow ended: before the agent acted (rejected, nothing to do, cancelled, unreachable),
    or ``confirmed`` with the agent's result (applied, failed, or applying for a restart)."""

    outcome: Literal["rejected", "noop", "cancelled", "unreachable", "confirmed"]
    result: ActionResult | None = None
    action_id: str | None = None
    """The agent's id of the plan, once there was one."""


class Session:
    """The agent, the operator and the view settings; the one way a screen changes anything."""

    def __init__(
        self,
        link: Link,
        model: ConsoleModel,
        *,
        operator: str,
        readonly: bool,
        confirm_plan: ConfirmPlan,
        ask: Ask,
        notify_error: Notify,
        paint: Callable[[], None],
    ) -> None:
        self.link = link
        self.client = AgentClient(link)
        self.model = model
        self.operator = operator
        self.readonly = readonly or not link.writable
        self.window_s = DEFAULT_WINDOW_S
        """The charts' time window: the operator's choice, kept until changed (w)."""
        self.show_raw = False
        """Whether the last tick's raw tok/s (``Throughput.output_tok_s_raw``) is shown beside the
        smoothed rate (r)."""
        self.paused = False
        self.bench_mode = VIEW_WORDS["bench_mode"]
        """The Bench screen's mode as the operator set it: the palette's start says it."""
        self.host_name: str | None = None
        """The fleet's name for this host (the status line leads with it); None for a single host."""
        self.in_view: View | None = None
        """The live screen the operator sees, not covered by a dialog; None while one covers it."""
        self._paused_at_version = 0
        self._confirm_plan = confirm_plan
        self._ask = ask
        self._notify_error = notify_error
        self._paint = paint

    # -- view settings ------------------------------------------------------------------------
    @property
    def unseen(self) -> int:
        """Updates that arrived while paused (the status line counts them)."""
        return self.model.version - self._paused_at_version if self.paused else 0

    def toggle_pause(self) -> None:
        self.paused = not self.paused
        self._paused_at_version = self.model.version

    def cycle_window(self) -> None:
        self.window_s = next_window(self.window_s)

    def toggle_raw(self) -> None:
        self.show_raw = not self.show_raw

    def command_words(self) -> dict[str, str]:
        """What a command title names as this session is set (``console.registry.VIEW_WORDS``)."""
        return {"bench_mode": self.bench_mode}

    def paint_now(self) -> None:
        """Draw the screen in view now (it comes into view, or an action changed what it shows)."""
        self._paint()

    def showing(self, view: View) -> None:
        self.in_view = view

    def hidden(self, view: View) -> None:
        if self.in_view is view:  # a later screen may already be in view: switching posts both
            self.in_view = None

    async def ask(self, dialog: Screen[bool]) -> bool:
        """The operator's answer to a yes/no dialog (in a worker: it waits for the answer)."""
        return await self._ask(dialog)

    # -- the one way to change anything ---------------------------------------------------------
    async def plan_confirm_apply(
        self, kind: ActionKind, value: int | bool | str | None, say: Callable[[Text], object]
    ) -> FlowEnd:
        """Plan → (rejected or nothing to do: say why) → confirm → apply. Never changes anything
        without the operator's confirm."""
        client = self.client
        request = ActionRequest(request_id=uuid.uuid4().hex, kind=kind, value=value, operator=self.operator)
        try:
            plan = await client.plan(request)
        except LinkError as exc:
            say(Text(f"Could not ask the agent for a plan: {exc}", style="$bad"))
            return FlowEnd("unreachable")
        self.model.actions.label(plan.action_id, action_label(request))
        if plan.mode == "rejected":
            say(rejection_text(plan))
            self._notify_error(plan.reason, f"{action_label(request)}: rejected")
            return FlowEnd("rejected", action_id=plan.action_id)
        if plan.mode == "noop":
            say(Text(f"Nothing to do: {plan.reason}", style="$warn"))
            return FlowEnd("noop", action_id=plan.action_id)
        latest = self.model.latest
        running = latest.profile_name if latest is not None else None
        production = bool(latest and latest.production)
        if not await self._confirm_plan(plan, running, production):
            try:
                told = await client.cancel_plan(plan.action_id, self.operator)
                note = "" if told else " (this agent keeps the unconfirmed plan until it expires)"
            except LinkError as exc:
                note = f" (could not tell the agent: {exc}; the unconfirmed plan expires there)"
            say(Text(f"Cancelled; nothing was changed{note}.", style="$warn"))
            return FlowEnd("cancelled", action_id=plan.action_id)
        say(Text("Applying…", style="$warn"))
        try:
            result = await client.confirm(plan.action_id)
        except LinkError as exc:
            say(Text(f"The agent did not confirm the change: {exc}", style="$bad"))
            return FlowEnd("unreachable", action_id=plan.action_id)
        say(result_text(request, result))
        return FlowEnd("confirmed", result, plan.action_id)
