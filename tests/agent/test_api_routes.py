"""The API's operation set, pinned: the routers per resource (agent/api/routes) offer exactly these
(method, path) pairs, every path the clients name is one of them, and each route answers from the
daemon of the app it belongs to (a dependency on the app's state, not a closure or a global)."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
from fastapi import FastAPI

from agent.api.app import create_app
from agent.profile import load_profile
from agent.serve.daemon import Daemon, ServeConfig
from agent.serve.paths import StatePaths

REPO = Path(__file__).resolve().parents[2]
PROFILES = REPO / "profiles"

OPERATIONS = {
    ("GET", "/v1/version"),
    ("GET", "/v1/status"),
    ("GET", "/v1/stream"),
    ("GET", "/v1/snapshots"),
    ("GET", "/v1/events"),
    ("POST", "/v1/actions"),
    ("POST", "/v1/actions/{action_id}/confirm"),
    ("POST", "/v1/actions/{action_id}/cancel"),
    ("GET", "/v1/actions/{action_id}"),
    ("GET", "/v1/audit"),
    ("GET", "/v1/profiles"),
    ("GET", "/v1/profile"),
    ("GET", "/v1/profiles/{name}"),
    ("PUT", "/v1/profiles/{name}"),
    ("DELETE", "/v1/profiles/{name}"),
    ("GET", "/v1/profiles/{name}/diff"),
    ("GET", "/v1/kv/whatif"),
    ("GET", "/v1/logs"),
    ("PUT", "/v1/telemetry"),
    ("POST", "/v1/engine/restart"),
    ("POST", "/v1/engine/stop"),
    ("POST", "/v1/engine/start"),
    ("POST", "/v1/agent/stop"),
    ("GET", "/v1/bench"),
    ("POST", "/v1/bench"),
    ("GET", "/v1/bench/{bench_id}"),
    ("POST", "/v1/bench/plan"),
    ("POST", "/v1/bench/external"),
    ("POST", "/v1/bench/{bench_id}/cancel"),
    ("GET", "/v1/router"),
}
"""What the agent's API offers (its schema; GET /openapi.json itself stays out of it)."""

CLIENTS = [REPO / "console" / "link", REPO / "console" / "demo", REPO / "agent" / "cli"]
"""Where the console, the demo and the `agent` command name the agent's routes."""

ENGINE_PATHS = {"/v1/chat/completions", "/v1/models"}
"""The demo's traffic talks to the engine (or the fleet demo's router), not the agent."""


def _app(tmp_path: Path, profile: str = "local-sim", token: str = "t" * 43) -> FastAPI:
    config = ServeConfig(
        load_profile(PROFILES / f"{profile}.toml"), PROFILES / f"{profile}.toml", PROFILES, "sim",
        StatePaths(tmp_path / profile / "state").prepare(),
    )  # fmt: skip
    daemon = Daemon(config, token=token)
    daemon.bench = daemon._make_bench()
    return create_app(daemon)


def _operations(app: FastAPI) -> set[tuple[str, str]]:
    return {(m.upper(), path) for path, ops in app.openapi()["paths"].items() for m in ops}


def _shape(path: str) -> str:
    return re.sub(r"\{[^}]*\}", "{}", path.split("?", 1)[0])


def test_the_api_offers_exactly_its_pinned_operations(tmp_path: Path) -> None:
    assert _operations(_app(tmp_path)) == OPERATIONS


def test_every_agent_path_a_client_names_is_an_operation(tmp_path: Path) -> None:
    named: dict[str, str] = {}
    for folder in CLIENTS:
        for source in folder.rglob("*.py"):
            for path in re.findall(r"f?\"(/v1/[^\"]*)\"", source.read_text()):
                named.setdefault(_shape(path), str(source.relative_to(REPO)))
    offered = {_shape(path) for _, path in OPERATIONS}
    assert len(named) > 15, "the clients' paths were not found"
    assert {p: where for p, where in named.items() if p not in offered | ENGINE_PATHS} == {}


async def test_each_route_answers_from_the_daemon_of_its_own_app(tmp_path: Path) -> None:
    apps = {
        "local-sim": _app(tmp_path, "local-sim", "a" * 43),
        "kimi-k25-eagle3": _app(tmp_path, "kimi-k25-eagle3", "b" * 43),
    }
    for name, app in apps.items():
        token = app.state.daemon.token
        transport = httpx.ASGITransport(app=app)
        headers = {"Authorization": f"Bearer {token}"}
        async with httpx.AsyncClient(transport=transport, base_url="http://agent", headers=headers) as client:
            assert (await client.get("/v1/status")).json()["profile"] == name
            assert (await client.get("/v1/profile")).json()["name"] == name
        other = "b" * 43 if token == "a" * 43 else "a" * 43
        async with httpx.AsyncClient(
            transport=transport, base_url="http://agent", headers={"Authorization": f"Bearer {other}"}
        ) as client:
            assert (await client.get("/v1/status")).status_code == 401
        await app.state.daemon.http.aclose()
