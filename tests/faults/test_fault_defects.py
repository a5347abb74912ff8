"""Issue 25's defects, one test each, against a real ``agent serve --engine sim`` (``fault_rig``).

Each of these failed on the code before the write-ahead audit (checked by running them against
main's agent): a full disk ended supervision, a restart set a change in force back quietly, a
resent request applied twice, one torn line broke the audit API, and only confirms and cancels
were audited.
"""

from __future__ import annotations

import asyncio
import shutil
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from fault_rig import ENGINE_KEY, Rig, make_rig, wait_until

from agent.sglang import live_control
from agent.sglang.client import EngineClient

pytestmark = pytest.mark.slow


@pytest.fixture
def new_rig() -> Iterator[Callable[..., Rig]]:
    made: list[Rig] = []

    def make(*, extra: list[str] | None = None, no_mount: bool = False) -> Rig:
        if no_mount:
            with pytest.MonkeyPatch.context() as mp:
                mp.setenv("K25_FAULT_NO_MOUNT", "1")
                rig = make_rig()
        else:
            rig = make_rig()
        made.append(rig)
        if extra:
            rig.extra = extra
        rig.start()
        rig.wait_ready()
        return rig

    yield make
    for rig in made:
        rig.close()
        shutil.rmtree(rig.root, ignore_errors=True)


def _events(rig: Rig) -> list[dict[str, Any]]:
    with rig.client() as c:
        events: list[dict[str, Any]] = c.get("/v1/events").json()["events"]
    return events


def _findings(rig: Rig) -> dict[str, str]:
    return {f["code"]: f["title"] for f in rig.status()["findings"]}


def _set_on_engine(rig: Rig, threshold: int) -> None:
    """Change the engine behind the agent's back: what a kill between apply and audit leaves."""

    async def go() -> None:
        async with httpx.AsyncClient() as http:
            client = EngineClient(
                rig.status()["engine_url"], http, headers={"Authorization": f"Bearer {ENGINE_KEY}"}
            )
            await client.set_live(**{live_control.LIVE_THRESHOLD_KEY: threshold})

    asyncio.run(go())


def test_a_full_state_disk_never_ends_supervision_and_it_recovers_by_itself(
    new_rig: Callable[..., Rig],
) -> None:
    rig = new_rig(extra=["--crash-loop-limit", "2"])
    killed = rig.kill_engine()
    wait_until(
        lambda: any(e["name"] == "engine.crashed" and e["data"].get("pid") == killed for e in _events(rig)),
        timeout_s=30,
        what="the crash",
    )
    rig.fill()
    wait_until(
        lambda: any(e["name"] == "engine.waiting_for_disk" for e in _events(rig)),
        timeout_s=30,
        what="a start that waits for room",
    )
    seen: set[str] = set()
    deadline = time.monotonic() + 3  # past the crash-loop limit of 2 while the disk stays full
    while time.monotonic() < deadline:
        status = rig.status()
        assert status["engine_state"] != "crash_loop", "a full disk ended supervision"
        seen |= {f["title"] for f in status["findings"]}
        time.sleep(0.2)
    rig.unfill()
    assert rig.wait_ready(timeout_s=60)["engine_pid"] != killed
    assert "state disk full: audit and snapshots paused" in seen, seen
    wait_until(lambda: "state_disk_full" not in _findings(rig), timeout_s=30, what="the finding to clear")
    assert rig.engine_record() is not None, "the new engine's record was not written once space was back"


def test_a_change_in_force_that_the_audit_missed_is_recorded_at_start_and_never_set_back(
    new_rig: Callable[..., Rig],
) -> None:
    rig = new_rig()
    assert rig.threshold_action(64, f"set-{time.time_ns()}")["status"] == "applied"
    _set_on_engine(rig, 96)  # in force, with no audit line and not in the agent's record
    rig.kill9()
    rig.start()
    rig.wait_ready()
    assert rig.engine_live()["threshold"] == 96, "the restarted agent set the engine back"
    wait_until(
        lambda: any(e["name"] == "agent.reconciled" for e in _events(rig)), timeout_s=30, what="reconcile"
    )
    with rig.client() as c:
        running = c.get("/v1/profile").json()["profile"]
    assert running["speculation"]["threshold"] == 96  # what runs is what the agent shows
    records, _ = rig.audit_records()
    (line,) = [r for r in records if r["action"]["kind"] == "reconcile" and r["live"]["threshold"] == 96]
    assert line["result"]["status"] == "reconciled"
    assert "nothing was set back" in line["result"]["message"] and "threshold 64" in line["result"]["message"]


