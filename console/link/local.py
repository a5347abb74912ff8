"""The agent on this machine: its UNIX socket and token file, read directly."""

from __future__ import annotations

import os
from pathlib import Path

from console.link.base import LinkError
from console.link.http import UdsHttp, UdsHttpLink


def default_state_dir() -> Path:
    """The agent's state directory, by the same rule the agent uses ($XDG_STATE_HOME/k25console)."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "k25console"


def default_socket_path(state_dir: Path | None = None) -> Path:
    return (state_dir or default_state_dir()) / "run" / "agent.sock"


class LocalLink(UdsHttpLink):
    """Talks to ``socket_path``; the token is read from ``token_path`` on every (re)connect."""

    def __init__(self, socket_path: str | Path, token_path: str | Path | None = None) -> None:
        self.socket_path = Path(socket_path)
        self.token_path = Path(token_path) if token_path else self._guess_token_path(self.socket_path)
        self._http: UdsHttp | None = None

    @staticmethod
    def _guess_token_path(socket_path: Path) -> Path:
        """The token lives in the state dir; the socket in its ``run`` subdirectory (or beside it)."""
        parent = socket_path.parent
        state = parent.parent if parent.name == "run" else parent
        return state / "token"

    def describe(self) -> str:
        return f"local {self.socket_path}"

    async def connect(self) -> None:
        await self.close()
        try:
            token = self.token_path.read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise LinkError(
                f"cannot read the agent's token {self.token_path}: {exc.strerror or exc}. "
                "Is `agent serve` running as this user?"
            ) from exc
        if not self.socket_path.exists():
            raise LinkError(f"no agent socket at {self.socket_path}: start it with `agent serve`")
        self._http = UdsHttp(str(self.socket_path), token)

    async def close(self) -> None:
        if self._http is not None:
            http, self._http = self._http, None
            await http.aclose()
