"""``agent serve --engine sim`` end to end: stream, actions, supervision, reattach, auth, secrets."""

from __future__ import annotations

import json
import os
import re
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from daemon_harness import ENGINE_KEY, REPO, Agent, pid_alive, read_stream

from agent.sglang import live_control
from agent.wire import EVENT, Plan, Snapshot
from agent.wire.events import EngineEvent

pytestmark = pytest.mark.slow


def _engine_info(agent: Agent) -> dict[str, Any]:
    url = agent.status()["engine_url"]
    response = httpx.get(url + "/server_info", headers={"Authorization": f"Bearer {ENGINE_KEY}"}, timeout=10)
    response.raise_for_status()
    data: dict[str, Any] = response.json()
    return data


def _audit_lines(agent: Agent) -> list[dict[str, Any]]:
    """The outcome lines (each change also has its intent line, written before it was applied)."""
    path = agent.state_dir / "audit.jsonl"
    lines = [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []
    return [x for x in lines if x["phase"] != "intent"]


# ---- stream -----------------------------------------------------------------------------------------


async def test_stream_at_4hz_gives_18_valid_snapshots_in_5s(shared_agent: Agent) -> None:
    async with shared_agent.client() as c:
        r = await c.put("/v1/telemetry", json={"tick_interval_s": 0.25})
        assert r.status_code == 200
        since = (await c.get("/v1/status")).json()["last_seq"]
        started = time.monotonic()
        snaps: list[Snapshot] = []

        def five_seconds(items: list[tuple[str, dict[str, Any]]]) -> bool:
            if items and items[-1][0] == "snapshot":
                snaps.append(Snapshot.model_validate(items[-1][1]))
            return time.monotonic() - started >= 5.0

        await read_stream(c, since, five_seconds, timeout_s=15)
        await c.put("/v1/telemetry", json={"tick_interval_s": 1.0})
    assert len(snaps) >= 18
    seqs = [s.seq for s in snaps]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs) and seqs[0] > since
    assert {s.engine_state for s in snaps} == {"ready"}
    assert all(s.engine_kind == "sim" and s.profile_name == "sim-shared" for s in snaps)
    assert any(s.speculation.configured for s in snaps)


async def test_stream_catches_up_from_a_cursor(shared_agent: Agent) -> None:
    async with shared_agent.client() as c:
        events = (await c.get("/v1/events")).json()["events"]
        first = events[0]["seq"]
        items = await read_stream(c, first - 1, lambda it: len(it) >= 3, timeout_s=10)
    assert items[0] == ("event", events[0])  # replayed, not only live
    assert items[0][1]["name"] == "agent.started"


async def test_tick_interval_outside_range_is_refused(shared_agent: Agent) -> None:
    async with shared_agent.client() as c:
        r = await c.put("/v1/telemetry", json={"tick_interval_s": 0.1})
    assert r.status_code == 422
    assert "tick_interval_s" in r.text


# ---- actions ----------------------------------------------------------------------------------------


async def test_threshold_applies_live_once_and_is_audited(shared_agent: Agent) -> None:
    current = _engine_info(shared_agent)["internal_states"][0][live_control.READBACK_FIELD]["threshold"]
    wanted = 9 if current != 9 else 11
    body = {
        "request_id": f"thr-{wanted}-{time.time_ns()}",
        "kind": "threshold",
        "value": wanted,
        "operator": "ops",
    }
    async with shared_agent.client() as c:
        plan = Plan.model_validate((await c.post("/v1/actions", json=body)).json())
        assert plan.mode == "live"
        assert any(ch.key == "speculation.threshold" and ch.new == wanted for ch in plan.changes)
        again = Plan.model_validate((await c.post("/v1/actions", json=body)).json())
        assert again.action_id == plan.action_id  # the same request id is answered, not planned again
        first = (await c.post(f"/v1/actions/{plan.action_id}/confirm")).json()
        second = (await c.post(f"/v1/actions/{plan.action_id}/confirm")).json()
        events = (await c.get("/v1/events")).json()["events"]
    assert first["status"] == "applied", first
    assert second == first  # confirmed twice, applied once
    live = _engine_info(shared_agent)["internal_states"][0][live_control.READBACK_FIELD]
    assert live["threshold"] == wanted
    mine = [a for a in _audit_lines(shared_agent) if a["action"].get("action_id") == plan.action_id]
    assert len(mine) == 1
    assert mine[0]["operator"] == "ops"
    assert mine[0]["before"] == {"speculation.threshold": current or None}  # 0 on the wire is "unset"
    assert mine[0]["after"] == {"speculation.threshold": wanted}
    assert mine[0]["result"]["status"] == "applied"
    applied = [
        e for e in events if e["name"] == "action.applied" and e["data"]["action_id"] == plan.action_id
    ]
    assert len(applied) == 1


