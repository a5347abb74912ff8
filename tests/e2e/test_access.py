"""Access: loopback only, private files, and secrets that never leave the agent."""

from __future__ import annotations

import json
import re
import shutil
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from agent_harness import REPO, AgentProc, prepare_profiles, short_root

from .console_kit import engine_live_state
from .waiting import wait_until

ENGINE_KEY = "sk-e2e-engine-" + "7c1d" * 8
"""The simulated engine's API key: it must never appear in anything the agent writes or serves."""


@pytest.mark.parametrize("listen", ["0.0.0.0:0", "[::]:0", "192.0.2.10:8080", "example.com:80", "127.0.0.1"])
def test_agent_refuses_a_listen_address_that_is_not_loopback(tmp_path: Path, listen: str) -> None:
    profile = prepare_profiles(tmp_path)
    argv = [sys.executable, "-m", "agent.cli.main", "serve", "--engine", "sim", "--profile", str(profile)]
    argv += ["--state-dir", str(tmp_path / "state"), "--gpus", "none", "--listen", listen]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, cwd=REPO)
    assert done.returncode == 2, done.stderr
    assert listen in done.stderr or "loopback" in done.stderr, done.stderr
    assert not (tmp_path / "state" / "engine.json").exists(), "an engine was started anyway"


@pytest.fixture(scope="module")
def keyed_agent() -> Iterator[AgentProc]:
    """An agent whose simulated engine wants an API key, read from a file as SGLang's would be."""
    root = short_root()
    key_file = root / "engine.key"
    key_file.write_text(ENGINE_KEY + "\n")
    key_file.chmod(0o600)
    agent = AgentProc(root=root, profile=prepare_profiles(root, api_key_file=key_file))
    try:
        agent.start()
        yield agent
    finally:
        agent.stop()
        shutil.rmtree(root, ignore_errors=True)


def test_socket_token_and_state_are_private(keyed_agent: AgentProc) -> None:
    def mode(path: Path) -> int:
        return stat.S_IMODE(path.stat().st_mode)

    assert stat.S_ISSOCK(keyed_agent.socket.stat().st_mode)
    assert mode(keyed_agent.socket) == 0o600
    assert mode(keyed_agent.socket.parent) == 0o700
    assert mode(keyed_agent.token_path) == 0o600
    assert mode(keyed_agent.state_dir) == 0o700
    assert len(keyed_agent.token()) >= 32
    for path in keyed_agent.state_dir.rglob("*"):
        if path.is_file():
            assert mode(path) & 0o077 == 0, f"{path} is readable by others ({oct(mode(path))})"


class _Capture(BaseHTTPRequestHandler):
    """A stranger's HTTP server posing as an engine: says it is healthy, answers {} to everything,
    and remembers every request's path and headers."""

    seen: list[str] = []  # noqa: RUF012 (one server per test, filled by its handler threads)

    def _answer(self) -> None:
        self.seen.append(f"{self.command} {self.path} {json.dumps(dict(self.headers.items()))}")
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    do_GET = do_POST = _answer

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def stranger() -> Iterator[tuple[str, list[str]]]:
    _Capture.seen = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Capture)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", _Capture.seen
    finally:
        server.shutdown()
        server.server_close()


def _run_bench(agent: AgentProc, body: dict[str, Any]) -> dict[str, Any]:
    with agent.client() as c:
        response = c.post("/v1/bench", json=body)
        assert response.status_code == 202, response.text
        bench_id = response.json()["bench_id"]

        def ended() -> dict[str, Any] | None:
            run: dict[str, Any] = c.get(f"/v1/bench/{bench_id}").json()
            return run if run.get("state") not in (None, "running") else None

        return wait_until(ended, timeout_s=120, what="the benchmark to end")


async def test_token_and_engine_key_never_appear_in_logs_snapshots_audit_or_bench_results(
    keyed_agent: AgentProc,
) -> None:
    agent = keyed_agent
    token = agent.token()
    # Exercise every path that writes or serves: telemetry, an applied action, a benchmark, logs.
    before = (await engine_live_state(agent, api_key=ENGINE_KEY))["threshold"]
    with agent.client() as c:
        plan = c.post(
            "/v1/actions", json={"request_id": "e2e-secret-01", "kind": "threshold", "value": before + 1}
        ).json()
        assert c.post(f"/v1/actions/{plan['action_id']}/confirm").json()["status"] == "applied"
    run = _run_bench(
        agent,
        {"mode": "sweep", "concurrency": [1], "requests_per_level": 3, "input_len": 16, "output_len": 8},
    )
    assert run["state"] == "finished", run
    served: list[str] = []
    with agent.client() as c:
        for path in (
            "/v1/status",
            "/v1/snapshots",
            "/v1/events",
            "/v1/audit",
            "/v1/logs?tail=10000",
            "/v1/bench",
            f"/v1/bench/{run['bench_id']}",
            "/v1/profiles/local-sim",
            "/v1/profiles/local-sim/diff",
        ):
            response = c.get(path)
            assert response.status_code == 200, path
            served.append(response.text)
    written = agent.all_logs()
    for secret, name in ((ENGINE_KEY, "the engine's API key"), (token, "the agent's token")):
        for text in served:
            assert secret not in text, f"{name} served by the API"
        assert secret not in written, f"{name} written to a log or state file"
    # The engine itself does report its key in /server_info (as SGLang does): the agent must have
    # read it there and still kept it out of everything above.
    assert "api_key" in json.dumps(await _server_info(agent))


