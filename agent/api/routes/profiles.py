"""Operator profiles: list, read (with its ETag), save, delete, diff, and the one running now.

Saves and deletes are written ahead like the engine routes (intent, write, outcome); the library
in control does the reading, checking and writing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import APIRouter, Header, HTTPException, Request
from fastapi.responses import Response
from pydantic import Field

from agent.api.routes.common import OPERATOR, Body, DaemonDep, ProfileName, audited, begin, guarded, issues
from agent.control.library import UnknownProfile
from agent.control.profile_view import shown_profile, shown_toml
from agent.control.writes import WriteGuard
from agent.profile import ProfileError
from agent.wire.actions import NAME_MAX
from agent.wire.api import ProfileDeleted, ProfileDiff, ProfileList, ProfileRead, ProfileSaved, RunningProfile
from agent.wire.plans import PRINTABLE

router = APIRouter()


class ProfileText(Body):
    toml: str = Field(max_length=256 * 1024)
    confirm_production: str | None = Field(
        None,
        max_length=NAME_MAX,
        pattern=PRINTABLE,
        description="Replacing a production profile: its name, repeated",
    )
    operator: str | None = OPERATOR


class ProfileDelete(Body):
    confirm_production: str | None = Field(
        None,
        max_length=NAME_MAX,
        pattern=PRINTABLE,
        description="Deleting a production profile: its name, repeated",
    )
    operator: str | None = OPERATOR


@router.get("/profiles", response_model=ProfileList)
async def list_profiles(daemon: DaemonDep) -> dict[str, Any]:
    running = daemon.profile.identity.name
    launched_from = daemon.config.profile_path.resolve()
    out = []
    for f in daemon.library.list():
        is_running = f.name == running or (
            f.path.resolve() == launched_from and daemon.profile == daemon.config.profile
        )
        changed = daemon.library.changed_keys(f.name, daemon.profile) if is_running else []
        out.append(
            {"name": f.name, "path": str(f.path), "running": is_running, "changed": changed}
            | {"digest": f.digest, "production": f.production}
        )
    return {"profiles": out}


@router.get("/profile", response_model=RunningProfile)
async def running_profile(daemon: DaemonDep) -> dict[str, Any]:
    """The profile the engine runs now, live changes included (what Controls shows as current)."""
    profile = daemon.profile
    return {"name": profile.identity.name, "toml": shown_toml(profile), "profile": shown_profile(profile)}


@router.get("/profiles/{name}", response_model=ProfileRead)
async def read_profile(daemon: DaemonDep, name: ProfileName, response: Response) -> dict[str, Any]:
    try:
        read = daemon.library.read(name)
    except UnknownProfile:
        raise HTTPException(404, f"no profile {name!r} in {daemon.library.directory}") from None
    except ProfileError as exc:
        raise HTTPException(422, issues(exc)) from None
    response.headers["ETag"] = f'"{read["digest"]}"'
    return read


@router.put("/profiles/{name}", response_model=ProfileSaved)
async def save_profile(
    daemon: DaemonDep,
    name: ProfileName,
    body: ProfileText,
    response: Response,
    http: Request,
    if_match: str | None = Header(None, max_length=512, description="The digest of the version replaced"),
    if_none_match: str | None = Header(None, max_length=16, description="'*': create only"),
) -> dict[str, Any]:
    guard = WriteGuard(if_match, if_none_match, body.confirm_production)
    op = begin(daemon, "profile_save", http, body.operator, {"name": name})
    saved = audited(daemon, op, lambda: daemon.library.save(name, body.toml, guard, daemon.profile), "saved")
    response.headers["ETag"] = f'"{saved.digest}"'
    return {"name": name, "saved": True, "digest": saved.digest, "comments_kept": saved.comments_kept}


@router.delete("/profiles/{name}", response_model=ProfileDeleted)
async def delete_profile(
    daemon: DaemonDep,
    name: ProfileName,
    http: Request,
    body: ProfileDelete | None = None,
    if_match: str | None = Header(None, max_length=512, description="The digest of the version deleted"),
) -> dict[str, Any]:
    path = guarded(daemon, lambda: daemon.library.path_of(name))  # a name that is a path: 422
    if Path(path).resolve() == daemon.config.profile_path.resolve():
        raise HTTPException(409, f"{name} is the profile this agent was started with; it stays")
    guard = WriteGuard(if_match, None, body.confirm_production if body else None)
    op = begin(daemon, "profile_delete", http, body.operator if body else None, {"name": name})
    audited(daemon, op, lambda: daemon.library.delete(name, guard), "deleted")
    return {"name": name, "deleted": True}


@router.get("/profiles/{name}/diff", response_model=ProfileDiff)
async def diff_profile(daemon: DaemonDep, name: ProfileName) -> dict[str, Any]:
    try:
        return daemon.library.diff(name, daemon.profile, daemon.launched_profile)
    except UnknownProfile:
        raise HTTPException(404, f"no profile {name!r} in {daemon.library.directory}") from None
    except ProfileError as exc:
        raise HTTPException(422, issues(exc)) from None
