"""Profile writes through the agent's API (a real ``agent serve`` on its socket): a write names the
version it replaces (If-Match, 428 without, 412 when stale), the file name and ``identity.name``
agree, a production profile is replaced only with its name repeated, and every replaced file is kept.

Issue 25: a PUT overwrote a production profile with another profile's body, with no guard, no name
check and no version check, and two saves lost the original.
"""

from __future__ import annotations

import asyncio
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from daemon_harness import PROFILES, Agent, new_root, write_profile

from agent.profile.versions import list_versions, profile_digest


@pytest.fixture(scope="module")
def agent() -> Iterator[Agent]:
    """An agent on local-sim (renamed), beside a production profile and a plain one."""
    root = new_root()
    running = write_profile(root, "sim-writes")
    text = (PROFILES / "kimi-k25-eagle3.toml").read_text()
    assert "production = true" in text  # the shipped production profile
    (running.parent / "kimi-k25-eagle3.toml").write_text("# the operator's own notes\n" + text)
    agent = Agent(root, running)
    try:
        yield agent.start()
    finally:
        agent.cleanup()
        shutil.rmtree(root, ignore_errors=True)


def _renamed(text: str, old: str, new: str) -> str:
    return text.replace(f'name = "{old}"', f'name = "{new}"', 1)


def _local(name: str, description: str = "") -> str:
    text = _renamed((PROFILES / "local-sim.toml").read_text(), "local-sim", name)
    return text.replace('description = "', f'description = "{description}', 1) if description else text


def _etag(digest: str) -> dict[str, str]:
    return {"If-Match": f'"{digest}"'}


async def test_the_issue_case_another_profiles_body_over_production_is_refused(agent: Agent) -> None:
    prod = agent.profile.parent / "kimi-k25-eagle3.toml"
    before = prod.read_bytes()
    async with agent.client() as c:
        read = await c.get("/v1/profiles/kimi-k25-eagle3")
        digest = read.json()["digest"]
        assert read.headers["ETag"] == f'"{digest}"' and digest == profile_digest(before)
        listed = {p["name"]: p for p in (await c.get("/v1/profiles")).json()["profiles"]}
        assert (
            listed["kimi-k25-eagle3"]["production"] is True and listed["kimi-k25-eagle3"]["digest"] == digest
        )
        blind = await c.put("/v1/profiles/kimi-k25-eagle3", json={"toml": _local("local-sim")})
        assert blind.status_code == 428, blind.text  # preconditions first, as HTTP evaluates them
        assert "If-Match" in blind.json()["detail"] and digest in blind.json()["detail"]
        named = await c.put(
            "/v1/profiles/kimi-k25-eagle3", json={"toml": _local("local-sim")}, headers=_etag(digest)
        )
        assert named.status_code == 422, named.text
        issues = named.json()["detail"]["issues"]
        assert [i["key"] for i in issues] == ["identity.name"]
        assert "“kimi-k25-eagle3”" in issues[0]["rule"] and "got “local-sim”" in issues[0]["rule"]
        assert issues[0]["file"].endswith("kimi-k25-eagle3.toml")
        # its own body, edited, with the right version: still a production profile, so its name is wanted
        edited = _local("kimi-k25-eagle3", "edited ")
        unconfirmed = await c.put(
            "/v1/profiles/kimi-k25-eagle3", json={"toml": edited}, headers=_etag(digest)
        )
        assert unconfirmed.status_code == 422
        (issue,) = unconfirmed.json()["detail"]["issues"]
        assert issue["key"] == "confirm_production" and "production profile" in issue["rule"]
        wrong = await c.put(
            "/v1/profiles/kimi-k25-eagle3",
            json={"toml": edited, "confirm_production": "kimi"},
            headers=_etag(digest),
        )
        assert wrong.status_code == 422 and "(got “kimi”)" in wrong.json()["detail"]["issues"][0]["rule"]
        assert prod.read_bytes() == before  # every refusal wrote nothing
        assert list_versions(prod) == []
        saved = await c.put(
            "/v1/profiles/kimi-k25-eagle3",
            json={"toml": edited, "confirm_production": "kimi-k25-eagle3"},
            headers=_etag(digest),
        )
        assert saved.status_code == 200, saved.text
    assert saved.json()["digest"] == profile_digest(prod.read_bytes()) != digest
    assert saved.headers["ETag"] == f'"{saved.json()["digest"]}"'
    assert [v.read_bytes() for v in list_versions(prod)] == [before]  # the original, comments and all


async def test_a_stale_write_is_412_and_a_fresh_one_goes_through(agent: Agent) -> None:
    async with agent.client() as c:
        created = await c.put(
            "/v1/profiles/tuned", json={"toml": _local("tuned", "one ")}, headers={"If-None-Match": "*"}
        )
        assert created.status_code == 200, created.text
        first = created.json()["digest"]
        again = await c.put(
            "/v1/profiles/tuned", json={"toml": _local("tuned", "two ")}, headers={"If-None-Match": "*"}
        )
        assert again.status_code == 412 and "already exists" in again.json()["detail"]
        second = await c.put(
            "/v1/profiles/tuned", json={"toml": _local("tuned", "two ")}, headers=_etag(first)
        )
        assert second.status_code == 200, second.text
        stale = await c.put(
            "/v1/profiles/tuned", json={"toml": _local("tuned", "three ")}, headers=_etag(first)
        )
        assert stale.status_code == 412, stale.text
        assert "changed since it was read" in stale.json()["detail"]
        assert second.json()["digest"] in stale.json()["detail"]
        assert "two " in (await c.get("/v1/profiles/tuned")).json()["toml"]
        missing = await c.put("/v1/profiles/absent", json={"toml": _local("absent")}, headers=_etag(first))
        assert missing.status_code == 412 and "does not exist" in missing.json()["detail"]
        listed = {p["name"]: p for p in (await c.get("/v1/profiles")).json()["profiles"]}
    assert listed["tuned"]["digest"] == second.json()["digest"]
    assert listed["tuned"]["production"] is False
    assert not (agent.profile.parent / "absent.toml").exists()


