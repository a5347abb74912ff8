"""Bad and hostile input: every one gets a clear error naming what is wrong, and changes nothing."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import schemathesis
from agent_harness import REPO, AgentProc, prepare_profiles, running_agent, short_root
from hypothesis import HealthCheck, given, settings

from .console_kit import engine_live_state
from .waiting import wait_until

LOCAL_SIM = (Path(__file__).resolve().parents[2] / "profiles" / "local-sim.toml").read_text()


def _with(text: str, old: str, new: str) -> str:
    assert old in text, old
    return text.replace(old, new, 1)


def _set(text: str, key: str, value: str) -> str:
    """Replace the value of the one top-level-in-its-section line ``key = ...`` (whatever it holds now)."""
    changed, count = re.subn(rf"(?m)^{re.escape(key)} = .*$", lambda _: f"{key} = {value}", text)
    assert count == 1, f"{key} appears {count} times"
    return changed


HOSTILE_PROFILES: dict[str, tuple[str, str, str]] = {
    # case: (toml, key the error must name ("" = the file), words the rule must contain)
    "huge": (LOCAL_SIM + "#" * (300 * 1024), "", ""),
    "not_toml": ("[server\ntp_size = 8", "", "not valid TOML"),
    "wrong_type": (_set(LOCAL_SIM, "tp_size", '"eight"'), "server.tp_size", "integer"),
    "unknown_key": (
        _with(_set(LOCAL_SIM, "tp_size", "8"), "tp_size = 8", "tp_sise = 8"),
        "server.tp_sise",
        "unknown key",
    ),
    "dotdot_model_path": (
        _set(LOCAL_SIM, "path", '"/models/../../etc/shadow"'),
        "model.path",
        "'..'",
    ),
    "dotdot_key_file": (
        _with(LOCAL_SIM, "[server]\n", '[server]\napi_key_file = "../../../root/.ssh/id_ed25519"\n'),
        "server.api_key_file",
        "'..'",
    ),
    "option_as_model_path": (
        _set(LOCAL_SIM, "path", '"--help"'),
        "model.path",
        "'-'",
    ),
    "extra_flags_not_a_flag": (
        _with(LOCAL_SIM, "[server]\n", '[server]\nextra_flags = ["rm -rf /"]\n'),
        "server.extra_flags",
        "flag",
    ),
    "api_key_on_the_command_line": (
        _with(LOCAL_SIM, "[server]\n", '[server]\nextra_flags = ["--api-key", "sk-visible-in-proc"]\n'),
        "server.extra_flags",
        "api_key_file",
    ),
    "nul_in_path": (_set(LOCAL_SIM, "path", '"/models/a\\u0000b"'), "model.path", "NUL"),
    "negative_threshold": (_set(LOCAL_SIM, "threshold", "-4"), "speculation.threshold", "1"),
    "env_name_injection": (
        LOCAL_SIM + '\n[server.env]\n"LD_PRELOAD=/tmp/x.so; echo" = "1"\n',
        "server.env",
        "environment variable name",
    ),
}


@pytest.mark.parametrize("case", sorted(HOSTILE_PROFILES))
def test_hostile_profile_is_refused_naming_the_key_and_nothing_is_written(
    shared_agent: AgentProc, case: str
) -> None:
    text, key, words = HOSTILE_PROFILES[case]
    before = sorted(p.name for p in shared_agent.profiles_dir.iterdir())
    with shared_agent.client() as c:
        response = c.put(f"/v1/profiles/hostile-{case.replace('_', '-')}", json={"toml": text})
    assert response.status_code == 422, response.text
    detail = response.json()["detail"]
    if case == "huge":
        # Refused by the request model before any parsing: the field and the limit are named.
        assert any(item["loc"][-1] == "toml" and "262144" in item["msg"] for item in detail), detail
    else:
        issues = detail["issues"]
        assert issues, detail
        matching = [i for i in issues if i["key"].startswith(key) and words in i["rule"]]
        assert matching, f"no issue names {key!r} with {words!r}: {issues}"
        assert all(i["file"].endswith(f"hostile-{case.replace('_', '-')}.toml") for i in issues)
    assert sorted(p.name for p in shared_agent.profiles_dir.iterdir()) == before


@pytest.mark.parametrize(
    "name", ["..", "../escape", "..%2F..%2Fescape", ".hidden", "a" * 65, "x.toml", "-rf"]
)
def test_profile_name_that_is_a_path_is_refused_and_nothing_is_written(
    shared_agent: AgentProc, name: str
) -> None:
    before = sorted(p.name for p in shared_agent.root.rglob("*"))
    with shared_agent.client() as c:
        response = c.put(f"/v1/profiles/{name}", json={"toml": LOCAL_SIM})
    assert response.status_code in (404, 405, 422), response.text
    assert sorted(p.name for p in shared_agent.root.rglob("*")) == before
    assert not list(Path("/tmp").glob("escape*"))


@pytest.mark.parametrize("case", ["huge", "unknown_key", "dotdot_model_path"])
def test_agent_serve_refuses_to_start_on_a_hostile_profile_naming_the_key(tmp_path: Path, case: str) -> None:
    text, key, words = HOSTILE_PROFILES[case]
    profile = tmp_path / "hostile.toml"
    profile.write_text(text)
    argv = [sys.executable, "-m", "agent.cli.main", "serve", "--engine", "sim", "--profile", str(profile)]
    argv += ["--state-dir", str(tmp_path / "state"), "--gpus", "none"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, cwd=REPO)
    assert done.returncode == 2, done.stderr
    assert str(profile) in done.stderr
    assert key in done.stderr and words in done.stderr if key else "262144" in done.stderr, done.stderr
    assert not (tmp_path / "state" / "engine.json").exists(), "an engine was started anyway"


# -- shell metacharacters reach the engine's argv as single items, never a shell -------------------


@pytest.fixture
def argv_recorder() -> Iterator[Path]:
    """A stand-in for the stack venv's interpreter: records the argv it was started with, then waits
    to be stopped. It replaces the SGLang process only, the edge tests cannot run here."""
    root = short_root("k25argv-")
    python = root / "venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(
        f"#!{sys.executable}\n"
        "import json, sys, time\n"
        f"with open({str(root / 'argv.json')!r}, 'w') as fh:\n"
        "    json.dump(sys.argv, fh)\n"
        "time.sleep(120)\n"
    )
    python.chmod(0o700)
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_shell_metacharacters_in_model_path_and_extra_flags_reach_argv_as_single_items(
    argv_recorder: Path,
) -> None:
    root = argv_recorder
    canary = root / "canary"
    model_path = f"/models/Kimi K2.5;touch {canary}1 #$(touch {canary}2)`touch {canary}3`|&&>{canary}4"
    flags = ["--chat-template", f"; touch {canary}5 #", "--tokenizer-path", f"$(touch {canary}6)"]

    def hostile(text: str) -> str:
        text = _set(text, "path", json.dumps(model_path))
        text = _with(text, "[server]\n", f"[server]\nextra_flags = {json.dumps(flags)}\n")
        return _with(text, "[stack.gpus]", f'[stack]\nvenv = "{root / "venv"}"\n\n[stack.gpus]')

    agent = AgentProc(root=root, profile=prepare_profiles(root, edit=hostile), engine="sglang")
    try:
        agent.start(wait_engine_ready=False)
        argv_file = root / "argv.json"
        wait_until(argv_file.exists, timeout_s=30, what="the engine to be launched")
        argv = wait_until(lambda: json.loads(argv_file.read_text()), timeout_s=5, what="the argv")
    finally:
        agent.stop()
    assert argv[:3] == [str(root / "venv" / "bin" / "python"), "-m", "sglang.launch_server"]
    assert argv[argv.index("--model-path") + 1] == model_path
    assert argv.count(model_path) == 1
    tail = argv[argv.index("--chat-template") :]
    assert tail == flags
    assert not list(root.glob("canary*")), "a shell ran part of the profile"
    # The adaptive config it names was written where the agent keeps its state.
    config = Path(argv[argv.index("--speculative-adaptive-config") + 1])
    assert config.is_relative_to(agent.state_dir)


# -- control values out of range ----------------------------------------------------------------------

OUT_OF_RANGE: list[tuple[str, Any]] = [
    ("threshold", -1),
    ("threshold", 100_000),
    ("threshold", "four"),
    ("threshold", 4.5),
    ("steps", 9),
    ("steps", -7),
    ("steps", "3; reboot"),
    ("topk", 0),
    ("topk", 999),
    ("adaptive", "yes"),
    ("apply_profile", "../../etc/passwd"),
    ("apply_profile", "no-such-profile"),
]


@pytest.mark.parametrize(("kind", "value"), OUT_OF_RANGE)
async def test_out_of_range_control_value_is_rejected_and_changes_nothing(
    shared_agent: AgentProc, kind: str, value: Any
) -> None:
    before = await engine_live_state(shared_agent)
    status_before = shared_agent.status()
    request = {"request_id": f"e2e-bad-{kind}-{abs(hash(str(value))) % 10**8}", "kind": kind, "value": value}
    with shared_agent.client() as c:
        response = c.post("/v1/actions", json=request)
        if response.status_code == 200:
            plan = response.json()
            assert plan["mode"] == "rejected", plan
            assert plan["reason"], "a rejection must say why"
            assert plan["rejected_field"], plan
            confirm = c.post(f"/v1/actions/{plan['action_id']}/confirm").json()
            assert confirm["status"] == "rejected"
        else:
            assert response.status_code == 422, response.text
            assert "value" in json.dumps(response.json()["detail"])
    assert await engine_live_state(shared_agent) == before
    status = shared_agent.status()
    assert status["engine_pid"] == status_before["engine_pid"]
    assert status["engine_restarts"] == status_before["engine_restarts"]


# -- the API under generated input: schemathesis over the real socket ----------------------------------

FUZZ_EXCLUDED = {
    ("GET", "/v1/stream"),  # never ends by design
    ("POST", "/v1/agent/stop"),  # stops the agent under test
    ("POST", "/v1/engine/stop"),
    ("POST", "/v1/engine/restart"),
    ("POST", "/v1/engine/start"),
    ("POST", "/v1/bench"),  # a valid body starts a real load run on two shared CPU cores
}
FUZZ_EXAMPLES = 12


def _send(client: httpx.Client, kwargs: dict[str, Any]) -> httpx.Response:
    body: dict[str, Any] = {}
    if "json" in kwargs:
        body["json"] = kwargs["json"]
    elif "data" in kwargs:
        body["content"] = (
            kwargs["data"] if isinstance(kwargs["data"], bytes | str) else json.dumps(kwargs["data"])
        )
    return client.request(
        kwargs["method"],
        kwargs["url"],
        params=kwargs.get("params"),
        headers={k: v for k, v in kwargs.get("headers", {}).items() if k.lower() != "authorization"},
        **body,
    )


def test_generated_requests_to_every_route_never_get_a_server_error() -> None:
    """A bounded schemathesis run (derandomized, so CI is repeatable) over the agent's own OpenAPI
    schema, sent through its real UNIX socket with the token. Not one 5xx."""
    with running_agent() as agent:
        with agent.client() as c:
            raw = c.get("/openapi.json").json()
        schema = schemathesis.openapi.from_dict(raw)
        operations = [r.ok() for r in schema.get_all_operations()]
        fuzzed = [op for op in operations if (op.method.upper(), op.path) not in FUZZ_EXCLUDED]
        assert len(fuzzed) >= 15, [op.label for op in operations]
        server_errors: list[str] = []
        statuses: dict[int, int] = {}
        with agent.client(timeout_s=15) as c:
            for op in fuzzed:

                @settings(
                    max_examples=FUZZ_EXAMPLES,
                    deadline=None,
                    derandomize=True,
                    database=None,
                    suppress_health_check=list(HealthCheck),
                )
                @given(case=op.as_strategy())
                def one(case: Any) -> None:
                    response = _send(c, case.as_transport_kwargs(base_url="http://agent"))
                    statuses[response.status_code] = statuses.get(response.status_code, 0) + 1
                    if response.status_code >= 500:
                        server_errors.append(f"{case.method} {case.formatted_path}: {response.status_code}")

                one()
        assert agent.proc is not None and agent.proc.poll() is None, "the agent died under fuzzing"
        assert not server_errors, server_errors
        assert sum(statuses.values()) >= 3 * len(fuzzed), statuses
        assert statuses.get(200, 0) > 0 and statuses.get(422, 0) > 0, statuses  # both valid and invalid
        print(f"fuzzed {len(fuzzed)} operations: {statuses}")
        assert "Traceback" not in agent.output(), agent.output()[-3000:]


@pytest.mark.parametrize("token", ["", "wrong-token", "Bearer", "x" * 5000])
def test_every_route_refuses_a_missing_or_wrong_token_with_401(shared_agent: AgentProc, token: str) -> None:
    with shared_agent.client() as c:
        raw = c.get("/openapi.json").json()
    headers = {} if not token else {"Authorization": f"Bearer {token}"}
    with httpx.Client(
        transport=httpx.HTTPTransport(uds=str(shared_agent.socket)), base_url="http://agent", timeout=10
    ) as bare:
        for path, methods in raw["paths"].items():
            concrete = path.replace("{action_id}", "act-x").replace("{name}", "local-sim")
            concrete = concrete.replace("{bench_id}", "b-x")
            for method in methods:
                if path == "/v1/version":
                    continue
                response = bare.request(method.upper(), concrete, headers=headers, json={})
                assert response.status_code == 401, f"{method.upper()} {path}: {response.status_code}"
                assert "token" in response.json()["detail"].lower()
