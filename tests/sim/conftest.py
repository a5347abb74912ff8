"""Fixtures for the simulated engine's tests: the shipped profiles, and the contract helpers.

``sglang_source`` (the pinned wheel's source readers) lives beside the contract tests; it is put on
the import path here so these tests read the wheel the same way.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from agent.profile.schema import Profile
from agent.profile.store import load_profile

ROOT = Path(__file__).resolve().parents[2]
PROFILES = ROOT / "profiles"
sys.path.insert(0, str(ROOT / "tests" / "contract"))


@pytest.fixture(scope="session")
def local_sim() -> Profile:
    return load_profile(PROFILES / "local-sim.toml")


@pytest.fixture(scope="session")
def tree_profile() -> Profile:
    return load_profile(PROFILES / "kimi-k25-eagle3-tree.toml")


@pytest.fixture(scope="session")
def baseline_profile() -> Profile:
    return load_profile(PROFILES / "kimi-k25-baseline.toml")


@pytest.fixture(scope="session")
def eagle3_profile() -> Profile:
    return load_profile(PROFILES / "kimi-k25-eagle3.toml")