async def test_two_writes_naming_the_same_version_one_wins_one_is_stale(agent: Agent) -> None:
    async with agent.client() as c:
        made = await c.put("/v1/profiles/race", json={"toml": _local("race")}, headers={"If-None-Match": "*"})
        digest = made.json()["digest"]
        answers = await asyncio.gather(
            *(
                c.put(
                    "/v1/profiles/race", json={"toml": _local("race", f"writer {n} ")}, headers=_etag(digest)
                )
                for n in range(6)
            )
        )
    assert sorted(a.status_code for a in answers) == [200] + [412] * 5, [a.text for a in answers]
    assert len(list_versions(agent.profile.parent / "race.toml")) == 1


async def test_delete_names_the_version_keeps_it_and_spares_the_running_profile(agent: Agent) -> None:
    path = agent.profile.parent / "gone.toml"
    async with agent.client() as c:
        made = await c.put("/v1/profiles/gone", json={"toml": _local("gone")}, headers={"If-None-Match": "*"})
        digest = made.json()["digest"]
        blind = await c.delete("/v1/profiles/gone")
        assert blind.status_code == 428 and path.exists()
        stale = await c.delete("/v1/profiles/gone", headers=_etag("0" * 64))
        assert stale.status_code == 412 and path.exists()
        done = await c.delete("/v1/profiles/gone", headers=_etag(digest))
        assert done.status_code == 200 and done.json() == {"name": "gone", "deleted": True}
        assert (await c.get("/v1/profiles/gone")).status_code == 404
        running = await c.get("/v1/profiles/sim-writes")
        kept = await c.delete("/v1/profiles/sim-writes", headers=_etag(running.json()["digest"]))
        assert kept.status_code == 409 and agent.profile.exists()
        traversal = await c.delete("/v1/profiles/..%2Fescape", headers=_etag(digest))
        assert traversal.status_code in (404, 422)
    assert not path.exists()
    assert [profile_digest(v.read_bytes()) for v in list_versions(path)] == [digest]


async def test_a_write_without_the_token_changes_nothing(agent: Agent) -> None:
    prod = agent.profile.parent / "kimi-k25-eagle3.toml"
    before = prod.read_bytes()
    async with agent.client(token=None) as c:
        answer = await c.put("/v1/profiles/kimi-k25-eagle3", json={"toml": "x"}, headers=_etag("*"))
    assert answer.status_code == 401 and prod.read_bytes() == before


def test_the_schema_names_the_guard_headers(agent: Agent) -> None:
    with agent.sync_client() as c:
        schema = c.get("/openapi.json").json()
    params = {p["name"]: p["in"] for p in schema["paths"]["/v1/profiles/{name}"]["put"]["parameters"]}
    assert params["if-match"] == "header" and params["if-none-match"] == "header"
    assert "delete" in schema["paths"]["/v1/profiles/{name}"]


def _cli(agent: Agent, *args: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "agent.cli.main", "profile", *args, "--state-dir", str(agent.state_dir)]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)


def test_the_cli_saves_new_profiles_and_replaces_only_the_version_it_names(
    agent: Agent, tmp_path: Path
) -> None:
    source = tmp_path / "cli-made.toml"
    source.write_text(_local("cli-made", "first "))
    made = _cli(agent, "save", "cli-made", str(source))
    assert made.returncode == 0 and "saved cli-made" in made.stdout, made.stderr
    blind = _cli(agent, "save", "cli-made", str(source))
    assert blind.returncode == 1 and "already exists" in blind.stderr and "HTTP 412" in blind.stderr
    read = _cli(agent, "get", "cli-made", "-o", str(tmp_path / "copy.toml"))
    assert read.returncode == 0, read.stderr
    digest = re.search(r"digest ([0-9a-f]{64})", read.stderr)[1]  # type: ignore[index]
    assert (tmp_path / "copy.toml").read_text() == (agent.profile.parent / "cli-made.toml").read_text()
    source.write_text(_local("cli-made", "second "))
    replaced = _cli(agent, "save", "cli-made", str(source), "--replaces", digest)
    assert replaced.returncode == 0, replaced.stderr
    stale = _cli(agent, "save", "cli-made", str(source), "--replaces", digest)
    assert stale.returncode == 1 and "changed since it was read" in stale.stderr
    source.write_text(_local("other"))
    now = re.search(r"digest ([0-9a-f]{64})", replaced.stdout)[1]  # type: ignore[index]
    misnamed = _cli(agent, "save", "cli-made", str(source), "--replaces", now)
    assert misnamed.returncode == 1 and "identity.name" in misnamed.stderr
    assert "second " in (agent.profile.parent / "cli-made.toml").read_text()
