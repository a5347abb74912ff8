"""Issue 38's faults, one test each, against a real ``agent serve --engine sim`` (``fault_rig``).

Each failed on the code before issue 38 (run against that agent): a restart cut short left the
engine on its launch threshold with ``live_profile_toml: null``; a torn ``engine.json`` gave a second
engine; a refused intent left a torn line; an engine killed on a full disk crash-looped before it
waited, its record gone; the audit's reserve went to whoever wrote next.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import signal
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from fault_rig import Rig, check, engines_of, make_rig, wait_until

from agent.engine.faults import RESTART_POINTS

pytestmark = pytest.mark.slow

LAUNCH_THRESHOLD = 143
"""profiles/local-sim.toml's threshold: what a relaunch runs until the live values are put back."""


@pytest.fixture
def new_rig() -> Iterator[Callable[..., Rig]]:
    made: list[Rig] = []

    def make(*, extra: list[str] | None = None, env: dict[str, str] | None = None) -> Rig:
        rig = make_rig()
        made.append(rig)
        rig.extra = list(extra or [])
        rig.env = dict(env or {})
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


# ---- 1. a restart cut short keeps the operator's live values ----------------------------------------


@pytest.mark.parametrize("point", [*RESTART_POINTS, "restart_launched:term"])
def test_a_restart_cut_short_keeps_the_operators_live_values(new_rig: Callable[..., Rig], point: str) -> None:
    """The agent stops (SIGKILL, or its own SIGTERM) between the restart's request and the new engine's
    ready: the next agent keeps the operator's threshold, audited, on the one engine that runs."""
    rig = new_rig()
    assert rig.threshold_action(86, f"set-{time.time_ns()}")["status"] == "applied"
    rig.kill9()
    rig.start(fault_point=point)
    rig.wait_ready()
    with rig.client() as c, contextlib.suppress(httpx.TransportError):
        c.post("/v1/engine/restart", json={"drain_timeout_s": 0, "operator": "ops"})
    code = rig.wait_dead()
    assert code == (0 if point.endswith(":term") else -signal.SIGKILL), f"the agent did not stop at {point}"
    record = rig.engine_record()
    assert record is not None, "the engine record is gone"
    assert "threshold = 86" in json.dumps(record), f"the record lost the live threshold: {record}"
    rig.start()
    status = rig.wait_ready()
    assert rig.engine_live()["threshold"] == 86, "the restarted engine runs the launch threshold"
    assert engines_of(rig) == [status["engine_pid"]], "not exactly one engine runs"
    # The engine that finishes a restart is launched on the operator's threshold (issue 50); where the
    # old engine still runs (the restart never began) it kept it. Either way the audit says 86.
    record = rig.engine_record()
    assert record is not None and "threshold = 86" in record["profile_toml"] + (
        record["live_profile_toml"] or ""
    )
    record = rig.engine_record()
    assert record is not None and record["live_pending"] is False and record["restart_to"] is None
    check(rig)


def test_an_agent_stop_during_a_restart_keeps_the_operators_live_values(new_rig: Callable[..., Rig]) -> None:
    """The issue's own steps: ``/v1/agent/stop`` as soon as the new engine is starting."""
    rig = new_rig()
    assert rig.threshold_action(86, f"set-{time.time_ns()}")["status"] == "applied"
    with rig.client() as c:
        since = c.get("/v1/status").json()["last_seq"]
        assert c.post("/v1/engine/restart", json={"drain_timeout_s": 0}).status_code == 202
        with c.stream("GET", "/v1/stream", params={"since": since}, timeout=60) as stream:
            for line in stream.iter_lines():
                if line.startswith("data: ") and '"engine.starting"' in line:
                    break
        stopped = c.post("/v1/agent/stop", json={"operator": "ops"})
    assert stopped.status_code == 202
    assert rig.wait_dead() == 0
    rig.start()
    status = rig.wait_ready()
    assert rig.engine_live()["threshold"] == 86
    assert engines_of(rig) == [status["engine_pid"]]
    check(rig)


# ---- 2. a torn engine record never gives two engines -------------------------------------------------


