"""No secret leaves the host (issue 25): a real ``agent serve --engine sim`` whose profile carries
HF_TOKEN in ``server.env`` and a key read from ``server.env_files``. Neither value comes back from any
answer, event, series or log view, nor sits in the engine record; a log search cannot confirm a
secret piece by piece; "Save running as" keeps the real value; the engine still gets both in its
environment, and neither on its command line.
"""

from __future__ import annotations

import shutil
import socket
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from daemon_harness import ENGINE_KEY, Agent, new_root, wait_until, write_profile

HF_TOKEN = "hf_" + "Qx7Lm2Pz9Kw4" * 3
"""In server.env: the issue's case."""
FILE_KEY = "wandb-" + "9c4e1b7a" * 4
"""Read from server.env_files at launch."""
SECRETS = (HF_TOKEN, FILE_KEY, ENGINE_KEY)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def agent() -> Iterator[Agent]:
    root = new_root()
    key_file = root / "engine.key"
    key_file.write_text(ENGINE_KEY + "\n")
    key_file.chmod(0o600)
    wandb = root / "wandb.key"
    wandb.write_text(FILE_KEY + "\n")
    wandb.chmod(0o600)
    profile = write_profile(
        root, "sim-secrets", key_file=key_file, env={"HF_TOKEN": HF_TOKEN, "K25_PLAIN": "1"}
    )
    profile.write_text(profile.read_text() + f'\n[server.env_files]\nWANDB_API_KEY = "{wandb}"\n')
    port = _free_port()
    agent = Agent(root, profile, ["--metrics-listen", f"127.0.0.1:{port}"])
    agent.metrics_port = port  # type: ignore[attr-defined]
    try:
        agent.start()
        agent.wait_state("ready")
        yield agent
    finally:
        agent.cleanup()
        shutil.rmtree(root, ignore_errors=True)


def _no_secret(text: str, where: str) -> None:
    for secret in SECRETS:
        assert secret not in text, f"a secret in {where}"
        assert secret[:12] not in text, f"a piece of a secret in {where}"


async def test_env_values_never_come_back_from_the_profile_routes_or_the_record(agent: Agent) -> None:
    async with agent.client() as c:
        read = (await c.get("/v1/profiles/sim-secrets")).json()
        running = (await c.get("/v1/profile")).json()
        listed = (await c.get("/v1/profiles")).text
        status = (await c.get("/v1/status")).text
    assert read["profile"]["server"]["env"] == {"HF_TOKEN": "<redacted>", "K25_PLAIN": "1"}
    assert 'HF_TOKEN = "<redacted>"' in read["toml"] and 'K25_PLAIN = "1"' in read["toml"]
    assert running["profile"]["server"]["env"]["HF_TOKEN"] == "<redacted>"
    assert read["profile"]["server"]["env_files"]["WANDB_API_KEY"].endswith("wandb.key")  # a path, shown
    for where, text in (("profile read", str(read)), ("running profile", str(running)), ("list", listed),
                        ("status", status)):  # fmt: skip
        _no_secret(text, where)
    record = (agent.state_dir / "engine.json").read_text()
    _no_secret(record, "the engine record")
    assert "HF_TOKEN" in record  # the name stays: an adopting agent fills the value from its --profile


async def test_a_diff_and_a_plan_show_an_env_change_without_its_values(agent: Agent) -> None:
    other = agent.profile.parent / "sim-other.toml"
    other.write_text(
        agent.profile.read_text()
        .replace('name = "sim-secrets"', 'name = "sim-other"')
        .replace(HF_TOKEN, HF_TOKEN[::-1])
    )
    async with agent.client() as c:
        diff = (await c.get("/v1/profiles/sim-other/diff")).json()
        plan = await c.post(
            "/v1/actions",
            json={"request_id": "secrets-plan-1", "kind": "apply_profile", "value": "sim-other"},
        )
        assert plan.status_code == 200, plan.text
        await c.post(f"/v1/actions/{plan.json()['action_id']}/cancel", json={"operator": "test"})
        events = (await c.get("/v1/events")).text
        audit = (await c.get("/v1/audit")).text
    env_change = next(ch for ch in diff["changes"] if ch["key"] == "server.env.HF_TOKEN")
    assert env_change["old"] == env_change["new"] == "<redacted>"
    planned = next(ch for ch in plan.json()["changes"] if ch["key"] == "server.env.HF_TOKEN")
    assert planned["old"] == planned["new"] == "<redacted>"
    for where, text in (("diff", str(diff)), ("plan", plan.text), ("events", events), ("audit", audit)):
        _no_secret(text, where)
        assert HF_TOKEN[::-1][:12] not in text, f"the other profile's token in {where}"


