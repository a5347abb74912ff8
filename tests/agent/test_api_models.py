"""The typed API: each route answers its ``agent.wire.api`` model, and the schema says so."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from agent.api.app import create_app
from agent.profile import load_profile
from agent.serve.daemon import Daemon, ServeConfig
from agent.serve.paths import StatePaths
from agent.wire import api
from agent.wire.bench_result import BenchResult

REPO = Path(__file__).resolve().parents[2]
PROFILES = REPO / "profiles"
TOKEN = "t" * 43


@pytest.fixture
async def agent_api(tmp_path: Path) -> AsyncIterator[tuple[httpx.AsyncClient, Daemon]]:
    profiles = tmp_path / "profiles"
    profiles.mkdir()
    for name in ("local-sim", "kimi-k25-eagle3"):
        (profiles / f"{name}.toml").write_text((PROFILES / f"{name}.toml").read_text())
    config = ServeConfig(
        load_profile(profiles / "local-sim.toml"), profiles / "local-sim.toml", profiles, "sim",
        StatePaths(tmp_path / "state").prepare(),
    )  # fmt: skip
    daemon = Daemon(config, token=TOKEN)
    daemon.bench = daemon._make_bench()
    app = create_app(daemon)
    transport = httpx.ASGITransport(app=app)
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with httpx.AsyncClient(transport=transport, base_url="http://agent", headers=headers) as client:
        yield client, daemon
    await daemon.http.aclose()


async def _get(client: httpx.AsyncClient, path: str, model: type[api._Wire], **params: Any) -> Any:
    response = await client.get(path, params=params)
    assert response.status_code == 200, response.text
    return model.model_validate(response.json())


async def test_every_read_route_answers_its_model(agent_api: tuple[httpx.AsyncClient, Daemon]) -> None:
    client, daemon = agent_api
    version = await _get(client, "/v1/version", api.VersionInfo)
    assert version.api_version == 1 and version.agent_version
    status = await _get(client, "/v1/status", api.AgentStatus)
    assert (status.profile, status.engine_kind, status.engine_state) == ("local-sim", "sim", "stopped")
    listed = await _get(client, "/v1/profiles", api.ProfileList)
    assert {p.name: p.running for p in listed.profiles} == {"local-sim": True, "kimi-k25-eagle3": False}
    read = await _get(client, "/v1/profiles/kimi-k25-eagle3", api.ProfileRead)
    assert read.profile is not None and read.issues == [] and "[speculation]" in read.toml
    diff = await _get(client, "/v1/profiles/kimi-k25-eagle3/diff", api.ProfileDiff)
    assert diff.plan.mode == "restart" and any(c.key == "identity.name" for c in diff.changes)
    whatif = await _get(client, "/v1/kv/whatif", api.KvWhatIf, running=64, context=4000, pool=200_000)
    assert whatif.pool_source == "given" and whatif.spec is not None
    assert whatif.on is not None and whatif.off is not None
    # "off" (0 steps) keeps the widest candidate's reserve; only a server without a drafter gives it back
    assert whatif.on.tokens_held == whatif.off.tokens_held > whatif.baseline.tokens_held
    assert whatif.overfull and whatif.fit_summary
    running = await _get(client, "/v1/profile", api.RunningProfile)
    assert running.name == "local-sim" and 'name = "local-sim"' in running.toml
    logs = await _get(client, "/v1/logs", api.LogLines, tail=5)
    assert logs.lines == []  # no engine has run: an empty log, not an error
    saved = await client.put("/v1/profiles/copy", json={"toml": read.toml.replace("kimi-k25-eagle3", "copy")})
    assert api.ProfileSaved.model_validate(saved.json()).model_dump(exclude={"digest"}) == {
        "name": "copy",
        "saved": True,
        "comments_kept": True,
    }
    daemon.bench.runs.store.save(BenchResult.model_validate(
        {"bench_id": "20261201-120000-abcdef", "mode": "sweep", "state": "finished", "url": "http://e",
         "created_at": 1.0, "finished_at": 2.0, "options": {"concurrency": [1]}, "levels": [{"c": 1}]}
    ))  # fmt: skip
    runs = await _get(client, "/v1/bench", api.BenchList)
    assert [r.bench_id for r in runs.runs] == ["20261201-120000-abcdef"]
    record = await _get(client, "/v1/bench/20261201-120000-abcdef", BenchResult)
    assert record.state == "finished" and record.options.concurrency == [1]
    assert record.stored()["options"] == {"concurrency": [1]}  # typed where read, stored as given
    assert record.stored()["levels"] == [{"c": 1}]  # the result's own keys pass through, nothing added
    cancel = await client.post("/v1/bench/20261201-120000-abcdef/cancel")
    assert api.BenchCancelled.model_validate(cancel.json()).cancelled is False


async def test_the_schema_names_the_models(agent_api: tuple[httpx.AsyncClient, Daemon]) -> None:
    client, _ = agent_api
    schema = (await client.get("/openapi.json")).json()

    def model_of(path: str, method: str = "get") -> str:
        answers = schema["paths"][path][method]["responses"]
        ok = answers.get("200") or answers["202"]
        return str(ok["content"]["application/json"]["schema"]["$ref"]).rsplit("/", 1)[-1]

    assert model_of("/v1/version") == "VersionInfo"
    assert model_of("/v1/status") == "AgentStatus"
    assert model_of("/v1/profiles") == "ProfileList"
    assert model_of("/v1/profiles/{name}") == "ProfileRead"
    assert model_of("/v1/profiles/{name}", "put") == "ProfileSaved"
    assert model_of("/v1/profiles/{name}/diff") == "ProfileDiff"
    assert model_of("/v1/kv/whatif") == "KvWhatIf"
    assert model_of("/v1/profile") == "RunningProfile"
    assert model_of("/v1/logs") == "LogLines"
    assert model_of("/v1/bench") == "BenchList"
    assert model_of("/v1/bench", "post") == "BenchStarted"
    assert model_of("/v1/bench/{bench_id}") == "BenchResult"
    assert model_of("/v1/bench/{bench_id}/cancel", "post") == "BenchCancelled"