@pytest.mark.parametrize("keep", [0.5, 0.02], ids=["half", "first-bytes"])
def test_a_torn_engine_record_is_a_finding_and_the_running_engine_is_adopted(
    new_rig: Callable[..., Rig], keep: float
) -> None:
    rig = new_rig()
    assert rig.threshold_action(77, f"set-{time.time_ns()}")["status"] == "applied"
    pid = rig.status()["engine_pid"]
    rig.kill9()
    path = rig.state / "engine.json"
    text = path.read_bytes().rstrip()
    path.write_bytes(text[: max(1, int(len(text) * keep))])
    rig.start()
    status = rig.wait_ready()
    assert status["engine_pid"] == pid, "a second engine was started"
    assert engines_of(rig) == [pid]
    assert rig.engine_live()["threshold"] == 77
    assert "engine_record_unreadable" in {f["code"] for f in status["findings"]}
    said = [e for e in _events(rig) if e["name"] == "engine.record_unreadable"]
    assert said and f"pid {pid}" in said[0]["message"] and "adopted" in said[0]["message"]
    assert (rig.state / "engine.json.unreadable").exists()
    record = rig.engine_record()
    assert record is not None and record["pid"] == pid, "the record was not written again"
    with rig.client() as c:
        shown = c.get("/v1/profile").json()["profile"]["speculation"]
    assert shown["threshold"] == 77  # what runs is what the agent shows, from the engine itself
    check(rig)


# ---- 9. a full disk -------------------------------------------------------------------------------


def test_a_refused_intent_leaves_no_torn_line(new_rig: Callable[..., Rig]) -> None:
    rig = new_rig(env={"K25_FAULT_AUDIT_RESERVE": "8192"})
    assert rig.mounted, "this test needs the real tmpfs (root can mount one here)"
    rig.fill()
    current = rig.engine_live()["threshold"]
    for n in range(60):
        value = 40 + n % 2
        result = rig.threshold_action(value, f"full-{n}-{time.time_ns()}")
        if result["status"] == "failed":
            assert "nothing was changed" in result["message"]
            break
        current = value
        rig.fill()
    else:
        raise AssertionError("the full disk never refused an action")
    assert rig.engine_live()["threshold"] == current
    _, torn = rig.audit_records()
    assert torn == 0, "a refused record left a torn line"
    with rig.client() as c:
        assert c.get("/v1/audit", params={"limit": 10_000}).json()["corrupt"] == []
    rig.unfill()
    check(rig)


def test_the_audit_reserve_is_the_audits_alone(new_rig: Callable[..., Rig]) -> None:
    """Whatever else fills the disk after the audit met it full, the audit's reserve still takes its
    records: the rig fills the disk again after every action, as the engine's log or a benchmark would."""
    rig = new_rig(env={"K25_FAULT_AUDIT_RESERVE": "65536"})
    assert rig.mounted
    rig.fill()
    applied = 0
    for n in range(12):
        if rig.threshold_action(50 + n % 2, f"reserve-{n}-{time.time_ns()}")["status"] != "applied":
            break
        applied += 1
        rig.fill()  # what the reserve gave back is taken by anyone who can
    assert applied == 12, f"only {applied} actions were audited from a 64 KiB reserve"
    assert (rig.state / "audit.jsonl.reserve").exists()
    with rig.client() as c:
        bench = c.post("/v1/bench", json={"mode": "sweep", "concurrency": [1], "requests_per_level": 10})
    assert bench.status_code == 503 and "reserve" in bench.json()["detail"], bench.text
    rig.unfill()
    check(rig)


def test_an_engine_killed_on_a_full_disk_waits_for_room_uncounted_and_its_record_stays(
    new_rig: Callable[..., Rig],
) -> None:
    rig = new_rig(extra=["--crash-loop-limit", "3"])
    assert rig.threshold_action(66, f"set-{time.time_ns()}")["status"] == "applied"
    rig.fill()
    killed = rig.kill_engine()
    wait_until(
        lambda: any(e["name"] == "engine.waiting_for_disk" for e in _events(rig)),
        timeout_s=30,
        what="the supervisor to wait for room",
    )
    for _ in range(10):  # while it waits (polled: the fault is that something happens meanwhile)
        status = rig.status()
        assert status["engine_state"] == "restarting", status["engine_state"]
        assert status["engine_failures"] == 1, "a start the full disk stopped was counted"
        assert "engine_crash_loop" not in {f["code"] for f in status["findings"]}
        record = rig.engine_record()
        assert record is not None and record["pid"] == killed and record["restart_to"], "the record is gone"
        time.sleep(0.3)
    assert not any(e["name"] == "engine.crash_loop" for e in _events(rig))
    # The agent dies while the disk is still full; the next one finishes the restart, live values kept.
    rig.kill9()
    rig.unfill()
    rig.start()
    status = rig.wait_ready()
    assert status["engine_pid"] != killed and engines_of(rig) == [status["engine_pid"]]
    assert rig.engine_live()["threshold"] == 66
    check(rig)