async def test_topk_4_plans_a_restart_and_says_why(shared_agent: Agent) -> None:
    body = {"request_id": f"topk4-{time.time_ns()}", "kind": "topk", "value": 4}
    async with shared_agent.client() as c:
        plan = Plan.model_validate((await c.post("/v1/actions", json=body)).json())
    assert plan.mode == "restart"
    assert "topk" in plan.reason and "restart" in plan.reason
    assert plan.expected_downtime_s is not None and plan.expected_downtime_s > 0
    assert plan.drain_timeout_s == 5
    assert any(ch.key == "speculation.eagle_topk" and ch.new == 4 for ch in plan.changes)


async def test_topk_0_is_refused_naming_the_field(shared_agent: Agent) -> None:
    before = _engine_info(shared_agent)["internal_states"][0][live_control.READBACK_FIELD]
    body = {"request_id": f"topk0-{time.time_ns()}", "kind": "topk", "value": 0}
    async with shared_agent.client() as c:
        plan = Plan.model_validate((await c.post("/v1/actions", json=body)).json())
        confirm = (await c.post(f"/v1/actions/{plan.action_id}/confirm")).json()
    assert plan.mode == "rejected"
    assert plan.rejected_field == "speculation.eagle_topk"
    assert (
        plan.reason
        == "topk: 0 is outside what it takes; topk takes a whole number from 1 to 16 (it needs a restart)"
    )
    assert confirm["status"] == "rejected"
    after = _engine_info(shared_agent)["internal_states"][0][live_control.READBACK_FIELD]
    assert after["threshold"] == before["threshold"]  # a refusal changes nothing


async def test_reused_request_id_for_another_request_is_a_conflict(shared_agent: Agent) -> None:
    rid = f"dup-{time.time_ns()}"
    async with shared_agent.client() as c:
        ok = await c.post("/v1/actions", json={"request_id": rid, "kind": "threshold", "value": 20})
        clash = await c.post("/v1/actions", json={"request_id": rid, "kind": "threshold", "value": 21})
    assert ok.status_code == 200
    assert clash.status_code == 409


# ---- auth, files, secrets ---------------------------------------------------------------------------


async def test_every_route_but_version_needs_the_token(shared_agent: Agent) -> None:
    routes = [("GET", "/v1/status"), ("GET", "/v1/stream"), ("GET", "/v1/snapshots"), ("GET", "/v1/events"),
              ("POST", "/v1/actions"), ("GET", "/v1/profiles"), ("GET", "/v1/logs"), ("GET", "/v1/kv/whatif"),
              ("POST", "/v1/engine/stop"), ("POST", "/v1/agent/stop")]  # fmt: skip
    for token in (None, "not-the-token"):
        async with shared_agent.client(token=token) as c:
            assert (await c.get("/v1/version")).status_code == 200
            for method, path in routes:
                r = await c.request(method, path)
                assert r.status_code == 401, (token, method, path, r.status_code)
                assert "bearer token" in r.json()["detail"]
    assert shared_agent.status()["engine_state"] == "ready"  # the refused stop did nothing


