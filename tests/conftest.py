"""Fixtures shared by every test folder. Keep this file small; put a folder's own fixtures in its conftest.

``sglang_src``: the pinned SGLang wheel's own source, for tests that check our code against it
(flags, formulas, endpoint fields, metric names, the patch set). The wheel is fetched once with
``pip download --no-deps --only-binary=:all: sglang==0.5.23`` into ``~/.cache/k25console/wheels``
(``K25_WHEEL_CACHE`` overrides) and reused; only its ``.py`` files are extracted, nothing is
installed and nothing imports torch.
"""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

SGLANG_PIN = "0.5.23"


def sglang_wheel_path() -> Path:
    """The cached pinned wheel, downloaded on first use."""
    cache = Path(os.environ.get("K25_WHEEL_CACHE", "~/.cache/k25console/wheels")).expanduser()
    pattern = f"sglang-{SGLANG_PIN}-*.whl"
    found = sorted(cache.glob(pattern))
    if not found:
        cache.mkdir(parents=True, exist_ok=True)
        # The wheel the reference describes (cp311, manylinux x86_64), whatever Python or OS runs the tests:
        # only its source is read, so the target tags are fixed rather than taken from this interpreter.
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:"]
        cmd += ["--python-version", "3.11", "--implementation", "cp", "--platform", "manylinux_2_34_x86_64"]
        cmd += ["--dest", str(cache), f"sglang=={SGLANG_PIN}"]
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        found = sorted(cache.glob(pattern))
        if done.returncode != 0 or not found:
            pytest.fail(
                f"could not download sglang=={SGLANG_PIN} into {cache}:\n{done.stdout}\n{done.stderr}"
            )
    return found[-1]


@pytest.fixture(scope="session")
def sglang_wheel() -> Path:
    """Path to the pinned SGLang wheel file."""
    return sglang_wheel_path()


@pytest.fixture(scope="session")
def sglang_src(sglang_wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Path to the extracted ``sglang/`` package directory (``.py`` files only) of the pinned wheel."""
    root = tmp_path_factory.mktemp("sglang-wheel")
    with zipfile.ZipFile(sglang_wheel) as wheel:
        members = [n for n in wheel.namelist() if n.startswith("sglang/") and n.endswith(".py")]
        wheel.extractall(root, members=members)
    package = root / "sglang"
    assert f"'{SGLANG_PIN}'" in (package / "_version.py").read_text(), "the wheel is not the pinned version"
    return package