def test_a_request_resent_after_the_agent_restarted_is_not_applied_again(new_rig: Callable[..., Rig]) -> None:
    rig = new_rig()
    body = {"request_id": f"resent-{time.time_ns()}", "kind": "threshold", "value": 48, "operator": "ops"}
    with rig.client() as c:
        plan = c.post("/v1/actions", json=body).json()
        assert c.post(f"/v1/actions/{plan['action_id']}/confirm").json()["status"] == "applied"
    rig.kill9()
    rig.start()
    rig.wait_ready()
    with rig.client() as c:
        again = c.post("/v1/actions", json=body)
    assert again.status_code == 409, again.text
    assert "nothing is applied twice" in again.json()["detail"]


def test_one_torn_audit_line_is_skipped_and_reported_and_the_next_one_is_whole(
    new_rig: Callable[..., Rig],
) -> None:
    rig = new_rig()
    rig.tear_audit()
    result = rig.threshold_action(40, f"after-torn-{time.time_ns()}")
    assert result["status"] == "applied"
    with rig.client() as c:
        page = c.get("/v1/audit")
    assert page.status_code == 200, page.text
    (torn,) = page.json()["corrupt"]
    assert "torn" in torn["reason"] and torn["offset"] > 0
    records, bad = rig.audit_records()
    assert bad == 1
    assert [r["phase"] for r in records if r["action"].get("action_id") == result["action_id"]] == [
        "intent",
        "outcome",
    ]
    rig.kill9()
    rig.start()
    damaged = [e for e in _events(rig) if e["name"] == "agent.audit_damaged"]
    assert damaged and damaged[0]["data"]["corrupt"] == 1  # shown where the console shows events


def test_every_state_change_is_audited_with_who_asked_and_from_where(new_rig: Callable[..., Rig]) -> None:
    rig = new_rig()
    with rig.client() as c:
        assert c.post("/v1/engine/restart", json={"operator": "ops-restart"}).status_code == 202
        rig.wait_ready()
        assert c.post("/v1/engine/stop", json={"operator": "ops-stop"}).status_code == 202
        wait_until(lambda: rig.status()["engine_state"] == "stopped", timeout_s=30, what="stopped")
        assert c.post("/v1/engine/start", json={"operator": "ops-start"}).status_code == 202
        rig.wait_ready()
        body = {
            "mode": "sweep",
            "concurrency": [2],
            "requests_per_level": 5000,
            "input_len": 32,
            "output_len": 32,
        }
        bench_id = c.post("/v1/bench", json=body).json()["bench_id"]
        assert c.post(f"/v1/bench/{bench_id}/cancel", json={"operator": "ops-bench"}).json()["cancelled"]
        wait_until(
            lambda: c.get(f"/v1/bench/{bench_id}").json()["state"] == "cancelled", timeout_s=30, what="end"
        )
        text = rig.profile.read_text().replace("Simulated", "Simulated, saved", 1)
        assert (
            c.put(
                "/v1/profiles/copy-sim", json={"toml": text.replace('"fault-sim"', '"copy-sim"')}
            ).status_code
            == 200
        )
        assert c.post("/v1/agent/stop", json={"operator": "ops-agent"}).status_code == 202
    rig.wait_dead()
    records, _ = rig.audit_records()
    seen = {(r["action"]["kind"], r["phase"], r["result"]["status"], r["operator"]) for r in records}
    for kind, who in [("engine_restart", "ops-restart"), ("engine_stop", "ops-stop"), ("engine_start", "ops-start"),
                      ("bench_cancel", "ops-bench"), ("agent_stop", "ops-agent")]:  # fmt: skip
        assert (kind, "intent", "intent", who) in seen, kind
        assert (kind, "outcome", "applied", who) in seen, kind
    assert ("bench_start", "outcome", "applied", None) in seen
    assert ("bench_end", "record", "cancelled", None) in seen
    assert ("profile_save", "intent", "intent", None) in seen  # written ahead, as an engine change is
    assert ("profile_save", "outcome", "applied", None) in seen
    api = [r for r in records if r["source"].get("via") == "api"]
    assert api and all(
        r["source"] == {"via": "api", "peer": "unix socket", "client": "k25-fault-suite"} for r in api
    )


def test_an_action_whose_intent_cannot_be_written_is_refused_and_changes_nothing(
    new_rig: Callable[..., Rig],
) -> None:
    """The injected writer (no tmpfs): while the flag exists every state write meets ENOSPC."""
    rig = new_rig(no_mount=True)
    assert not rig.mounted
    before = rig.engine_live()["threshold"]
    rig.fill()
    result = rig.threshold_action(before + 5, f"no-room-{time.time_ns()}")
    assert result["status"] == "failed", result
    assert (
        result["message"].startswith("refused: the audit log") and "nothing was changed" in result["message"]
    )
    assert rig.engine_live()["threshold"] == before
    rig.unfill()
    assert rig.threshold_action(before + 5, f"room-{time.time_ns()}")["status"] == "applied"