def test_socket_token_and_state_are_private(shared_agent: Agent) -> None:
    assert stat.S_ISSOCK(os.stat(shared_agent.socket).st_mode)
    assert stat.S_IMODE(os.stat(shared_agent.socket).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(shared_agent.socket.parent).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(shared_agent.state_dir / "token").st_mode) == 0o600
    assert stat.S_IMODE(os.stat(shared_agent.state_dir / "engine.json").st_mode) == 0o600


async def test_token_and_engine_key_never_leave_the_agent(shared_agent: Agent) -> None:
    token = shared_agent.token
    async with shared_agent.client() as c:
        # Make sure there is something to read: an action, a finished tick with /server_info.
        rid = f"leak-{time.time_ns()}"
        plan = (
            await c.post("/v1/actions", json={"request_id": rid, "kind": "threshold", "value": 17})
        ).json()
        await c.post(f"/v1/actions/{plan['action_id']}/confirm")
        served = [
            (await c.get("/v1/snapshots")).text,
            (await c.get("/v1/events")).text,
            (await c.get("/v1/status")).text,
            (await c.get("/v1/logs", params={"tail": 5000})).text,
            (await c.get("/v1/audit")).text,
            (await c.get("/v1/profiles/sim-shared")).text,
        ]
    written = [p.read_text(errors="replace") for p in shared_agent.root.glob("agent-*.log")]
    written.append((shared_agent.state_dir / "audit.jsonl").read_text())
    written.append((shared_agent.state_dir / "engine.json").read_text())
    written.append((shared_agent.state_dir / "logs" / "engine.log").read_text(errors="replace"))
    for text in served + written:
        assert token not in text
        assert ENGINE_KEY not in text


# ---- profiles, logs, kv -----------------------------------------------------------------------------


async def test_profiles_list_read_save_and_diff(shared_agent: Agent) -> None:
    async with shared_agent.client() as c:
        listed = (await c.get("/v1/profiles")).json()["profiles"]
        assert set(listed[0]) == {"name", "path", "running", "changed", "digest", "production"}
        assert any(p["name"] == "sim-shared" and p["running"] for p in listed)
        read = (await c.get("/v1/profiles/sim-shared")).json()
        assert read["profile"]["identity"]["name"] == "sim-shared"
        text = re.sub(r"(?m)^threshold = \d+$", "threshold = 33", read["toml"])
        text = text.replace('name = "sim-shared"', 'name = "sim-wider"')
        assert "threshold = 33" in text
        bad = await c.put("/v1/profiles/sim-wider", json={"toml": text.replace("tp_size = 8", "tp_size = 0")})
        assert bad.status_code == 422
        assert bad.json()["detail"]["issues"][0]["key"] == "server.tp_size"
        assert not (shared_agent.profile.parent / "sim-wider.toml").exists()  # refused means nothing written
        saved = await c.put("/v1/profiles/sim-wider", json={"toml": text})
        assert saved.json() == {
            "name": "sim-wider",
            "saved": True,
            "digest": saved.headers["ETag"].strip('"'),
            "comments_kept": True,
        }
        diff = (await c.get("/v1/profiles/sim-wider/diff")).json()
        traversal = await c.get("/v1/profiles/..%2Fetc/diff")
    keys = {ch["key"] for ch in diff["changes"]}
    assert "speculation.threshold" in keys and "identity.name" in keys
    assert diff["plan"]["mode"] in ("live", "restart")
    assert traversal.status_code in (404, 422)


async def test_logs_tail_and_search(shared_agent: Agent) -> None:
    async with shared_agent.client() as c:
        tail = (await c.get("/v1/logs", params={"tail": 3})).json()["lines"]
        found = (await c.get("/v1/logs", params={"tail": 50, "search": "k25console agent: starting"})).json()[
            "lines"
        ]
    assert len(tail) <= 3
    assert found and all("k25console agent: starting" in line for line in found)


