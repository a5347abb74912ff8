"""The action book: plans by id, idempotent requests, confirm-once, write-ahead audit, apply, events.

A console may resend a request after a timeout, or send a confirm twice; both must be harmless. A
request id maps to exactly one plan (resending it returns that plan), and an action moves out of
"planned" exactly once, under a lock, so a second confirm returns the first one's result. A plan is
made against the profile that runs (live values included) and the one its server was launched with;
if the running one changes before the confirm, the plan expires rather than apply a change computed
against something else.

Write-ahead: a confirmed change writes its intent to the audit (fsynced) before the engine is
touched, and its outcome after; an intent that cannot be written refuses the action, and nothing
changes. Request ids already in the audit (from before an agent restart) are refused too, so a
console resending an old request after the agent came back never applies it a second time.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

import httpx

from agent.control.action_events import EVENT_OF, MODE_WORDS, action_words, event_data
from agent.control.audit import AuditLog, AuditUnavailable
from agent.control.faults import fault_point
from agent.control.live import apply_live
from agent.control.planner import Draft, plan_request
from agent.control.undo import last_applied
from agent.profile import Profile
from agent.sglang.live_control import LIVE_STEPS_KEY, READBACK_OF
from agent.wire import ActionRequest, ActionResult, ActionStatus, Plan
from agent.wire.snapshot import EngineState

PLAN_TTL_S = 15 * 60
"""A plan left unconfirmed this long is stale: the operator saw it too long ago."""

MAX_ACTIONS = 1000

AUDITED: frozenset[ActionStatus] = frozenset({"applied", "failed", "cancelled"})
"""What the operator decided and what came of it; a plan nobody confirmed yet is not an audit line. A
request refused at its plan is audited where it is refused (``ActionBook._audit_refusal``)."""


class EngineControl(Protocol):
    """What the action book needs from the supervisor (kept narrow so it can be reasoned about)."""

    @property
    def profile(self) -> Profile | None: ...
    @property
    def launched(self) -> Profile | None: ...
    @property
    def url(self) -> str | None: ...
    @property
    def state(self) -> EngineState: ...
    @property
    def last_startup_s(self) -> float | None: ...
    @property
    def kind(self) -> str: ...
    def update_running_profile(self, profile: Profile) -> None: ...
    async def restart(
        self, profile: Profile | None, *, drain_timeout_s: float, launch: Profile | None = None
    ) -> None: ...
    async def wait_for_state(self, states: set[str], timeout_s: float | None = None) -> bool: ...


class RequestConflict(Exception):
    """The request id was used before for a different request, or by another operator."""


def _who(operator: str | None) -> str:
    return f"operator {operator}" if operator else "an unnamed operator"


@dataclass
class _Entry:
    result: ActionResult
    draft: Draft
    base: Profile | None
    created: float
    lock: asyncio.Lock
    source: dict[str, Any] | None = None
    intent_written: bool = False


DEFAULT_STARTUP_S = {"sim": 5.0, "sglang": 600.0}
"""Expected start-up when none was measured yet: the simulator starts in seconds, Kimi K2.5 in minutes."""


class ActionBook:
    def __init__(
        self,
        *,
        engine: EngineControl,
        load_named: Callable[[str], Profile],
        http: httpx.AsyncClient,
        engine_headers: Callable[[], dict[str, str]],
        audit: AuditLog,
        emit: Callable[[str, str, dict[str, Any]], None],
        on_profile_applied: Callable[
            [Profile, int | None], Awaitable[str | None] | None
        ] = lambda p, pinned: None,
        drain_timeout_s: float = 60.0,
        live_pinned: Callable[[], int | None] = lambda: None,
        audited: dict[str, str] | None = None,
    ) -> None:
        self.engine = engine
        self.live_pinned = live_pinned
        """The engine's live pinned step count from its latest read-back (-1 or None: its policy
        chooses): a profile cannot say whether its step count is pinned."""
        self.load_named = load_named
        self.http = http
        self.engine_headers = engine_headers
        self.audit = audit
        self.emit = emit
        self.on_profile_applied = on_profile_applied
        self.drain_timeout_s = drain_timeout_s
        self._by_request: dict[str, str] = {}
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        self._tasks: set[asyncio.Task[None]] = set()
        self._audited = audit.index().requests if audited is None else audited
        """Request ids the audit holds from before this start: never planned (so never applied) again."""

    # ---- planning -------------------------------------------------------------------------------

    def _expected_downtime(self) -> float:
        startup = self.engine.last_startup_s or DEFAULT_STARTUP_S.get(self.engine.kind, 600.0)
        return round(startup + 5.0, 1)

    def plan(self, request: ActionRequest, source: dict[str, Any] | None = None) -> Plan:
        known = self._by_request.get(request.request_id)
        rid = request.request_id
        if known is None and rid in self._audited:
            raise RequestConflict(
                f"request_id {rid} is in the audit already (its last status: {self._audited[rid]}); "
                "nothing is applied twice: plan again with a new request id"
            )
        if known is not None:
            first = self._entries[known].result.plan
            if first.request.operator != request.operator:
                # One request id, one asker: the plan is not handed to another (nor its confirm).
                why = (
                    f"request_id {rid} was asked by {_who(first.request.operator)}, not by "
                    f"{_who(request.operator)}: plan again with a new request id"
                )
                self._audit_conflict(request, source, why)
                raise RequestConflict(why)
            if first.request.model_dump() != request.model_dump():
                raise RequestConflict(f"request_id {rid} was already used for another request")
            return first
        running = self.engine.profile
        if running is None:
            draft = Draft(mode="rejected", reason="no profile is running yet", rejected_field="engine")
            running_base: Profile | None = None
        else:
            draft = plan_request(
                request,
                running,
                self.load_named,
                self.engine.launched,
                self.live_pinned(),
                lambda: last_applied(self.audit),
            )
            running_base = running
        action_id = "act-" + secrets.token_hex(8)
        plan = Plan(
            action_id=action_id,
            request=request,
            mode=draft.mode,
            reason=draft.reason,
            changes=draft.changes,
            expected_downtime_s=self._expected_downtime() if draft.mode == "restart" else None,
            drain_timeout_s=self.drain_timeout_s if draft.mode == "restart" else None,
            rejected_field=draft.rejected_field,
        )
        status: ActionStatus = "rejected" if draft.mode == "rejected" else "planned"
        message = draft.reason
        if status == "rejected" and not self._audit_refusal(plan, source, draft):
            message = f"{message} (its audit line waits for space on the state disk)"
        result = ActionResult(action_id=action_id, status=status, plan=plan, message=message)
        self._entries[action_id] = _Entry(result, draft, running_base, time.time(), asyncio.Lock(), source)
        self._by_request[request.request_id] = action_id
        self._evict()
        what = action_words(request)
        self.emit(
            EVENT_OF[status],
            f"{what}: rejected: {draft.reason}"
            if status == "rejected"
            else f"{what}: planned ({MODE_WORDS[draft.mode]}); waiting for the operator to confirm",
            event_data(plan, status, draft.reason),
        )
        fault_point("plan")
        return plan

    def _audit_refusal(self, plan: Plan, source: dict[str, Any] | None, draft: Draft | None = None) -> bool:
        """A refused request is a change someone asked for: one audit line, with who asked, from where,
        the value asked (the action's ``value``) and why it was refused. Nothing was applied, so there
        is no intent to write first; a full disk delays the line, never the answer. False: delayed."""
        return self.audit.append_or_later(
            f"the refusal of {plan.action_id}",
            operator=plan.request.operator,
            action=self._audit_action(plan, draft),
            before=None,
            after=None,
            result={"status": "rejected", "message": plan.reason},
            source=source,
        )

    def _audit_conflict(self, request: ActionRequest, source: dict[str, Any] | None, why: str) -> None:
        """A request refused for its id: one line with who asked (not the id's own key: the audit
        index's status of that request stays the first asker's)."""
        self.audit.append_or_later(
            f"the refusal of request {request.request_id}",
            operator=request.operator,
            action={"kind": request.kind, "conflicting_request_id": request.request_id},
            before=None,
            after=None,
            result={"status": "rejected", "message": why},
            source=source,
        )

    def _evict(self) -> None:
        while len(self._entries) > MAX_ACTIONS:
            _, entry = self._entries.popitem(last=False)
            rid = entry.result.plan.request.request_id
            self._by_request.pop(rid, None)
            self._audited[rid] = entry.result.status  # forgotten here, still never applied twice

    def get(self, action_id: str) -> ActionResult | None:
        entry = self._entries.get(action_id)
        return entry.result if entry else None

    # ---- applying -------------------------------------------------------------------------------

    async def confirm(self, action_id: str, source: dict[str, Any] | None = None) -> ActionResult | None:
        entry = self._entries.get(action_id)
        if entry is None:
            return None
        if source is not None:
            entry.source = source
        async with entry.lock:
            if entry.result.status != "planned":
                return entry.result  # already applied, applying, rejected, failed or expired: never twice
            if time.time() - entry.created > PLAN_TTL_S or self.engine.profile != entry.base:
                return self._finish(
                    entry, "expired", "the running profile changed or the plan is too old; plan again"
                )
            draft = entry.draft
            if draft.mode == "noop":
                return self._finish(entry, "applied", "nothing to change")
            refused = self._write_intent(entry)
            if refused is not None:
                return refused
            if draft.mode == "live":
                return await self._apply_live(entry)
            return self._start_restart(entry)

    def _audit_action(self, plan: Plan, draft: Draft | None = None) -> dict[str, Any]:
        action: dict[str, Any] = {
            "action_id": plan.action_id,
            "request_id": plan.request.request_id,
            "kind": plan.request.kind,
            "value": plan.request.value,
            "mode": plan.mode,
        }
        if plan.request.change_id is not None:  # a fleet change: the id every host's line shares
            action["change_id"] = plan.request.change_id
        if draft is not None and draft.undoes is not None:  # an undo: the change it reverses
            action["undoes"] = draft.undoes
        return action

    def _write_intent(self, entry: _Entry) -> ActionResult | None:
        """The intent, durable before anything is applied; the refusal when it cannot be written."""
        plan = entry.result.plan
        args = entry.draft.live_args
        try:
            self.audit.append(
                operator=plan.request.operator,
                action=self._audit_action(plan, entry.draft),
                before={c.key: c.old for c in plan.changes},
                after={c.key: c.new for c in plan.changes},
                result={"status": "intent", "message": f"about to apply ({MODE_WORDS[plan.mode]})"},
                phase="intent",
                source=entry.source,
                live={READBACK_OF[k]: v for k, v in args.items()} if plan.mode == "live" and args else None,
            )
        except AuditUnavailable as exc:
            return self._finish(
                entry, "failed", f"refused: {exc}; nothing was changed on the engine", audit=False
            )
        entry.intent_written = True
        fault_point("intent")
        return None

    def _finish(
        self,
        entry: _Entry,
        status: ActionStatus,
        message: str,
        *,
        audit: bool = True,
        operator: str | None = None,
        live: dict[str, Any] | None = None,
    ) -> ActionResult:
        plan = entry.result.plan
        entry.result = ActionResult(
            action_id=plan.action_id,
            status=status,
            plan=plan,
            message=message,
            applied_at=time.time() if status == "applied" else None,
        )
        if audit and status in AUDITED:
            written = self.audit.append_or_later(
                f"the outcome of {plan.action_id}",
                operator=operator or plan.request.operator,
                action=self._audit_action(plan, entry.draft),
                before={c.key: c.old for c in plan.changes},
                after={c.key: c.new for c in plan.changes},
                result={"status": status, "message": message},
                phase="outcome" if entry.intent_written else "record",
                source=entry.source,
                live=live,
            )
            if written:
                fault_point("outcome")
            else:  # its intent is durable; the outcome is written once the disk has room
                message = f"{message} (its audit line waits for space on the state disk)"
                entry.result = entry.result.model_copy(update={"message": message})
        self.emit(
            EVENT_OF[status],
            f"{action_words(plan.request)}: {status}. {message}",
            event_data(plan, status, message),
        )
        return entry.result

    async def cancel(
        self, action_id: str, operator: str | None = None, source: dict[str, Any] | None = None
    ) -> ActionResult | None:
        """The operator said no to a plan: it ends as "cancelled", audited as such, and never applies.

        Only a plan still waiting for its confirm can be cancelled; an action already applying (a
        restart under way), applied or otherwise over is returned as it is.
        """
        entry = self._entries.get(action_id)
        if entry is None:
            return None
        async with entry.lock:
            if entry.result.status != "planned":
                return entry.result
            entry.source = source or entry.source
            return self._finish(
                entry, "cancelled", "cancelled by the operator; nothing was changed", operator=operator
            )

    async def _apply_live(self, entry: _Entry) -> ActionResult:
        draft = entry.draft
        assert draft.new_profile is not None
        if draft.live_args:
            url = self.engine.url
            if url is None or self.engine.state != "ready":
                return self._finish(
                    entry, "failed", f"the engine is not ready (state {self.engine.state}); nothing changed"
                )
            outcome = await apply_live(self.http, url, draft.live_args, self.engine_headers())
            if not outcome.ok:
                return self._finish(entry, "failed", outcome.message)
            fault_point("apply")
            message, live = outcome.message, outcome.readback
        else:
            message, live = "applied by the agent; SGLang is not touched", None
        self.engine.update_running_profile(draft.new_profile)
        maybe = self.on_profile_applied(draft.new_profile, draft.live_args.get(LIVE_STEPS_KEY))
        if maybe is not None:
            said = await maybe
            if said:  # what the agent's own parts did about it (the autopilot restoring a threshold)
                message = said if not draft.live_args else f"{message}; {said}"
        return self._finish(entry, "applied", message, live=live)

    def _start_restart(self, entry: _Entry) -> ActionResult:
        plan = entry.result.plan
        entry.result = ActionResult(
            action_id=plan.action_id,
            status="applying",
            plan=plan,
            message="draining, then restarting the engine",
        )
        self.emit(
            EVENT_OF["applying"],
            f"{action_words(plan.request)}: applying: draining, then restarting the engine",
            event_data(plan, "applying", "draining, then restarting the engine"),
        )
        task = asyncio.create_task(self._restart(entry), name=f"restart-{plan.action_id}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return entry.result

    async def _restart(self, entry: _Entry) -> None:
        draft = entry.draft
        assert draft.new_profile is not None
        try:
            await self.engine.restart(
                draft.new_profile, drain_timeout_s=self.drain_timeout_s, launch=draft.launch
            )
            maybe = self.on_profile_applied(draft.new_profile, None)
            if maybe is not None:
                await maybe
            await self.engine.wait_for_state({"ready", "crash_loop", "stopped", "unknown"})
        except asyncio.CancelledError:
            # The agent is stopping: the action still ends, with an event, so no console waits on it.
            self._stopped_during_restart(entry)
            raise
        except Exception as exc:  # reported as the action's result, not lost in a task
            if entry.result.status == "applying":
                self._finish(entry, "failed", f"restart failed: {type(exc).__name__}: {exc}")
            return
        if entry.result.status != "applying":
            return  # ended already (the agent stopped while it ran)
        if self.engine.state == "ready":
            self._finish(entry, "applied", "the engine restarted with the new profile and is ready")
        else:
            self._finish(
                entry, "failed", f"the engine restarted but is {self.engine.state}; read the engine log"
            )

    def _stopped_during_restart(self, entry: _Entry) -> None:
        if entry.result.status == "applying":
            self._finish(
                entry,
                "failed",
                f"the agent stopped before the restart finished; the engine is {self.engine.state}",
            )

    async def close(self, timeout_s: float = 5.0) -> None:
        """Stop the restarts under way; each action ends (failed, with its event) before this returns."""
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=timeout_s)
        for entry in self._entries.values():
            self._stopped_during_restart(entry)
