"""Secrets in ``server.extra_flags`` and paths in ``server.env_files`` (issue 38, items 3 and 11).

A real ``agent serve --engine sim`` whose profile passes ``--ssl-keyfile-password`` in its extra flags:
the value after the flag is hidden by the flag's name in every answer (the profile read, the running
profile, a diff, an apply_profile plan, the audit, the events), in the engine record and the engine's
profile copy, and ``agent profile validate`` warns. ``server.env_files`` names files: their paths read
the same on both sides of every diff and plan and in every view of a profile, never ``<redacted>``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator

import pytest
from daemon_harness import ENGINE_KEY, REPO, Agent, new_root, write_profile

PASSWORD = "kf-pass-" + "Zr4q8Lw2" * 3
"""The key file's password, in extra_flags as two items: the flag, then the value."""
OTHER_PASSWORD = PASSWORD[::-1]
TOKEN_FILE = "/etc/k25console/hf.token"
OTHER_TOKEN_FILE = "/etc/k25console/hf-other.token"


def _with_flags(text: str, name: str, password: str, token_file: str) -> str:
    text = text.replace('name = "sim-flags"', f'name = "{name}"')
    text = text.replace(
        "[server]\n",
        f'[server]\nextra_flags = ["--ssl-keyfile-password", "{password}", "--schedule-policy", "lpm"]\n',
        1,
    )
    return text + f'\n[server.env_files]\nHF_TOKEN = "{token_file}"\n'


@pytest.fixture(scope="module")
def agent() -> Iterator[Agent]:
    root = new_root()
    key_file = root / "engine.key"
    key_file.write_text(ENGINE_KEY + "\n")
    key_file.chmod(0o600)
    for path in (TOKEN_FILE, OTHER_TOKEN_FILE):
        assert not path.startswith(str(root))  # named only: the sim reads no env file that is absent
    profile = write_profile(root, "sim-flags", key_file=key_file)
    base = profile.read_text()
    profile.write_text(_with_flags(base, "sim-flags", PASSWORD, TOKEN_FILE).replace(
        f'\n[server.env_files]\nHF_TOKEN = "{TOKEN_FILE}"\n', "\n"
    ))  # fmt: skip
    (profile.parent / "sim-other.toml").write_text(
        _with_flags(base, "sim-other", OTHER_PASSWORD, OTHER_TOKEN_FILE)
    )
    agent = Agent(root, profile)
    try:
        agent.start()
        agent.wait_state("ready")
        yield agent
    finally:
        agent.cleanup()
        shutil.rmtree(root, ignore_errors=True)


def _hidden(text: str, where: str) -> None:
    for secret in (PASSWORD, OTHER_PASSWORD):
        assert secret not in text, f"the key file's password in {where}"
        assert secret[:10] not in text, f"a piece of the password in {where}"


async def test_a_secret_flags_value_never_comes_back(agent: Agent) -> None:
    async with agent.client() as c:
        read = (await c.get("/v1/profiles/sim-flags")).json()
        running = (await c.get("/v1/profile")).json()
        diff = (await c.get("/v1/profiles/sim-other/diff")).json()
        plan = await c.post(
            "/v1/actions", json={"request_id": "flags-plan-1", "kind": "apply_profile", "value": "sim-other"}
        )
        assert plan.status_code == 200, plan.text
        cancel = await c.post(f"/v1/actions/{plan.json()['action_id']}/cancel", json={"operator": "test"})
        assert cancel.status_code == 200
        answers = {
            "profile read": json.dumps(read),
            "running profile": json.dumps(running),
            "diff": json.dumps(diff),
            "plan": plan.text,
            "audit": (await c.get("/v1/audit")).text,
            "events": (await c.get("/v1/events")).text,
            "snapshots": (await c.get("/v1/snapshots")).text,
        }
    for where, text in answers.items():
        _hidden(text, where)
    flags = ["--ssl-keyfile-password", "<redacted>", "--schedule-policy", "lpm"]
    assert (
        read["profile"]["server"]["extra_flags"] == flags
        and running["profile"]["server"]["extra_flags"] == flags
    )
    assert '"--ssl-keyfile-password", "<redacted>"' in read["toml"]  # the file's own text, hidden in place
    changed = next(ch for ch in diff["changes"] if ch["key"] == "server.extra_flags")
    assert changed["old"] == changed["new"] == flags  # the two passwords differ: shown as one hidden value
    planned = next(ch for ch in plan.json()["changes"] if ch["key"] == "server.extra_flags")
    assert planned["old"] == planned["new"] == flags
    for kept in (agent.state_dir / "engine.json", agent.state_dir / "engine" / "engine-profile.toml"):
        _hidden(kept.read_text(), str(kept))
        assert "--ssl-keyfile-password" in kept.read_text()


def test_validate_warns_on_a_secret_in_extra_flags(agent: Agent) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "agent.cli.main", "profile", "validate", str(agent.profile)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
    )
    said = done.stdout + done.stderr
    assert "server.extra_flags" in said and "--ssl-keyfile-password takes a secret" in said, said
    _hidden(said, "agent profile validate")


async def test_env_files_paths_read_the_same_everywhere(agent: Agent) -> None:
    """A path is no secret: shown as it is on both sides of a diff and a plan, and in the file's text
    as in the parsed profile (it was ``<redacted>`` in one and a path in the other)."""
    async with agent.client() as c:
        other = (await c.get("/v1/profiles/sim-other")).json()
        diff = (await c.get("/v1/profiles/sim-other/diff")).json()
        plan = await c.post(
            "/v1/actions", json={"request_id": "flags-plan-2", "kind": "apply_profile", "value": "sim-other"}
        )
        await c.post(f"/v1/actions/{plan.json()['action_id']}/cancel", json={"operator": "test"})
    assert other["profile"]["server"]["env_files"] == {"HF_TOKEN": OTHER_TOKEN_FILE}
    assert f'HF_TOKEN = "{OTHER_TOKEN_FILE}"' in other["toml"]
    assert "<redacted>" not in json.dumps([c for c in diff["changes"] if "env_files" in c["key"]])
    changed = next(ch for ch in diff["changes"] if ch["key"] == "server.env_files.HF_TOKEN")
    assert (changed["old"], changed["new"]) == (None, OTHER_TOKEN_FILE)
    planned = next(ch for ch in plan.json()["changes"] if ch["key"] == "server.env_files.HF_TOKEN")
    assert (planned["old"], planned["new"]) == (None, OTHER_TOKEN_FILE)