async def test_kv_whatif(shared_agent: Agent) -> None:
    async with shared_agent.client() as c:
        ok = (await c.get("/v1/kv/whatif", params={"running": 64, "context": 4096, "pool": 1_000_000})).json()
        bad = await c.get("/v1/kv/whatif", params={"running": 64, "context": 0})
    # "off" (0 steps) keeps the widest candidate's reserve; only a server without the drafter is cheaper
    assert ok["on"]["tokens_reserved"] == ok["off"]["tokens_reserved"] > ok["baseline"]["tokens_reserved"]
    assert ok["on"]["requests_that_fit"] <= ok["baseline"]["requests_that_fit"]
    assert ok["overfull"] is False and ok["fit_summary"] == [
        "fits (speculation on, off (0 steps), no drafter): the pool holds all 64 requests at once"
    ]
    assert bad.status_code == 422


def test_openapi_schema_lists_the_routes(shared_agent: Agent) -> None:
    with shared_agent.sync_client() as c:
        schema = c.get("/openapi.json").json()
    for path in ("/v1/version", "/v1/status", "/v1/stream", "/v1/actions", "/v1/actions/{action_id}/confirm",
                 "/v1/profiles/{name}", "/v1/kv/whatif", "/v1/logs", "/v1/engine/restart"):  # fmt: skip
        assert path in schema["paths"], path


# ---- supervision ------------------------------------------------------------------------------------


async def test_killed_engine_is_restarted(make_agent: Any) -> None:
    agent: Agent = make_agent("sim-kill", extra=["--restart-backoff", "0.2"]).start()
    first = agent.wait_state("ready")
    old_pid = first["engine_pid"]
    async with agent.client() as c:
        since = (await c.get("/v1/status")).json()["last_seq"]
        os.kill(old_pid, signal.SIGKILL)
        items = await read_stream(
            c,
            since,
            lambda it: any(k == "event" and d["name"] == "engine.ready" for k, d in it),
            timeout_s=60,
        )
    names = [d["name"] for k, d in items if k == "event"]
    assert names.index("engine.crashed") < names.index("engine.restarting") < names.index("engine.ready")
    crashed = next(
        EVENT.validate_python(d) for k, d in items if k == "event" and d["name"] == "engine.crashed"
    )
    assert isinstance(crashed, EngineEvent) and crashed.data.pid == old_pid
    now = agent.status()
    assert now["engine_state"] == "ready" and now["engine_pid"] != old_pid
    assert pid_alive(now["engine_pid"])


def test_crash_loop_stops_at_the_limit(make_agent: Any) -> None:
    # A bad environment makes the engine's interpreter die at once: a real crash, every time.
    agent: Agent = make_agent(
        "sim-crash",
        env={"PYTHONHOME": "/nonexistent-k25"},
        extra=["--restart-backoff", "0.05", "--crash-loop-limit", "3"],
    ).start()
    status = agent.wait_state("crash_loop", timeout_s=60)
    assert status["engine_failures"] == 3
    assert status["engine_pid"] is None
    with agent.sync_client() as c:
        events = c.get("/v1/events").json()["events"]
    names = [e["name"] for e in events]
    assert names.count("engine.crashed") == 3
    assert names.count("engine.starting") == 3
    assert names[-1] == "engine.crash_loop" or "engine.crash_loop" in names
    loop = next(e for e in events if e["name"] == "engine.crash_loop")
    assert "3 times" in loop["message"]
    assert agent.record() is None
    # Each failure says why, from the engine's own log (here the interpreter's fatal error).
    crashed = [e for e in events if e["name"] == "engine.crashed"]
    assert all("No module named 'encodings'" in e["message"] for e in crashed), crashed[-1]["message"]
    assert "No module named 'encodings'" in status["engine_last_error"]["summary"]


def _sim_engines(state_dir: Path) -> list[int]:
    """Engine processes started for this state directory (their argv names its engine-profile file)."""
    marker = str(state_dir / "engine" / "engine-profile.toml").encode()
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmd = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if marker in cmd and pid_alive(int(entry.name)):
                pids.append(int(entry.name))
    return pids


