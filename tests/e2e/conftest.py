"""Fixtures for the end-to-end tests: a real OpenSSH sshd on 127.0.0.1 (session-wide)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from agent_harness import AgentProc, running_agent

from .sshd import Sshd, running_sshd


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test in this folder is end-to-end; mark it so it can be selected with ``-m e2e``."""
    for item in items:
        if "/tests/e2e/" in str(item.path):
            item.add_marker(pytest.mark.e2e)


@pytest.fixture(scope="session")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sshd]:
    """One sshd for the whole session: its own host key, an authorized ed25519 client key for the
    current user, and a known_hosts file naming ``[127.0.0.1]:PORT``."""
    with running_sshd(tmp_path_factory.mktemp("sshd")) as server:
        yield server


@pytest.fixture(scope="module")
def shared_agent() -> Iterator[AgentProc]:
    """One agent on the simulated engine for the tests of a module that do not break it."""
    with running_agent() as agent:
        yield agent


@pytest.fixture
def fresh_agent() -> Iterator[AgentProc]:
    """An agent of the test's own, for the tests that kill, fill or restart things."""
    with running_agent() as agent:
        yield agent
