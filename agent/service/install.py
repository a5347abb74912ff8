"""Writing and removing the agent's systemd unit: checked first, written atomically, never someone else's.

Every check runs before anything is written: a profile that does not validate, an address the agent
would refuse, a user that does not exist, a unit file at the path that we did not write (or a link)
are errors that change nothing. The unit is written by the one atomic writer (temp file, fsync,
rename, fsync of the directory), so systemd never reads half of it. Uninstall removes only a unit we
wrote, and not while it is enabled (its ``*.wants/`` link would dangle).

Nothing here talks to systemd: enabling and starting are the operator's ``systemctl`` commands,
printed by the CLI, so the install works the same in a container or on a host without a user bus.
"""

from __future__ import annotations

import os
import pwd
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from agent.profile import ProfileError, load_profile
from agent.profile.atomic import fsync_dir, write_atomic
from agent.serve.listen import ListenError
from agent.serve.metrics_http import parse_metrics_listen
from agent.serve.paths import default_state_dir
from agent.service.unit import UNIT_NAME, UnitError, UnitSpec, is_ours, render_unit
from agent.sglang.rules import check_profile, errors_of

SYSTEM_UNIT_DIR = Path("/etc/systemd/system")


class ServiceError(Exception):
    """Bad input or a unit we must not touch; the message names the file or option and the fix."""


def user_unit_dir() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "systemd" / "user"


def unit_path(*, user_unit: bool, unit_dir: Path | None) -> Path:
    return (unit_dir or (user_unit_dir() if user_unit else SYSTEM_UNIT_DIR)) / UNIT_NAME


def _state_dir_of(account: str) -> Path:
    """The agent's default state dir for ``account`` (its ``--state-dir`` rule, without the env)."""
    return Path(pwd.getpwnam(account).pw_dir) / ".local" / "state" / "k25console"


def _account(run_as: str | None) -> str:
    """Who a system unit runs the agent as: --run-as, else the user behind sudo, else this user."""
    if run_as is not None:
        try:
            pwd.getpwnam(run_as)
        except KeyError:
            raise ServiceError(f"--run-as {run_as}: no such user on this host") from None
        return run_as
    me = pwd.getpwuid(os.geteuid()).pw_name
    name = os.environ.get("SUDO_USER") if os.geteuid() == 0 else None
    name = name or me
    if pwd.getpwnam(name).pw_uid == 0:
        raise ServiceError(
            "the system unit would run the agent as root; give --run-as USER (the account that owns "
            "the stack and the models), or --run-as root if that is really meant"
        )
    return name


@dataclass(frozen=True)
class InstallRequest:
    profile: Path
    user_unit: bool
    engine: Literal["sglang", "sim"] = "sglang"
    metrics_listen: str | None = None
    metrics_listen_any: bool = False
    state_dir: Path | None = None
    run_as: str | None = None
    unit_dir: Path | None = None


@dataclass(frozen=True)
class Rendered:
    path: Path
    text: str
    spec: UnitSpec


def render_for(req: InstallRequest) -> Rendered:
    """Check everything and render the unit; writes nothing."""
    if req.user_unit and req.run_as is not None:
        raise ServiceError("--run-as is for system units; a --user unit runs as you")
    profile_path = req.profile.expanduser().absolute()
    try:
        profile = load_profile(profile_path)
    except ProfileError as exc:
        raise ServiceError(f"the profile is not valid:\n{exc}") from None
    errors = errors_of(check_profile(profile, str(profile_path)))
    if errors:
        raise ServiceError(
            "SGLang 0.5.23 would refuse this profile:\n" + "\n".join(f"  {issue}" for issue in errors)
        )
    if req.metrics_listen_any and not req.metrics_listen:
        raise ServiceError("--metrics-listen-any needs --metrics-listen HOST:PORT")
    account = None if req.user_unit else _account(req.run_as)
    if req.state_dir is not None:
        state_dir = req.state_dir.expanduser().absolute()
    else:
        state_dir = default_state_dir() if account is None else _state_dir_of(account)
    argv = [sys.executable, "-m", "agent.cli.main", "serve", "--profile", str(profile_path)]
    argv += ["--state-dir", str(state_dir)]
    if req.engine != "sglang":
        argv += ["--engine", req.engine]
    if req.metrics_listen:
        try:
            parse_metrics_listen(req.metrics_listen, allow_any=req.metrics_listen_any)
        except ListenError as exc:
            raise ServiceError(str(exc)) from None
        argv += ["--metrics-listen", req.metrics_listen]
        if req.metrics_listen_any:
            argv.append("--metrics-listen-any")
    try:
        spec = UnitSpec(
            argv=argv, profile_name=profile.identity.name, user_unit=req.user_unit, run_as=account
        )
        text = render_unit(spec)
    except UnitError as exc:
        raise ServiceError(str(exc)) from None
    return Rendered(unit_path(user_unit=req.user_unit, unit_dir=req.unit_dir), text, spec)


def _check_ours(path: Path) -> str | None:
    """The unit's text when it is one we wrote; None when there is none; ServiceError otherwise."""
    if path.is_symlink():
        raise ServiceError(f"{path}: is a link, not a unit `agent service install` wrote; leaving it alone")
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise ServiceError(f"{path}: cannot read it ({exc}); leaving it alone") from None
    if not is_ours(text):
        raise ServiceError(
            f"{path}: exists and was not written by `agent service install`; leaving it alone "
            "(move it away yourself if it should be replaced)"
        )
    return text


def install(rendered: Rendered) -> bool:
    """Write the unit; False when the same unit is already there (nothing changed)."""
    path = rendered.path
    if _check_ours(path) == rendered.text:
        return False
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, rendered.text, mode=0o644)
    except PermissionError:
        raise ServiceError(
            f"{path}: permission denied; a system unit needs root (sudo agent service install ...), "
            "or install a --user unit"
        ) from None
    except OSError as exc:
        raise ServiceError(f"{path}: cannot write it: {exc.strerror or exc}") from None
    return True


def enabled_links(path: Path) -> list[Path]:
    """``systemctl enable`` links to the unit in its directory's ``*.wants``/``*.requires``."""
    return sorted(
        link
        for pattern in ("*.wants", "*.requires")
        for link in path.parent.glob(f"{pattern}/{path.name}")
        if link.is_symlink() or link.exists()
    )


def uninstall(path: Path, systemctl: str) -> bool:
    """Remove our unit; False when there was none. ``systemctl`` is the command to name in errors."""
    if _check_ours(path) is None:
        return False
    links = enabled_links(path)
    if links:
        raise ServiceError(
            f"{path}: the unit is enabled ({', '.join(map(str, links))}); run `{systemctl} disable --now "
            f"{UNIT_NAME}` first, then uninstall"
        )
    try:
        path.unlink()
    except PermissionError:
        raise ServiceError(f"{path}: permission denied; a system unit needs root") from None
    fsync_dir(path.parent)
    return True