def test_killed_agent_restarts_and_reattaches_to_the_same_engine(make_agent: Any) -> None:
    agent: Agent = make_agent("sim-reattach").start()
    before = agent.wait_state("ready")
    agent.kill()
    assert pid_alive(before["engine_pid"])  # the engine outlives its agent
    agent.start()
    after = agent.wait_state("ready")
    assert after["engine_pid"] == before["engine_pid"]
    assert after["agent_pid"] != before["agent_pid"]
    assert _sim_engines(agent.state_dir) == [before["engine_pid"]]
    with agent.sync_client() as c:
        names = [e["name"] for e in c.get("/v1/events").json()["events"]]
    assert "engine.reattached" in names and "engine.starting" not in names
    assert "engine.profile_differs" not in names


def test_reattach_keeps_what_runs_when_the_profile_file_changed(make_agent: Any) -> None:
    agent: Agent = make_agent("sim-edited").start()
    before = agent.wait_state("ready")
    agent.kill()
    edited = re.sub(
        r"(?m)^max_running_requests = \d+$", "max_running_requests = 64", agent.profile.read_text()
    )
    assert edited != agent.profile.read_text()
    agent.profile.write_text(edited)
    agent.start()
    after = agent.wait_state("ready")
    assert after["engine_pid"] == before["engine_pid"]  # an edited profile is not a reason to restart SGLang
    with agent.sync_client() as c:
        events = c.get("/v1/events").json()["events"]
        diff = c.get("/v1/profiles/sim-edited/diff").json()
    differs = [e for e in events if e["name"] == "engine.profile_differs"]
    assert len(differs) == 1 and "apply the profile" in differs[0]["message"]
    # The diff is against what really runs (the record), so the edit shows up as a pending restart.
    assert [c["key"] for c in diff["changes"]] == ["server.max_running_requests"]
    assert diff["plan"]["mode"] == "restart"


def test_sigterm_stops_the_agent_cleanly_and_leaves_the_engine(make_agent: Any) -> None:
    agent: Agent = make_agent("sim-term").start()
    status = agent.wait_state("ready")
    assert agent.proc is not None
    agent.proc.send_signal(signal.SIGTERM)  # what systemd or a shutdown sends
    assert agent.proc.wait(timeout=30) == 0
    assert not agent.socket.exists()
    assert pid_alive(status["engine_pid"])
    assert agent.record() is not None and agent.record()["pid"] == status["engine_pid"]  # type: ignore[index]
    assert "agent.stopping" in agent.log_path.read_text()


def test_stale_record_of_a_reused_pid_is_not_signalled(make_agent: Any) -> None:
    agent: Agent = make_agent("sim-stale")
    agent.state_dir.mkdir(parents=True, mode=0o700)
    bystander = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE
    )
    try:
        # A record that names a live process with the wrong start time: a pid reused by someone else.
        record = {"kind": "sim", "pid": bystander.pid, "pgid": bystander.pid, "start_ticks": 1, "argv_hash": "x",
                  "host": "127.0.0.1", "port": 1, "launched_at": 0, "profile_name": "x", "profile_toml": "",
                  "log_path": "/dev/null"}  # fmt: skip
        (agent.state_dir / "engine.json").write_text(json.dumps(record))
        agent.start()
        status = agent.wait_state("ready")
        assert status["engine_pid"] != bystander.pid
        assert bystander.poll() is None  # untouched
    finally:
        assert bystander.stdin is not None
        bystander.stdin.close()
        bystander.wait(timeout=10)


