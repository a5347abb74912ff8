"""Fixtures of the daemon tests (agents start through tests/agent_harness.py, seen through daemon_harness.py)."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from daemon_harness import ENGINE_KEY, Agent, new_root, write_profile


@pytest.fixture
def make_agent() -> Iterator[Callable[..., Agent]]:
    made: list[Agent] = []
    roots: list[Path] = []

    def make(
        name: str = "sim-test", *, env: dict[str, str] | None = None, extra: list[str] | None = None
    ) -> Agent:
        root = new_root()
        roots.append(root)
        key_file = root / "engine.key"
        key_file.write_text(ENGINE_KEY + "\n")
        key_file.chmod(0o600)
        agent = Agent(root, write_profile(root, name, env=env, key_file=key_file), extra or [])
        made.append(agent)
        return agent

    yield make
    logs = []
    for agent in made:
        agent.cleanup()
        logs.append(agent.output())
    for root in roots:
        shutil.rmtree(root, ignore_errors=True)
    for log in logs:
        assert_events_fit(log)


@pytest.fixture(scope="module")
def shared_agent() -> Iterator[Agent]:
    """One agent for the tests that do not break it (read, plan, live apply)."""
    root = new_root()
    key_file = root / "engine.key"
    key_file.write_text(ENGINE_KEY + "\n")
    key_file.chmod(0o600)
    agent = Agent(root, write_profile(root, "sim-shared", key_file=key_file))
    try:
        agent.start()
        agent.wait_state("ready")
        yield agent
    finally:
        agent.cleanup()
        log = agent.output()
        shutil.rmtree(root, ignore_errors=True)
    assert_events_fit(log)


EVENT_PROBLEMS = (
    "does not fit its payload",
    "keys its payload does not have",
    "is not in agent.wire.EventName",
)
"""What the stream hub logs when a part of the agent reports an event the wire does not type
(``agent.serve.stream``): every agent these tests run must have logged none of it."""


def assert_events_fit(log: str) -> None:
    problems = [line for line in log.splitlines() if any(p in line for p in EVENT_PROBLEMS)]
    assert problems == [], problems
