"""A cancel of the autopilot's command task must end it even when it lands in the very tick a command
is queued, and that command must then not reach the engine. On Python 3.11 ``asyncio.wait_for`` returned
the dequeued command and swallowed the cancel: the runner applied a live setting after it was told to
stop, and ``close()`` then waited on a task that never ended (the agent's shutdown hung)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from agent.control.audit import AuditLog
from agent.control.autopilot import runner as runner_module
from agent.control.autopilot.pilot import Command
from agent.control.autopilot.policy import Setting
from agent.control.autopilot.runner import AutopilotRunner, live_args
from agent.control.live import LiveOutcome
from agent.profile import load_profile

PROFILES = Path(__file__).resolve().parents[2] / "profiles"
MOVE = Command("move", Setting(threshold=1, steps=3), Setting(threshold=8, steps=-1), "a test move")


async def _parked() -> None:
    """A few loop steps, no clock: the runner reaches its queue wait (through ``wait_for``'s inner task
    that takes one step more), so a put and a cancel in one step race exactly as in production."""
    for _ in range(3):
        await asyncio.sleep(0)


def _runner(tmp_path: Path, applied: list[dict[str, int]], done: asyncio.Event) -> AutopilotRunner:
    async def apply(args: dict[str, int]) -> LiveOutcome:
        applied.append(args)
        done.set()
        return LiveOutcome(True, "applied")

    def emit(name: str, message: str, data: dict[str, Any]) -> None:
        pass

    profile = load_profile(PROFILES / "local-sim.toml")
    return AutopilotRunner(profile, apply=apply, emit=emit, audit=AuditLog(tmp_path / "audit.jsonl"))


async def test_a_cancel_in_the_tick_a_command_is_queued_ends_the_task_and_runs_nothing(
    tmp_path: Path,
) -> None:
    applied: list[dict[str, int]] = []
    runner = _runner(tmp_path, applied, asyncio.Event())
    await runner.start()
    task = runner._task
    assert task is not None
    await _parked()
    runner._handle([MOVE])  # what a telemetry tick does when the pilot decides
    task.cancel()  # same tick: the agent's shutdown
    await asyncio.wait({task}, timeout=10)  # a swallowed cancel never ends the task: fail, don't hang
    assert task.cancelled()
    assert applied == []
    await runner.close()


async def test_close_in_the_tick_a_command_is_queued_returns_without_running_it(tmp_path: Path) -> None:
    applied: list[dict[str, int]] = []
    runner = _runner(tmp_path, applied, asyncio.Event())
    await runner.start()
    await _parked()
    runner._handle([MOVE])
    async with asyncio.timeout(10):
        await runner.close()  # cancels in this same tick, then awaits the task
    assert applied == []


async def test_a_command_queued_as_the_watchdog_times_out_is_still_applied(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The queue wait times out on every step here: a command that arrives as it does stays queued
    (``Queue.get`` takes the item only once it resumes) and the next wait applies it."""
    monkeypatch.setattr(runner_module, "WATCH_EVERY_S", 0.0)
    applied: list[dict[str, int]] = []
    done = asyncio.Event()
    runner = _runner(tmp_path, applied, done)
    await runner.start()
    await _parked()
    runner._handle([MOVE])
    try:
        async with asyncio.timeout(10):
            await done.wait()
    finally:
        await runner.close()
    assert applied == [live_args(MOVE)]
