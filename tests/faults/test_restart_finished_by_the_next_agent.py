"""A restart the agent was stopped in (kill -9, or SIGTERM) is finished by the next agent: the new
engine starts on the operator's values, and the restart's audit line gets its true outcome.

Before: the resumed engine was launched on the profile's launch threshold (143) and served on it
until the agent put the operator's (86) back once ready; a restart cut short by kill -9 kept
"intent: no outcome yet" for good (whenever the kill came before the restart's call returned),
and after a SIGTERM the outcome read "failed" although the next agent finished the restart.
"""

from __future__ import annotations

import contextlib
import shutil
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fault_rig import Rig, check, engines_of, make_rig, wait_until

from agent.engine.faults import RESTART_POINTS
from agent.engine.find import flag_value
from agent.engine.proc import read_cmdline

pytestmark = pytest.mark.slow

OPERATOR_THRESHOLD = 86
LAUNCH_THRESHOLD = 143
"""profiles/local-sim.toml's threshold."""


@pytest.fixture
def new_rig() -> Iterator[Callable[[], Rig]]:
    made: list[Rig] = []

    def make() -> Rig:
        rig = make_rig()
        made.append(rig)
        rig.start()
        rig.wait_ready()
        return rig

    yield make
    for rig in made:
        rig.close()
        shutil.rmtree(rig.root, ignore_errors=True)


def _restart_lines(rig: Rig) -> list[dict[str, Any]]:
    records, _ = rig.audit_records()
    return [r for r in records if r["action"].get("kind") == "engine_restart"]


def _launched_threshold(pid: int) -> int | None:
    """The threshold in the profile file the sim engine ``pid`` was started with (its ``--profile``)."""
    path = flag_value(read_cmdline(pid) or [], "--profile")
    assert path is not None
    for line in Path(path).read_text().splitlines():
        if line.startswith("threshold = "):
            return int(line.split("=")[1])
    return None


def _cut_short(rig: Rig, point: str) -> int:
    """The operator's threshold set, then a restart the agent is stopped in at ``point``; returns
    the agent's exit code."""
    assert rig.threshold_action(OPERATOR_THRESHOLD, f"set-{time.time_ns()}")["status"] == "applied"
    rig.kill9()
    rig.start(fault_point=point)
    rig.wait_ready()
    with rig.client() as c, contextlib.suppress(httpx.TransportError):
        c.post("/v1/engine/restart", json={"drain_timeout_s": 0, "operator": "ops"})
    return rig.wait_dead()


@pytest.mark.parametrize("point", [*RESTART_POINTS[1:], "restart_stopping:term", "restart_stopped:term"])
def test_a_restart_cut_short_is_finished_on_the_operators_values_and_audited_as_finished(
    new_rig: Callable[[], Rig], point: str
) -> None:
    rig = new_rig()
    code = _cut_short(rig, point)
    assert code == (0 if point.endswith(":term") else -signal.SIGKILL), f"the agent did not stop at {point}"
    rig.start()
    status = rig.wait_ready()
    pid = status["engine_pid"]
    assert engines_of(rig) == [pid], "not exactly one engine runs"
    # Item 12: the engine that finishes the restart was started on the operator's value.
    assert _launched_threshold(pid) == OPERATOR_THRESHOLD, (
        "the resumed engine was launched on a value nobody set"
    )
    assert rig.engine_live()["threshold"] == OPERATOR_THRESHOLD
    record = rig.engine_record()
    assert record is not None and f"threshold = {OPERATOR_THRESHOLD}" in record["profile_toml"]
    # Item 8: the restart's intent has one outcome, "applied", and it says who finished it.
    lines = _restart_lines(rig)
    intents = [r for r in lines if r["phase"] == "intent"]
    outcomes = [r for r in lines if r["phase"] == "outcome"]
    assert len(intents) == 1 and intents[0]["operator"] == "ops"
    assert [o["action"]["op_id"] for o in outcomes] == [intents[0]["action"]["op_id"]], lines
    assert outcomes[0]["result"]["status"] == "applied", outcomes[0]
    assert outcomes[0]["operator"] == "ops"
    check(rig)


def test_a_restart_that_never_began_is_audited_as_not_done(new_rig: Callable[[], Rig]) -> None:
    """The agent killed after the restart's intent and before the restart began (its record still
    names the old engine, nothing to finish): the next agent says the restart was not done."""
    rig = new_rig()
    old = rig.status()["engine_pid"]
    rig.kill9()
    rig.start(fault_point="restart_requested")
    rig.wait_ready()
    with rig.client() as c, contextlib.suppress(httpx.TransportError):
        c.post("/v1/engine/restart", json={"drain_timeout_s": 0, "operator": "ops"})
    assert rig.wait_dead() == -signal.SIGKILL
    rig.start()
    status = rig.wait_ready()
    assert status["engine_pid"] == old
    outcomes = [r for r in _restart_lines(rig) if r["phase"] == "outcome"]
    assert len(outcomes) == 1 and outcomes[0]["result"]["status"] == "failed", outcomes
    assert f"pid {old}" in outcomes[0]["result"]["message"]
    check(rig)


def test_a_crash_restart_starts_the_engine_on_the_operators_values(new_rig: Callable[[], Rig]) -> None:
    """The same root: an engine started again after a crash is launched on the operator's value."""
    rig = new_rig()
    assert rig.threshold_action(OPERATOR_THRESHOLD, f"set-{time.time_ns()}")["status"] == "applied"
    old = rig.kill_engine()

    def new_engine_ready() -> dict[str, Any] | None:
        status = rig.status()
        return status if status["engine_state"] == "ready" and status["engine_pid"] != old else None

    status = wait_until(new_engine_ready, timeout_s=90, what="the engine started again")
    assert _launched_threshold(status["engine_pid"]) == OPERATOR_THRESHOLD
    assert rig.engine_live()["threshold"] == OPERATOR_THRESHOLD
    check(rig)
