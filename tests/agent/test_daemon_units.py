"""The daemon's pure parts: planning, /proc identity, log rotation and tail, token file, listen rules, stream."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from pydantic import ValidationError

from agent.api.transport import bind_unix
from agent.control.audit import AuditLog
from agent.control.planner import plan_request
from agent.engine import proc
from agent.engine.logfile import EngineLog
from agent.engine.policy import RestartPolicy
from agent.profile import Profile, load_profile
from agent.serve.daemon import redact_lines
from agent.serve.listen import ListenError, parse_listen
from agent.serve.paths import UnsafePathError
from agent.serve.stream import StreamHub
from agent.serve.token import load_or_create_token, token_matches
from agent.sglang import live_control
from agent.wire import ActionRequest, Snapshot

REPO = Path(__file__).resolve().parents[2]
PROFILES = REPO / "profiles"


@pytest.fixture
def sim_profile() -> Profile:
    return load_profile(PROFILES / "local-sim.toml")


def _req(kind: str, value: object) -> ActionRequest:
    return ActionRequest(request_id="req-unit-0001", kind=kind, value=value)  # type: ignore[arg-type]


def _no_named(name: str) -> Profile:
    raise AssertionError("not used")


def test_threshold_is_live_with_the_live_key(sim_profile: Profile) -> None:
    current = sim_profile.speculation.threshold
    wanted = 12 if current != 12 else 13
    draft = plan_request(_req("threshold", wanted), sim_profile, _no_named)
    assert draft.mode == "live"
    assert draft.live_args == {live_control.LIVE_THRESHOLD_KEY: wanted}
    assert [(c.key, c.old, c.new) for c in draft.changes] == [("speculation.threshold", current, wanted)]


def test_threshold_zero_means_no_threshold(sim_profile: Profile) -> None:
    draft = plan_request(_req("threshold", 0), sim_profile, _no_named)
    assert draft.mode == "live"
    assert draft.live_args == {live_control.LIVE_THRESHOLD_KEY: live_control.NO_THRESHOLD}
    assert draft.new_profile is not None and draft.new_profile.speculation.threshold is None


def test_same_threshold_is_noop(sim_profile: Profile) -> None:
    same = sim_profile.speculation.threshold
    assert plan_request(_req("threshold", same), sim_profile, _no_named).mode == "noop"


def test_topk_4_is_a_restart_that_says_adaptive_goes(sim_profile: Profile) -> None:
    draft = plan_request(_req("topk", 4), sim_profile, _no_named)
    assert draft.mode == "restart"
    assert "topk" in draft.reason and "adaptive" in draft.reason
    keys = {c.key for c in draft.changes}
    assert {"speculation.eagle_topk", "speculation.adaptive", "speculation.threshold"} <= keys


@pytest.mark.parametrize(
    ("kind", "value", "field", "name"),
    [
        ("topk", 0, "speculation.eagle_topk", "topk"),
        ("topk", 99, "speculation.eagle_topk", "topk"),
        ("steps", 7, "speculation.num_steps", "steps"),
        ("threshold", -3, "speculation.threshold", "threshold"),
        ("threshold", 5000, "speculation.threshold", "threshold"),
    ],
)
def test_refusals_name_the_field(sim_profile: Profile, kind: str, value: int, field: str, name: str) -> None:
    """The plan names the profile key (``rejected_field``) and its reason the setting and what it takes
    (the catalogue's words), never the schema's "less than or equal to"."""
    draft = plan_request(_req(kind, value), sim_profile, _no_named)
    assert draft.mode == "rejected"
    assert draft.rejected_field == field
    assert draft.reason.startswith(f"{name}: {value} "), draft.reason
    assert "less than or equal" not in draft.reason and "greater than" not in draft.reason


@pytest.mark.parametrize(
    ("kind", "value", "said"),
    [
        ("threshold", "many", "threshold takes a whole number: a running batch size from 1 to 4096"),
        ("threshold", True, "got true or false"),
        ("threshold", 4.0, "got a decimal number"),
        ("steps", 1.5, "steps takes a whole number: a step count built at start-up"),
        ("steps", [], "got a list"),
        ("threshold", {}, "got an object"),
        ("adaptive", None, "adaptive takes true or false"),
        ("apply_profile", None, "profile takes text: the name of a saved profile; got no value"),
    ],
)
def test_a_value_of_the_wrong_type_is_refused_with_what_its_kind_takes(
    kind: str, value: object, said: str
) -> None:
    """Issue 38: 4.0, 1.5, [] or {} named the field and listed pydantic's types; now the request
    itself says what that kind takes, and never echoes the value (it may be megabytes)."""
    with pytest.raises(ValidationError) as caught:
        _req(kind, value)
    [error] = caught.value.errors()
    assert error["loc"] == ("value",) and said in error["msg"], error["msg"]
    assert "Input should be" not in error["msg"] and "many" not in error["msg"]


def test_an_empty_profile_name_is_refused_in_words(sim_profile: Profile) -> None:
    draft = plan_request(_req("apply_profile", ""), sim_profile, _no_named)
    assert draft.mode == "rejected" and "(got an empty name)" in draft.reason


def test_steps_among_prebuilt_are_live(sim_profile: Profile) -> None:
    draft = plan_request(_req("steps", 2), sim_profile, _no_named)
    assert draft.mode == "live"
    assert draft.live_args == {live_control.LIVE_STEPS_KEY: 2}


def test_apply_profile_of_a_broken_file_is_refused(sim_profile: Profile, tmp_path: Path) -> None:
    from agent.control.library import ProfileLibrary

    (tmp_path / "bad.toml").write_text(
        'schema_version = 1\n[identity]\nname = "bad"\n[model]\npath = "/m"\n[server]\ntp_size = 0\n'
    )
    lib = ProfileLibrary(tmp_path)
    draft = plan_request(_req("apply_profile", "bad"), sim_profile, lib.load)
    assert draft.mode == "rejected"
    assert draft.rejected_field == "server.tp_size"


def test_proc_identity_of_a_child_and_after_it_exits() -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE, start_new_session=True
    )
    try:
        stat = proc.read_stat(child.pid)
        assert stat is not None and stat.pgid == child.pid
        assert proc.is_same_process(child.pid, stat.start_ticks)
        assert not proc.is_same_process(
            child.pid, stat.start_ticks + 1
        )  # a reused pid has another start time
        assert proc.group_alive(child.pid)
        # Popen returns while the kernel may still be finishing exec: the cmdline can read empty briefly.
        deadline = time.monotonic() + 10
        while not (cmd := proc.read_cmdline(child.pid)) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert cmd is not None and proc.argv_hash(cmd) == proc.argv_hash(child.args)  # type: ignore[arg-type]
    finally:
        assert child.stdin is not None
        child.stdin.close()
        child.wait(timeout=10)
    assert not proc.is_same_process(child.pid, stat.start_ticks)
    assert not proc.group_alive(child.pid)


def test_backoff_doubles_up_to_the_cap() -> None:
    policy = RestartPolicy(backoff_initial_s=1.0, backoff_max_s=5.0)
    assert [policy.delay(n) for n in (1, 2, 3, 4, 5)] == [1.0, 2.0, 4.0, 5.0, 5.0]


def test_log_rotation_keeps_the_writer_appending(tmp_path: Path) -> None:
    log = EngineLog(tmp_path / "engine.log", max_bytes=100, backups=2)
    fd = log.open_for_engine()
    try:
        for i in range(10):
            os.write(fd, f"line {i:03d} of the engine's log\n".encode())
        assert log.rotate_if_needed()
        os.write(fd, b"after rotation\n")  # the engine's descriptor is still the live file
    finally:
        os.close(fd)
    assert (tmp_path / "engine.log").read_text() == "after rotation\n"
    assert "line 009" in (tmp_path / "engine.log.1").read_text()
    assert log.tail(2) == ["after rotation"]
    assert log.tail(3, search="LINE 00") == [
        "line 007 of the engine's log",
        "line 008 of the engine's log",
        "line 009 of the engine's log",
    ]
    assert not log.rotate_if_needed()


def test_tail_of_a_large_log_reads_only_the_end(tmp_path: Path) -> None:
    path = tmp_path / "big.log"
    path.write_text("".join(f"row {i}\n" for i in range(200_000)))
    assert EngineLog(path).tail(3) == ["row 199997", "row 199998", "row 199999"]


def test_token_file_is_made_0600_and_reused(tmp_path: Path) -> None:
    path = tmp_path / "token"
    token = load_or_create_token(path)
    assert len(token) >= 40
    assert os.stat(path).st_mode & 0o777 == 0o600
    assert load_or_create_token(path) == token
    assert token_matches(token, f"Bearer {token}")
    assert not token_matches(token, f"Bearer {token}x")
    assert not token_matches(token, token)


def test_token_file_readable_by_others_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "token"
    load_or_create_token(path)
    os.chmod(path, 0o644)
    with pytest.raises(UnsafePathError, match="644"):
        load_or_create_token(path)


@pytest.mark.parametrize(
    "text", ["0.0.0.0:8790", "192.168.1.5:8790", "[::]:8790", "example.com:80", "127.0.0.1", ":80"]
)
def test_listen_refuses_anything_but_loopback(text: str) -> None:
    with pytest.raises(ListenError):
        parse_listen(text)


def test_listen_accepts_loopback() -> None:
    assert parse_listen("127.0.0.1:8790") == ("127.0.0.1", 8790)
    assert parse_listen("[::1]:8790") == ("::1", 8790)
    assert parse_listen("localhost:8790") == ("127.0.0.1", 8790)


def test_socket_is_0600_in_a_0700_dir_and_a_live_one_is_not_stolen() -> None:
    import tempfile

    root = Path(tempfile.mkdtemp(prefix="k25u-", dir="/tmp"))
    path = root / "run" / "a.sock"
    sock = bind_unix(path)
    try:
        assert os.stat(path).st_mode & 0o777 == 0o600
        assert os.stat(path.parent).st_mode & 0o777 == 0o700
        with pytest.raises(ListenError, match="already listening"):
            bind_unix(path)
    finally:
        sock.close()
    again = bind_unix(path)  # a stale socket left by a killed agent is replaced
    again.close()


def test_audit_lines_append(tmp_path: Path) -> None:
    audit = AuditLog(tmp_path / "audit.jsonl")
    audit.append(
        operator="ops",
        action={"kind": "threshold"},
        before={"a": 1},
        after={"a": 2},
        result={"status": "applied"},
    )
    audit.append(operator=None, action={"kind": "topk"}, before={}, after={}, result={"status": "failed"})
    lines = audit.read()
    assert [x["action"]["kind"] for x in lines] == ["threshold", "topk"]
    assert set(lines[0]) == {
        "time",
        "id",
        "phase",
        "operator",
        "source",
        "action",
        "before",
        "after",
        "result",
    }
    assert os.stat(tmp_path / "audit.jsonl").st_mode & 0o777 == 0o600


def test_log_redaction_hides_known_secrets_and_key_flags() -> None:
    out = redact_lines(
        ["server_args api_key='sk-abcdef123' x", "--api-key sk-zzz999 --port 1"], ["sk-abcdef123"]
    )
    assert "sk-abcdef123" not in out[0]
    assert "sk-zzz999" not in out[1]


async def test_stream_replays_after_a_cursor_then_follows() -> None:
    hub = StreamHub()
    base = hub.last_seq  # a run's numbering starts at its start time (ms), above any earlier run's
    for _ in range(3):
        hub.publish_snapshot(lambda seq: Snapshot(seq=seq, time=time.time()))
    hub.publish_event("agent.started", "hello")
    got: list[int] = []

    async def reader() -> None:
        async for item in hub.follow(since=base + 2, keepalive_s=30):
            if item is None:  # a keep-alive: only when nothing came for 30 s
                continue
            got.append(item.seq)
            if len(got) == 3:
                return

    task = asyncio.create_task(reader())
    await asyncio.sleep(0)  # let the reader catch up before the live item
    hub.publish_snapshot(lambda seq: Snapshot(seq=seq, time=time.time()))
    await asyncio.wait_for(task, 30)
    assert got == [base + 3, base + 4, base + 5]


async def test_every_route_in_the_schema_wants_the_token(tmp_path: Path) -> None:
    """Walks the OpenAPI schema, so a route added later without auth fails here."""
    import httpx

    from agent.api.app import create_app
    from agent.serve.daemon import Daemon, ServeConfig
    from agent.serve.paths import StatePaths

    profile = load_profile(PROFILES / "local-sim.toml")
    paths = StatePaths(tmp_path / "state").prepare()
    config = ServeConfig(profile, PROFILES / "local-sim.toml", PROFILES, "sim", paths)
    daemon = Daemon(config, token="t" * 43)
    app = create_app(daemon)
    schema = app.openapi()
    checked = 0
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://agent") as client:
        for path, methods in schema["paths"].items():
            url = (
                path.replace("{action_id}", "act-x")
                .replace("{name}", "local-sim")
                .replace("{bench_id}", "b-x")
            )
            for method in methods:
                response = await client.request(
                    method.upper(), url, headers={"Authorization": "Bearer wrong"}
                )
                if path == "/v1/version":
                    assert response.status_code == 200
                else:
                    assert response.status_code == 401, (method, path)
                    checked += 1
    assert checked >= 18
    assert daemon.supervisor.state == "stopped"  # nothing ran
    await daemon.http.aclose()


def test_real_engine_spec_runs_the_stack_python_and_keeps_keys_off_the_command_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agent.engine.spec import sglang_spec

    # The agent's own package path (e.g. PYTHONPATH=/tmp/agent-site on a GPU host) must not reach SGLang.
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "agent-site"))
    monkeypatch.setenv("VIRTUAL_ENV", str(tmp_path / "agent-venv"))
    from agent.profile import parse_profile

    key_file = tmp_path / "api.key"
    key_file.write_text("sk-real-engine-key-123456\n")
    text = (PROFILES / "kimi-k25-eagle3.toml").read_text()
    text = text.replace('venv = "~/.local/share/k25console/stack"', f'venv = "{tmp_path / "stack"}"')
    text = text.replace("[server]\n", f'[server]\napi_key_file = "{key_file}"\n', 1)
    profile = parse_profile(text)
    spec = sglang_spec(profile, tmp_path / "run")
    assert spec.kind == "sglang"
    assert spec.argv[0] == str(tmp_path / "stack" / "bin" / "python")
    assert spec.argv[1:3] == ["-m", "sglang.launch_server"]
    assert (
        spec.argv[spec.argv.index("--port") + 1] == str(profile.server.port)
        and spec.port == profile.server.port
    )
    assert not any("sk-real-engine-key" in a for a in spec.argv)
    config = Path(spec.argv[spec.argv.index("--config") + 1])
    assert "sk-real-engine-key-123456" in config.read_text()
    assert os.stat(config).st_mode & 0o777 == 0o600
    adaptive = Path(spec.argv[spec.argv.index("--speculative-adaptive-config") + 1])
    assert adaptive.exists()
    assert spec.env["SGLANG_ENABLE_PCIE_IPC_ALLREDUCE"] == "1"
    assert "PYTHONPATH" not in spec.env and "VIRTUAL_ENV" not in spec.env
    assert spec.env.get("PATH") == os.environ.get("PATH")


def test_real_engine_is_not_started_on_a_port_someone_holds(tmp_path: Path) -> None:
    import socket as socketlib

    from agent.engine.failure import port_in_use

    with socketlib.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen(1)
        port = holder.getsockname()[1]
        assert port_in_use("127.0.0.1", port)
    assert not port_in_use("127.0.0.1", port)


def test_version_reports_the_installed_stack_manifest_hash_and_a_torn_one_as_unreadable(
    tmp_path: Path,
) -> None:
    import hashlib

    from agent.install.manifest import StackManifest, manifest_path, stack_manifest, write_manifest

    assert stack_manifest(str(tmp_path)) == {"stack_manifest_hash": None, "stack_manifest_problem": None}
    manifest = StackManifest(created_at="2026-12-07T16:00:00Z", profile="local-sim", python_version="3.12",
                             installer="uv", index_url=None, find_links=[], sglang_version="0.5.23",
                             packages={"sglang": "0.5.23"}, packages_fingerprint="f" * 64,
                             patch_set_sha256=None, patches=[], patched_files={})  # fmt: skip
    path = write_manifest(tmp_path, manifest)
    whole = path.read_bytes()
    assert stack_manifest(str(tmp_path)) == {
        "stack_manifest_hash": hashlib.sha256(whole).hexdigest(),
        "stack_manifest_problem": None,
    }
    path.write_bytes(whole[: len(whole) // 2])  # torn inside the file
    torn = stack_manifest(str(tmp_path))
    assert torn["stack_manifest_hash"] is None
    assert (
        torn["stack_manifest_problem"] == f"{manifest_path(tmp_path)}: unreadable: not JSON (torn or damaged)"
    )
