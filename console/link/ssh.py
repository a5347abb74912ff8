"""The agent on a GPU host, reached through SSH (asyncssh).

The agent's UNIX socket is forwarded to a socket in a private (0700) local directory, and the token
is read with one ``cat`` over an exec channel whose single argument is quoted, so no part of a path
is ever interpreted by the remote shell. Host keys are checked against known_hosts: an unknown or
changed key is refused, with the command that fixes it.

Each SSH call's deadline is ``asyncio.timeout``, not ``asyncio.wait_for``: on Python 3.11 ``wait_for``
swallowed a cancel that landed as the call finished, so a console quitting (or a reconnect cancelled)
just as the connection came up went on to read the token and open the forward.
"""

from __future__ import annotations

import asyncio
import contextlib
import shlex
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncssh

from console.link.base import LinkError
from console.link.errors import ssh_connect_error
from console.link.http import UdsHttp, UdsHttpLink

SSH_CALL_TIMEOUT_S = 15.0
KEEPALIVE_INTERVAL_S = 5.0
KEEPALIVE_COUNT_MAX = 3
"""A dead peer is noticed after about interval x (count + 1) = 20 s, even with no traffic."""


@dataclass(frozen=True)
class SshTarget:
    """Where to go: what ``ssh`` would take as destination, -p, -i and -J."""

    destination: str
    port: int | None = None
    identity_file: str | None = None
    jump_host: str | None = None
    known_hosts: str | None = None  # None: asyncssh's default (~/.ssh/known_hosts and the ssh config)
    config_file: str | None = None  # None: ~/.ssh/config when readable
    remote_state_dir: str | None = None  # None: $XDG_STATE_HOME/k25console or ~/.local/state/k25console

    def __post_init__(self) -> None:
        if (
            not self.destination
            or self.destination.startswith("-")
            or any(c.isspace() for c in self.destination)
        ):
            raise ValueError(
                f"not an SSH destination: {self.destination!r} (expected user@host or a Host alias)"
            )

    @property
    def user_and_host(self) -> tuple[str | None, str]:
        user, sep, host = self.destination.rpartition("@")
        return (user if sep else None), host


def host_key_help(target: SshTarget, error: Exception) -> str:
    """Words for a refused host key: what happened and the two commands that fix it."""
    _, host = target.user_and_host
    port_flag = f"-p {target.port} " if target.port else ""
    known = f"[{host}]:{target.port}" if target.port else host
    return (
        f"Refused {host}: its host key is not in known_hosts or does not match it ({error}). "
        f"If this is a new host, check its fingerprint out of band, then connect once with "
        f"`ssh {port_flag}{target.destination}` and accept it. If the key changed on purpose (host "
        f"reinstalled), remove the old entry with `ssh-keygen -R '{known}'` and connect again. "
        "k25console never accepts an unverified key."
    )