def test_status_and_stop_commands(make_agent: Any) -> None:
    agent: Agent = make_agent("sim-cli").start()
    status = agent.wait_state("ready")
    cli = [sys.executable, "-m", "agent.cli.main"]
    where = ["--state-dir", str(agent.state_dir)]
    shown = subprocess.run(
        [*cli, "status", *where, "--json"], capture_output=True, text=True, cwd=REPO, timeout=60
    )
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["engine_pid"] == status["engine_pid"]
    stopped = subprocess.run([*cli, "stop", *where], capture_output=True, text=True, cwd=REPO, timeout=60)
    assert stopped.returncode == 0, stopped.stderr
    assert agent.proc is not None and agent.proc.wait(timeout=30) == 0
    assert pid_alive(status["engine_pid"])  # the engine keeps serving without its agent
    assert not agent.socket.exists()
    gone = subprocess.run([*cli, "status", *where], capture_output=True, text=True, cwd=REPO, timeout=60)
    assert gone.returncode == 1 and "not running" in gone.stderr
    # Reattach, then stop both: the engine's whole process group goes.
    agent.start()
    assert agent.wait_state("ready")["engine_pid"] == status["engine_pid"]
    both = subprocess.run(
        [*cli, "stop", *where, "--engine-too"], capture_output=True, text=True, cwd=REPO, timeout=90
    )
    assert both.returncode == 0, both.stderr
    assert not pid_alive(status["engine_pid"])  # gone before the agent answered no more
    assert agent.proc is not None and agent.proc.wait(timeout=30) == 0
    assert agent.record() is None


def test_listen_refuses_a_public_address(make_agent: Any) -> None:
    agent: Agent = make_agent("sim-listen")
    argv = [sys.executable, "-m", "agent.cli.main", "serve", "--profile", str(agent.profile), "--engine", "sim",
            "--state-dir", str(agent.state_dir), "--listen", "0.0.0.0:18790"]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, cwd=REPO, timeout=60)
    assert done.returncode == 2
    assert "not a loopback address" in done.stderr
    assert agent.record() is None  # nothing was started


async def test_confirmed_restart_drains_running_requests_first(make_agent: Any) -> None:
    import asyncio

    agent: Agent = make_agent("sim-restart", extra=["--drain-timeout", "60"]).start()
    before = agent.wait_state("ready")
    url = before["engine_url"]
    body = {"text": "hello " * 64, "sampling_params": {"max_new_tokens": 160, "ignore_eos": True}}
    engine_headers = {"Authorization": f"Bearer {ENGINE_KEY}"}
    async with httpx.AsyncClient(timeout=120, headers=engine_headers) as engine, agent.client() as c:
        since = (await c.get("/v1/status")).json()["last_seq"]
        load = [asyncio.create_task(engine.post(url + "/generate", json=body)) for _ in range(4)]
        await read_stream(
            c, since, lambda it: any(k == "snapshot" and (d["load"]["running"] or 0) >= 4 for k, d in it), 30
        )
        rid = f"restart-{time.time_ns()}"
        plan = (await c.post("/v1/actions", json={"request_id": rid, "kind": "topk", "value": 4})).json()
        assert plan["mode"] == "restart"
        confirmed = (await c.post(f"/v1/actions/{plan['action_id']}/confirm")).json()
        assert confirmed["status"] == "applying"
        again = (await c.post(f"/v1/actions/{plan['action_id']}/confirm")).json()
        assert again["status"] == "applying"  # not a second restart
        items = await read_stream(
            c,
            since,
            lambda it: any(k == "event" and d["name"].startswith("action.applied") for k, d in it),
            120,
        )
        responses = await asyncio.gather(*load)
        result = (await c.get(f"/v1/actions/{plan['action_id']}")).json()
    # In-flight requests finished normally: the engine was stopped only after they drained.
    assert [r.status_code for r in responses] == [200] * 4
    assert all(r.json()["meta_info"]["completion_tokens"] == 160 for r in responses)
    names = [d["name"] for k, d in items if k == "event"]
    assert names.index("engine.draining") < names.index("engine.stopped") < names.index("engine.ready")
    assert "engine.drain_timeout" not in names
    draining = next(d for k, d in items if k == "event" and d["name"] == "engine.draining")
    assert draining["data"]["in_flight"] >= 1  # there was something to drain
    assert names.count("engine.stopped") == 1
    assert result["status"] == "applied"
    after = agent.status()
    assert after["engine_state"] == "ready" and after["engine_pid"] != before["engine_pid"]
    assert not pid_alive(before["engine_pid"])
    assert _engine_info(agent)["speculative_eagle_topk"] == 4
    audit = [a for a in _audit_lines(agent) if a["action"].get("action_id") == plan["action_id"]]
    assert len(audit) == 1 and audit[0]["action"]["mode"] == "restart"
    assert audit[0]["after"]["speculation.eagle_topk"] == 4


