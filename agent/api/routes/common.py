"""What the routers share: the daemon as a FastAPI dependency, strict request bodies, and the few
steps that turn a daemon's refusal into HTTP (the write-ahead intent, a profile write's guards)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Annotated, Any, TypeVar

from fastapi import Depends, HTTPException, Request
from fastapi import Path as PathParam
from pydantic import BaseModel, ConfigDict, Field

from agent.control.audit import AuditUnavailable
from agent.control.library import UnknownProfile, issue_dict
from agent.control.writes import PreconditionFailed, PreconditionRequired
from agent.profile import ProfileError, ProfileNotWritten
from agent.serve.daemon import Daemon
from agent.serve.operations import source_of
from agent.wire.actions import NAME_MAX
from agent.wire.audit import AgentOperation
from agent.wire.plans import PRINTABLE

T = TypeVar("T")


def daemon_of(request: Request) -> Daemon:
    """The daemon `create_app` put in the app's state: routes get it by dependency, not closure."""
    daemon: Daemon = request.app.state.daemon
    return daemon


DaemonDep = Annotated[Daemon, Depends(daemon_of)]


def in_background(http: Request, coro: Coroutine[Any, Any, Any], name: str) -> None:
    """Runs work past the answer (a 202); the app's state holds the task so it is not collected."""
    background: set[asyncio.Task[Any]] = http.app.state.background
    task = asyncio.create_task(coro, name=name)
    background.add(task)
    task.add_done_callback(background.discard)


class Body(BaseModel):
    """Request bodies are strict: ``true`` or ``"5"`` is no number and ``1`` no boolean (a 422 names
    the field and the type it wants), and unknown fields are refused."""

    model_config = ConfigDict(extra="forbid", strict=True)


OPERATOR = Field(
    None,
    max_length=NAME_MAX,
    pattern=PRINTABLE,
    description="Who asks, for the audit (the console passes the SSH user); printable text",
)


ProfileName = Annotated[
    str, PathParam(max_length=NAME_MAX, description="A profile's name: its file's, without .toml")
]
"""A profile's name in a path, bounded before anything quotes or audits it (a 60,000-character name
was echoed into the answer and twice into the audit, per request)."""


def issues(exc: ProfileError) -> dict[str, Any]:
    return {"issues": [issue_dict(i) for i in exc.issues]}


def detail_words(detail: Any) -> str:
    """A refusal's detail as the audit says it: each issue's file, key and rule, never a dict's repr."""
    if isinstance(detail, dict) and isinstance(detail.get("issues"), list):
        return "; ".join(
            ": ".join(p for p in (i["file"], i["key"], i["rule"]) if p) for i in detail["issues"]
        )
    return str(detail)


def begin(
    daemon: Daemon, kind: AgentOperation, http: Request, operator: str | None, detail: dict[str, Any]
) -> dict[str, Any]:
    """The audit's intent first; when it cannot be written the request is refused (503)."""
    try:
        return daemon.ops.begin(kind, operator=operator, source=source_of(http), detail=detail)
    except AuditUnavailable as exc:
        raise HTTPException(503, f"refused: {exc}; nothing was done") from None


def guarded(daemon: Daemon, write: Callable[[], T]) -> T:
    """A profile write's refusals as HTTP says them: 428 without If-Match, 412 for a stale one."""
    try:
        return write()
    except UnknownProfile as exc:
        raise HTTPException(404, f"no profile {str(exc)!r} in {daemon.library.directory}") from None
    except ProfileNotWritten as exc:  # a full disk: the agent's trouble, not the request's
        raise HTTPException(503, issues(exc)) from None
    except ProfileError as exc:
        raise HTTPException(422, issues(exc)) from None
    except PreconditionRequired as exc:
        raise HTTPException(428, str(exc)) from None
    except PreconditionFailed as exc:
        raise HTTPException(412, str(exc)) from None


def audited(daemon: Daemon, op: dict[str, Any], write: Callable[[], T], done: str) -> T:
    """A profile write after its intent: the outcome says applied, or why it was refused."""
    try:
        result = guarded(daemon, write)
    except HTTPException as exc:  # 503: the disk refused it (failed); any other: the request was refused
        daemon.ops.end(op, "failed" if exc.status_code == 503 else "rejected", detail_words(exc.detail))
        raise
    daemon.ops.end(op, "applied", done)
    return result