class SshLink(UdsHttpLink):
    """One SSH connection, a local forward to the agent's socket, and HTTP over that."""

    def __init__(self, target: SshTarget) -> None:
        self.target = target
        self._conn: asyncssh.SSHClientConnection | None = None
        self._listener: asyncssh.SSHListener | None = None
        self._http: UdsHttp | None = None
        self._dir: str | None = None

    def describe(self) -> str:
        port = f":{self.target.port}" if self.target.port else ""
        return f"ssh {self.target.destination}{port}"

    def _connect_options(self) -> dict[str, Any]:
        user, host = self.target.user_and_host
        options: dict[str, Any] = {
            "host": host,
            "keepalive_interval": KEEPALIVE_INTERVAL_S,
            "keepalive_count_max": KEEPALIVE_COUNT_MAX,
            "connect_timeout": SSH_CALL_TIMEOUT_S,
            "login_timeout": SSH_CALL_TIMEOUT_S,
            "agent_forwarding": False,
        }
        if user:
            options["username"] = user
        if self.target.port:
            options["port"] = self.target.port
        if self.target.identity_file:
            options["client_keys"] = [str(Path(self.target.identity_file).expanduser())]
        if self.target.jump_host:
            options["tunnel"] = self.target.jump_host
        if self.target.known_hosts is not None:
            options["known_hosts"] = self.target.known_hosts
        if self.target.config_file is not None:
            options["config"] = [self.target.config_file] if self.target.config_file else None
        return options

    async def _run(self, conn: asyncssh.SSHClientConnection, argv: list[str]) -> str:
        """Run a fixed program with quoted arguments; ``shlex.join`` keeps each argument one word."""
        try:
            async with asyncio.timeout(SSH_CALL_TIMEOUT_S):
                result = await conn.run(shlex.join(argv), check=False)
        except (OSError, asyncssh.Error, TimeoutError) as exc:
            raise LinkError(f"`{argv[0]}` over SSH failed: {exc}") from exc
        if result.exit_status != 0:
            stderr = str(result.stderr or "").strip()
            raise LinkError(f"`{shlex.join(argv)}` on the host failed: {stderr or result.exit_status}")
        return str(result.stdout or "")

    async def _remote_paths(self, conn: asyncssh.SSHClientConnection) -> tuple[str, str]:
        if self.target.remote_state_dir:
            state = self.target.remote_state_dir
        else:
            out = await self._run(conn, ["printenv", "HOME", "XDG_STATE_HOME"])
            lines = [line for line in out.splitlines() if line]
            home = lines[0] if lines else "."
            state = f"{lines[1]}/k25console" if len(lines) > 1 else f"{home}/.local/state/k25console"
        return f"{state}/token", f"{state}/run/agent.sock"

    async def connect(self) -> None:
        await self.close()
        try:
            async with asyncio.timeout(SSH_CALL_TIMEOUT_S * 2):
                conn = await asyncssh.connect(**self._connect_options())
        except asyncssh.HostKeyNotVerifiable as exc:
            raise LinkError(host_key_help(self.target, exc), retryable=False) from exc
        except asyncssh.PermissionDenied as exc:
            raise LinkError(
                f"SSH login to {self.target.destination} was refused ({exc.reason}); check the user and "
                "the identity file (-i)",
                retryable=False,
            ) from exc
        except (OSError, asyncssh.Error, TimeoutError) as exc:
            _, host = self.target.user_and_host
            raise ssh_connect_error(self.target.destination, host, self.target.port, exc) from exc
        self._conn = conn
        try:
            token_path, socket_path = await self._remote_paths(conn)
            token = (await self._run(conn, ["cat", "--", token_path])).strip()
            if not token:
                raise LinkError(f"the agent's token file {token_path} on the host is empty")
            await self._probe_agent_socket(conn, socket_path)
            self._dir = tempfile.mkdtemp(prefix="k25c-")  # mkdtemp makes it 0700
            local_path = str(Path(self._dir) / "agent.sock")
            async with asyncio.timeout(SSH_CALL_TIMEOUT_S):
                self._listener = await conn.forward_local_path(local_path, socket_path)
            self._http = UdsHttp(local_path, token, self._forward_gone)
        except BaseException:
            await self.close()
            raise

    def _forward_gone(self, exc: BaseException) -> LinkError:
        return LinkError(
            f"the SSH forward to the agent on {self.target.destination} closed ({exc}): the SSH "
            "connection dropped; reconnecting"
        )

    async def _probe_agent_socket(self, conn: asyncssh.SSHClientConnection, socket_path: str) -> None:
        """Open one channel to the agent's socket now: the local forward opens its channels lazily, so
        without this a refused forward would surface later as a bare protocol error on every retry."""
        try:
            async with asyncio.timeout(SSH_CALL_TIMEOUT_S):
                _, writer = await conn.open_unix_connection(socket_path)
        except asyncssh.ChannelOpenError as exc:
            raise LinkError(
                f"cannot forward to the agent's socket {socket_path} over SSH ({exc.reason}): either no agent "
                "listens there (start it on the host with `agent serve --profile ...`), or the SSH server "
                "refuses stream-local forwarding (sshd_config: AllowStreamLocalForwarding yes, and no "
                "DisableForwarding)"
            ) from exc
        except (OSError, asyncssh.Error, TimeoutError) as exc:
            raise LinkError(f"cannot forward to the agent's socket {socket_path} over SSH: {exc}") from exc
        writer.close()

    async def close(self) -> None:
        http, self._http = self._http, None
        if http is not None:
            await http.aclose()
        listener, self._listener = self._listener, None
        if listener is not None:
            listener.close()
            with contextlib.suppress(Exception):
                async with asyncio.timeout(2.0):
                    await listener.wait_closed()
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()
            try:
                async with asyncio.timeout(2.0):
                    await conn.wait_closed()
            except (TimeoutError, OSError, asyncssh.Error):
                conn.abort()
        directory, self._dir = self._dir, None
        if directory is not None:
            shutil.rmtree(directory, ignore_errors=True)