async def _server_info(agent: AgentProc) -> dict[str, Any]:
    import httpx

    url = agent.status()["engine_url"]
    async with httpx.AsyncClient(headers={"Authorization": f"Bearer {ENGINE_KEY}"}, timeout=10) as client:
        info: dict[str, Any] = (await client.get(f"{url}/server_info")).json()
    return info


def test_bench_never_sends_the_engine_key_to_a_baseline_url_it_was_given(
    keyed_agent: AgentProc, stranger: tuple[str, list[str]]
) -> None:
    url, seen = stranger
    run = _run_bench(
        keyed_agent,
        {
            "mode": "compare",
            "baseline_url": url,
            "concurrency": [1],
            "requests_per_level": 1,
            "input_len": 16,
            "output_len": 8,
        },
    )
    assert seen, f"the baseline was never asked (run {run.get('state')}: {run.get('error')})"
    assert not [headers for headers in seen if ENGINE_KEY in headers], "the engine key went to a stranger"


# -- what a caller without the token reaches --------------------------------------------------------


def _readme_open_routes() -> set[tuple[str, str]]:
    """The reference's list of what a caller without the token reaches (docs/gpu-host.md, "Access")."""
    text = (REPO / "docs" / "gpu-host.md").read_text()
    start, end = "<!-- access-without-token -->", "<!-- /access-without-token -->"
    assert start in text and end in text, "docs/gpu-host.md's access list lost its markers"
    listed = text.split(start, 1)[1].split(end, 1)[0]
    return {(m, p) for m, p in re.findall(r"^- `([A-Z]+) (/\S*)`", listed, re.M)}


def _every_route(agent: AgentProc, state: Path) -> list[tuple[str, str]]:
    """Every (method, path) of the app the agent builds (its bench routes too): those its schema
    lists, and the routes kept out of the schema (the schema's own)."""
    from fastapi.routing import APIRoute

    from agent.api.app import create_app
    from agent.profile import load_profile
    from agent.serve.daemon import Daemon, ServeConfig
    from agent.serve.paths import StatePaths

    config = ServeConfig(
        load_profile(agent.profile), agent.profile, agent.profiles_dir, "sim", StatePaths(state).prepare()
    )
    daemon = Daemon(config, token="t" * 43)
    daemon.bench = daemon._make_bench()
    app = create_app(daemon)
    found = {(m.upper(), path) for path, ops in app.openapi()["paths"].items() for m in ops}
    found |= {(m, r.path) for r in app.routes if isinstance(r, APIRoute) for m in r.methods if m != "HEAD"}
    return sorted((method, re.sub(r"\{[^}]+\}", "x", path)) for method, path in found)


def test_without_the_token_a_caller_reaches_exactly_what_the_readme_lists(
    keyed_agent: AgentProc, tmp_path: Path
) -> None:
    routes = _every_route(keyed_agent, tmp_path / "state")
    assert ("GET", "/v1/status") in routes and ("POST", "/v1/bench") in routes and len(routes) > 20
    reached, answers = set(), {}
    with keyed_agent.client(token="") as anonymous:
        for method, path in routes:
            response = anonymous.request(method, path, json={})
            answers[(method, path)] = response.status_code
            if response.status_code != 401:
                reached.add((method, path))
        assert anonymous.get("/openapi.json").status_code == 401, "the schema is open"
        for ui in ("/docs", "/redoc", "/docs/oauth2-redirect"):
            assert anonymous.get(ui).status_code == 404, f"{ui} is served"
        assert anonymous.get("/v1/no-such-route").status_code == 404
    assert reached == _readme_open_routes(), answers
    with keyed_agent.client() as c:  # with the token the schema is there, and it names the routes
        assert "/v1/status" in c.get("/openapi.json").json()["paths"]
