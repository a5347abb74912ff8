"""A small synchronous client for ``agent status`` and ``agent stop`` on the same host."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from agent.serve.listen import parse_listen
from agent.serve.paths import UnsafePathError
from agent.serve.token import read_token


class AgentUnreachable(Exception):
    pass


def connect(
    *, state_dir: Path, socket_path: Path | None, listen: str | None, timeout_s: float = 10.0
) -> httpx.Client:
    token_file = state_dir / "token"
    try:
        token = read_token(token_file)
    except FileNotFoundError:
        raise AgentUnreachable(
            f"no token file at {token_file}: no agent has run with this state directory"
        ) from None
    except UnsafePathError as exc:  # says what a token must be and why this file is none
        raise AgentUnreachable(str(exc)) from None
    headers = {"Authorization": f"Bearer {token}"}
    if listen:
        host, port = parse_listen(listen)
        host = f"[{host}]" if ":" in host else host
        return httpx.Client(base_url=f"http://{host}:{port}", headers=headers, timeout=timeout_s)
    path = socket_path or state_dir / "run" / "agent.sock"
    if not path.is_socket():
        raise AgentUnreachable(f"no agent socket at {path}: the agent is not running")
    return httpx.Client(
        base_url="http://agent",
        headers=headers,
        timeout=timeout_s,
        transport=httpx.HTTPTransport(uds=str(path)),
    )


def call(client: httpx.Client, method: str, path: str, **kwargs: Any) -> Any:
    try:
        response = client.request(method, path, **kwargs)
    except httpx.TransportError as exc:
        raise AgentUnreachable(f"the agent does not answer: {exc}") from None
    if response.status_code == 401:
        raise AgentUnreachable("the agent refused the token (401); is this the same state directory?")
    response.raise_for_status()
    return response.json()