async def test_log_search_matches_the_redacted_text_only(agent: Agent) -> None:
    log = agent.state_dir / "logs" / "engine.log"
    with log.open("a") as fh:
        fh.write(f"startup: HF_TOKEN={HF_TOKEN} api_key='{ENGINE_KEY}' wandb {FILE_KEY}\n")
    async with agent.client() as c:

        async def search(term: str) -> list[str]:
            answer = await c.get("/v1/logs", params={"tail": 10_000, "search": term})
            assert answer.status_code == 200, answer.text
            return list(answer.json()["lines"])

        # the caller who guesses a secret's first characters learns nothing
        for secret in SECRETS:
            for piece in (secret[:6], secret[:12], secret):
                assert await search(piece) == [], f"a search for {piece!r} found lines"
        found = await search("startup: HF_TOKEN")
        tail = (await c.get("/v1/logs", params={"tail": 10_000})).json()["lines"]
    assert found == ["startup: HF_TOKEN=<redacted> api_key='<redacted>' wandb <redacted>"]
    _no_secret("\n".join(tail), "the log tail")


async def test_save_running_as_keeps_the_real_value_and_a_mark_nobody_can_fill_is_refused(
    agent: Agent,
) -> None:
    async with agent.client() as c:
        running = (await c.get("/v1/profile")).json()["toml"]
        copy = running.replace('name = "sim-secrets"', 'name = "sim-copy"')
        saved = await c.put("/v1/profiles/sim-copy", json={"toml": copy}, headers={"If-None-Match": "*"})
        assert saved.status_code == 200, saved.text
        orphan = copy.replace('name = "sim-copy"', 'name = "sim-orphan"').replace(
            "[server.env]\n", '[server.env]\nNEW_SECRET = "<redacted>"\n'
        )
        refused = await c.put(
            "/v1/profiles/sim-orphan", json={"toml": orphan}, headers={"If-None-Match": "*"}
        )
    written = (agent.profile.parent / "sim-copy.toml").read_text()
    assert HF_TOKEN in written and "<redacted>" not in written
    assert refused.status_code == 422, refused.text
    (issue,) = refused.json()["detail"]["issues"]
    assert issue["key"] == "server.env.NEW_SECRET" and "env_files" in issue["rule"]
    assert not (agent.profile.parent / "sim-orphan.toml").exists()


async def test_the_engine_gets_both_values_in_its_environment_never_its_argv(agent: Agent) -> None:
    pid = agent.status()["engine_pid"]
    environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode()
    assert f"HF_TOKEN={HF_TOKEN}".encode() in environ
    assert f"WANDB_API_KEY={FILE_KEY}".encode() in environ
    assert all(secret not in cmdline for secret in SECRETS)
    page = httpx.get(f"http://127.0.0.1:{agent.metrics_port}/metrics", timeout=10).text  # type: ignore[attr-defined]
    assert "k25_agent_info" in page
    _no_secret(page, "the Prometheus page")
    async with agent.client() as c:
        for path in ("/v1/snapshots", "/v1/events", "/v1/audit", "/v1/bench"):
            _no_secret((await c.get(path)).text, path)
    for path in agent.state_dir.rglob("*"):
        if path.is_file() and path.name != "engine.log":  # the log: test_log_search_... wrote one there
            _no_secret(path.read_text(errors="replace"), str(path))


async def test_a_reattached_agent_relaunches_with_the_real_values_not_the_mark(agent: Agent) -> None:
    """The record keeps the names only; a killed agent that reattaches takes the values from its own
    --profile, so the engine it restarts gets HF_TOKEN, not "<redacted>". (Last in the module: it
    restarts the agent and its engine.)"""
    before = agent.status()["engine_pid"]
    agent.kill()
    agent.start()
    assert agent.wait_state("ready")["engine_pid"] == before
    async with agent.client() as c:
        names = [e["name"] for e in (await c.get("/v1/events")).json()["events"]]
        assert "engine.reattached" in names and "engine.profile_differs" not in names
        assert (await c.post("/v1/engine/restart", json={"drain_timeout_s": 1})).status_code == 202
    after = wait_until(
        lambda: (s := agent.status())["engine_state"] == "ready" and s["engine_pid"] != before and s,
        timeout_s=60,
        what="the restarted engine",
    )
    environ = Path(f"/proc/{after['engine_pid']}/environ").read_bytes().split(b"\0")
    assert f"HF_TOKEN={HF_TOKEN}".encode() in environ and b"HF_TOKEN=<redacted>" not in environ
    _no_secret((agent.state_dir / "engine.json").read_text(), "the engine record after the restart")
