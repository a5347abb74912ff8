"""Fixtures for the console's tests (the helpers live in console_testkit, importable by name)."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from console_testkit import READY_TIMEOUT_S, RunningAgent, _start_agent, _stop_agent, until_async
from e2e.sshd import Sshd, running_sshd  # tests/e2e: the suite's real-sshd recipe


@pytest.fixture
async def agent() -> AsyncIterator[RunningAgent]:
    """An agent with its simulated engine ready. Short temp path: UNIX socket paths are limited."""
    async for running in _ready_agent("local-sim"):
        yield running


@pytest.fixture
async def production_agent() -> AsyncIterator[RunningAgent]:
    """The same, running a production copy of the sim profile ("prod-sim", production = true)."""
    async for running in _ready_agent("prod-sim", production=True):
        yield running


@pytest.fixture
async def sim_gpus_agent() -> AsyncIterator[RunningAgent]:
    """The same, with the demo's simulated GPUs (``agent serve --gpus sim``) in its telemetry."""
    async for running in _ready_agent("local-sim", extra_args=["--gpus", "sim"]):
        yield running


async def _ready_agent(
    profile: str, *, production: bool = False, extra_args: list[str] | None = None
) -> AsyncIterator[RunningAgent]:
    root = Path(tempfile.mkdtemp(prefix="k25c-"))
    running = _start_agent(root, profile, production=production, extra_args=extra_args)
    try:

        async def ready() -> bool:
            if running.proc.poll() is not None:
                raise RuntimeError(f"agent exited {running.proc.returncode}: {running.log}")
            if not running.socket.exists():
                return False
            status = await running.status()
            return bool(status.get("engine_state") == "ready" and status.get("engine_url"))

        try:
            await until_async(ready, timeout_s=READY_TIMEOUT_S, what="the agent and its sim engine")
        except TimeoutError as exc:
            raise TimeoutError(f"{exc}\nagent log:\n{running.log}") from exc
        yield running
    finally:
        _stop_agent(running)
        log = running.output()
        shutil.rmtree(root, ignore_errors=True)
    # every event the agent published fitted its typed payload (agent.serve.stream logs one that did not)
    problems = [
        line for line in log.splitlines() if "its payload" in line or "not in agent.wire.EventName" in line
    ]
    assert problems == [], problems


@pytest.fixture
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sshd]:
    """A real OpenSSH sshd on 127.0.0.1 (the e2e suite's recipe), for the SSH link's tests."""
    with running_sshd(tmp_path_factory.mktemp("sshd")) as server:
        yield server
