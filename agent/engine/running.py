"""An engine process the supervisor runs or adopted: its identity, whether it still lives, and how it
is drained and stopped (signals go to its process group, only while its identity holds)."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import subprocess
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from agent.engine import proc
from agent.engine.record import EngineKind

Emit = Callable[[str, str, dict[str, Any]], None]


@dataclass
class RunningEngine:
    pid: int
    pgid: int
    start_ticks: int
    url: str
    kind: EngineKind
    launched_at: float
    popen: subprocess.Popen[bytes] | None = None

    def exited(self) -> tuple[bool, int | None]:
        """(has it exited, its exit code when we know it)."""
        if self.popen is not None:
            code = self.popen.poll()
            return code is not None, code
        return not proc.is_same_process(self.pid, self.start_ticks), None

    def identity_holds(self) -> bool:
        """Whether signalling ``pgid`` still reaches this engine (not a stranger that reused its pid)."""
        if self.popen is not None:
            return self.popen.poll() is None
        return proc.is_same_process(self.pid, self.start_ticks)


async def unknown_running_requests() -> int | None:
    return None


async def drain(
    hooks: list[Callable[[], Awaitable[None]]],
    running_requests: Callable[[], Awaitable[int | None]],
    emit: Emit,
    timeout_s: float,
    poll_s: float,
) -> None:
    """Stop our own traffic, then wait for the engine's running requests to finish (bounded)."""
    for hook in hooks:
        with contextlib.suppress(Exception):
            await hook()
    in_flight = await running_requests()
    emit(
        "engine.draining",
        f"Draining: waiting up to {timeout_s:.0f} s for {in_flight if in_flight is not None else 'the'} "
        "running requests",
        {"in_flight": in_flight},
    )
    deadline = time.monotonic() + timeout_s
    running: int | None = None
    while time.monotonic() < deadline:
        running = await running_requests()
        if not running:
            return
        await asyncio.sleep(poll_s)
    emit(
        "engine.drain_timeout",
        f"{running} requests still running after {timeout_s:.0f} s; stopping anyway",
        {"running": running},
    )


async def terminate(engine: RunningEngine, grace_s: float, poll_s: float, emit: Emit) -> None:
    """SIGTERM to the group, SIGKILL after the grace period, then any worker left in the group."""
    if not engine.identity_holds():
        # Gone already, or the pid now belongs to someone else: never signal a stranger.
        engine.exited()
        return
    proc.signal_group(engine.pgid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and not engine.exited()[0]:
        await asyncio.sleep(poll_s)
    if not engine.exited()[0]:
        emit("engine.killed", f"The engine ignored SIGTERM for {grace_s:.0f} s; sent SIGKILL", {})
    proc.signal_group(engine.pgid, signal.SIGKILL)
    deadline = time.monotonic() + 5.0
    while time.monotonic() < deadline and (not engine.exited()[0] or proc.group_alive(engine.pgid)):
        await asyncio.sleep(poll_s / 2)
