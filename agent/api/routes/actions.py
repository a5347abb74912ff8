"""Operator actions: plan, then confirm or cancel, and read one back (rules live in control)."""

from __future__ import annotations

from fastapi import APIRouter, HTTPException, Request

from agent.api.routes.common import OPERATOR, Body, DaemonDep
from agent.control.actions import RequestConflict
from agent.serve.operations import source_of
from agent.wire import ActionRequest, ActionResult, Plan

router = APIRouter()


class ActionCancel(Body):
    operator: str | None = OPERATOR


@router.post("/actions")
async def plan_action(daemon: DaemonDep, request: ActionRequest, http: Request) -> Plan:
    try:
        return daemon.actions.plan(request, source_of(http))
    except RequestConflict as exc:
        raise HTTPException(409, str(exc)) from None


@router.post("/actions/{action_id}/confirm")
async def confirm_action(daemon: DaemonDep, action_id: str, http: Request) -> ActionResult:
    result = await daemon.actions.confirm(action_id, source_of(http))
    if result is None:
        raise HTTPException(404, f"no action {action_id[:64]!r}")
    return result


@router.post("/actions/{action_id}/cancel")
async def cancel_action(
    daemon: DaemonDep, action_id: str, http: Request, body: ActionCancel | None = None
) -> ActionResult:
    result = await daemon.actions.cancel(action_id, body.operator if body else None, source_of(http))
    if result is None:
        raise HTTPException(404, f"no action {action_id[:64]!r}")
    return result


@router.get("/actions/{action_id}")
async def get_action(daemon: DaemonDep, action_id: str) -> ActionResult:
    result = daemon.actions.get(action_id)
    if result is None:
        raise HTTPException(404, f"no action {action_id[:64]!r}")
    return result
