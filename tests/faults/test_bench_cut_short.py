"""Issue 50, items 1 and 11: a benchmark cut short, against a real ``agent serve --engine sim``
(``fault_rig``), killed for real.

Item 1 failed on the code before issue 50: the engine kept the arm's threshold (1 or 0) after the
agent (or an ``agent bench compare``) was killed with -9 mid-run, and the next agent's reconcile
"kept what is in force". Item 11: the stored result of a run cut short held only its options.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from fault_rig import REPO, Rig, make_rig, wait_until

pytestmark = pytest.mark.slow

OPERATOR = 888
COMPARE = {"mode": "compare", "concurrency": [1, 4], "until": 0.04, "budget_s": 120,
           "input_len": 32, "output_len": 32}  # fmt: skip


@pytest.fixture
def rig() -> Iterator[Rig]:
    made = make_rig()
    made.start()
    made.wait_ready()
    yield made
    made.close()
    shutil.rmtree(made.root, ignore_errors=True)


def _forced(rig: Rig) -> bool:
    return bool(rig.engine_live()["threshold"] != OPERATOR)


def _force_records(rig: Rig, phase: str) -> list[dict[str, Any]]:
    records, _ = rig.audit_records()
    return [r for r in records if r["action"].get("kind") == "bench_force" and r["phase"] == phase]


def _put_back(rig: Rig) -> list[dict[str, Any]]:
    """Waits for the operator's threshold on the engine and the audit's outcome that says so."""
    wait_until(lambda: rig.engine_live()["threshold"] == OPERATOR, timeout_s=60, what="threshold 888 back")
    return wait_until(lambda: _force_records(rig, "outcome"), timeout_s=30, what="the put-back's audit line")


def test_an_agent_killed_mid_compare_leaves_the_operators_threshold_to_the_next(rig: Rig) -> None:
    assert rig.threshold_action(OPERATOR, "set-888-threshold")["status"] == "applied"
    with rig.client() as c:
        answer = c.post("/v1/bench", json=COMPARE | {"operator": "ops-bench"})
        assert answer.status_code == 202, answer.text
    wait_until(lambda: _forced(rig), timeout_s=60, what="the compare forcing an arm's threshold")
    assert _force_records(rig, "intent"), "the forced setting was not written ahead"
    rig.kill9()
    rig.start()
    rig.wait_ready()
    outcomes = _put_back(rig)
    assert outcomes[-1]["result"]["status"] == "applied", outcomes
    assert "threshold 888" in outcomes[-1]["result"]["message"], outcomes
    assert outcomes[-1]["operator"] == "ops-bench"
    records, _ = rig.audit_records()
    reconcile = [r for r in records if r["action"].get("kind") == "reconcile"][-1]
    assert "kept what is in force" not in reconcile["result"]["message"], reconcile
    assert reconcile["after"]["threshold"] == OPERATOR


def _cli(rig: Rig, *extra: str) -> subprocess.Popen[bytes]:
    url = rig.status()["engine_url"]
    argv = [sys.executable, "-m", "agent.cli.main", "bench", "compare", "--url", url, "--state-dir",
            str(rig.state), "--api-key-file", str(rig.root / "engine.key"), "--admin-api-key-file",
            str(rig.root / "engine.key"), "--concurrency", "1,4", "--until", "4%", "--budget", "120",
            "--input-len", "32", "--output-len", "32", *extra]  # fmt: skip
    return subprocess.Popen(argv, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})  # fmt: skip


def test_a_cli_compare_killed_mid_run_is_put_back_by_the_agent(rig: Rig) -> None:
    assert rig.threshold_action(OPERATOR, "set-888-threshold")["status"] == "applied"
    cli = _cli(rig)
    try:
        wait_until(lambda: _forced(rig) or cli.poll() is not None, timeout_s=60, what="the CLI forcing")
        assert cli.poll() is None, cli.stdout.read().decode() if cli.stdout else ""
        assert _force_records(rig, "intent"), "the CLI's forced setting was not written ahead"
        cli.send_signal(signal.SIGKILL)
    finally:
        cli.wait(timeout=15)
    outcomes = _put_back(rig)
    assert outcomes[-1]["result"]["status"] == "applied", outcomes
    assert "ended without saying" in outcomes[-1]["result"]["message"], outcomes


def test_a_cli_compare_killed_with_the_agent_down_is_put_back_by_the_next_agent(rig: Rig) -> None:
    assert rig.threshold_action(OPERATOR, "set-888-threshold")["status"] == "applied"
    cli = _cli(rig)
    try:
        wait_until(lambda: _forced(rig) or cli.poll() is not None, timeout_s=60, what="the CLI forcing")
        rig.kill9()
        cli.send_signal(signal.SIGKILL)
    finally:
        cli.wait(timeout=15)
    rig.start()
    rig.wait_ready()
    outcomes = _put_back(rig)
    assert "settled at the agent's start" in outcomes[-1]["result"]["message"], outcomes


# ---- 11. a benchmark cut short keeps the windows it completed --------------------------------------


def _stored(rig: Rig, bench_id: str) -> dict[str, Any]:
    with rig.client() as c:
        answer = c.get(f"/v1/bench/{bench_id}")
        assert answer.status_code == 200, answer.text
        stored: dict[str, Any] = answer.json()
    return stored


def _windows_kept(result: dict[str, Any]) -> int:
    """Windows the result's levels hold (each arm's ``runs``)."""
    return sum(
        len(arm.get("runs") or [])
        for level in result.get("levels") or []
        for arm in (level.get(a) for a in ("on", "off", "adaptive", "sweep"))
        if isinstance(arm, dict)
    ) + sum(len(level.get("runs") or []) for level in result.get("levels") or [])


def _assert_partial(result: dict[str, Any], at_least: int) -> None:
    partial = result.get("partial")
    assert partial, f"no partial record in {sorted(result)}"
    assert _windows_kept(result) >= at_least, result.get("levels")
    assert partial["windows"] == _windows_kept(result), (partial, result.get("levels"))
    levels = [level["concurrency"] for level in result["levels"]]
    assert sorted(partial["whole"] + partial["cut"]) == sorted(levels), partial
    assert sorted(levels + partial["not_reached"]) == [1, 4], partial
    assert partial["words"].startswith("partial: levels "), partial
    assert " cut" in partial["words"] and " whole" in partial["words"], partial


def _start_compare(rig: Rig) -> str:
    with rig.client() as c:
        answer = c.post("/v1/bench", json=COMPARE | {"operator": "ops-bench"})
        assert answer.status_code == 202, answer.text
        bench_id: str = answer.json()["bench_id"]
    wait_until(lambda: _windows_kept(_stored(rig, bench_id)) >= 3, timeout_s=90, what="three windows stored")
    return bench_id


def test_a_cancelled_compare_keeps_its_completed_windows_marked_partial(rig: Rig) -> None:
    bench_id = _start_compare(rig)
    with rig.client() as c:
        assert c.post(f"/v1/bench/{bench_id}/cancel", json={"operator": "ops"}).json()["cancelled"]
    result = wait_until(
        lambda: (r := _stored(rig, bench_id))["state"] == "cancelled" and r, timeout_s=60, what="cancelled"
    )
    _assert_partial(result, 3)
    events = [e for e in rig_events(rig) if e["name"] == "bench.cancelled"]
    assert "partial: levels" in events[-1]["message"], events[-1]


def test_an_agent_killed_mid_run_leaves_its_completed_windows_stored(rig: Rig) -> None:
    bench_id = _start_compare(rig)
    rig.kill9()
    rig.start()
    rig.wait_ready()
    result = _stored(rig, bench_id)
    assert result["state"] == "failed", result["state"]
    assert "the agent stopped" in result["error"]
    _assert_partial(result, 3)


def test_a_cli_stopped_with_sigint_writes_its_completed_windows_to_json(rig: Rig) -> None:
    out = rig.root / "cut.json"
    cli = _cli(rig, "--json", str(out))
    assert cli.stdout is not None
    try:
        for raw in iter(cli.stdout.readline, b""):
            if raw.startswith(b"[3/"):  # the third window measured (lines on a pipe: one per step)
                break
        else:
            pytest.fail(f"the CLI ended before its third window (rc {cli.wait()})")
        cli.send_signal(signal.SIGINT)
        rest = cli.stdout.read().decode()
    finally:
        code = cli.wait(timeout=60)
    assert code == 130, rest
    assert "partial: levels" in rest, rest
    result = json.loads(out.read_text())
    assert result["state"] == "cancelled"
    _assert_partial(result, 3)


def rig_events(rig: Rig) -> list[dict[str, Any]]:
    with rig.client() as c:
        events: list[dict[str, Any]] = c.get("/v1/events").json()["events"]
    return events