async def test_bench_sweep_runs_against_the_engine_and_reports_on_the_stream(shared_agent: Agent) -> None:
    body = {"mode": "sweep", "concurrency": [1, 2], "requests_per_level": 2, "input_len": 32, "output_len": 8,
            "warmup_requests": 0}  # fmt: skip
    async with shared_agent.client() as c:
        since = (await c.get("/v1/status")).json()["last_seq"]
        bad = await c.post("/v1/bench", json={**body, "concurrency": "many"})
        started = await c.post("/v1/bench", json=body)
        assert started.status_code == 202, started.text
        bench_id = started.json()["bench_id"]
        items = await read_stream(
            c,
            since,
            lambda it: any(k == "event" and d["name"] in ("bench.finished", "bench.failed") for k, d in it),
            120,
        )
        stored = (await c.get(f"/v1/bench/{bench_id}")).json()
        runs = (await c.get("/v1/bench")).json()["runs"]
        missing = await c.get("/v1/bench/no-such-run")
    assert bad.status_code == 422 and "concurrency" in bad.text
    bench_events = [d for k, d in items if k == "event" and d["kind"] == "bench"]
    names = [d["name"] for d in bench_events]
    assert names[0] == "bench.started" and names[-1] == "bench.finished", bench_events[-1]
    assert stored["state"] == "finished" and stored["bench_id"] == bench_id
    assert any(r["bench_id"] == bench_id for r in runs)
    assert missing.status_code == 404
    # where it ran: what the agent knows (its profile; the GPUs the simulated engine says it models,
    # marked as such, since the agent's own telemetry has none with --gpus none)
    env = stored["environment"]
    assert env["profile"]["name"] == "sim-shared" and len(env["profile"]["sha256"]) == 64
    assert env["profile"]["path"] == str(shared_agent.profile)
    assert env["gpus"]["count"] == 8 and env["gpus"]["driver"] is None
    assert env["gpus"]["detail"].startswith("simulated: 8 × NVIDIA RTX PRO 6000")
    assert env["server"]["sglang_version"] == "0.5.23" and env["server"]["attention_decode"] == "triton"
    assert env["stack"] is None and env["stack_unknown"] == "the simulated engine runs no SGLang stack"


async def test_a_plan_made_before_another_change_expires_instead_of_applying(shared_agent: Agent) -> None:
    stamp = time.time_ns()
    async with shared_agent.client() as c:
        first = (
            await c.post("/v1/actions", json={"request_id": f"old-{stamp}", "kind": "threshold", "value": 40})
        ).json()
        second = (
            await c.post("/v1/actions", json={"request_id": f"new-{stamp}", "kind": "threshold", "value": 41})
        ).json()
        assert first["mode"] == second["mode"] == "live"
        applied = (await c.post(f"/v1/actions/{second['action_id']}/confirm")).json()
        stale = (await c.post(f"/v1/actions/{first['action_id']}/confirm")).json()
        unknown = await c.post("/v1/actions/act-nope/confirm")
    assert applied["status"] == "applied"
    assert stale["status"] == "expired" and "plan again" in stale["message"]
    assert _engine_info(shared_agent)["internal_states"][0][live_control.READBACK_FIELD]["threshold"] == 41
    assert unknown.status_code == 404
