"""``bench/real/agent_deps.py``: the agent's dependencies for the offline GPU host come from
``pyproject.toml``, and a wheel folder that lacks one is refused before anything runs (2026-12-06: a
hand-written list lacked tomlkit, and the GPU set-up waited 536 s for engines no agent could start)."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    """The script as ``gpu.sh setup`` and ``carry.sh`` run it: a module, from the repository root."""
    return subprocess.run(
        [sys.executable, "-m", "bench.real.agent_deps", *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=REPO,
    )


def test_the_list_is_pyprojects_dependencies() -> None:
    declared = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    listed = _run("--list").stdout.split("\n")
    assert listed[: len(declared)] == declared and "pip" in listed


def _wheels(folder: Path, names: list[str]) -> None:
    folder.mkdir()
    for name in names:
        (folder / f"{name}-1.0-py3-none-any.whl").write_bytes(b"")


def test_a_folder_missing_a_dependency_is_refused_naming_it(tmp_path: Path) -> None:
    declared = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    names = [d.split(">")[0].split("<")[0].split("=")[0].strip().replace("-", "_") for d in declared]
    _wheels(tmp_path / "w", [n for n in names if n != "tomlkit"] + ["pip"])
    done = _run("--check", str(tmp_path / "w"))
    assert done.returncode == 1
    assert "lacks wheels for: tomlkit" in done.stderr


def test_a_complete_folder_passes(tmp_path: Path) -> None:
    declared = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    # wheel file names spell distributions with underscores, any case: prometheus_client, nvidia_ml_py
    names = [d.split(">")[0].split("<")[0].split("=")[0].strip().replace("-", "_") for d in declared]
    _wheels(tmp_path / "w", [*names, "pip"])
    done = _run("--check", str(tmp_path / "w"))
    assert done.returncode == 0, done.stderr


def test_no_folder_is_said_plainly(tmp_path: Path) -> None:
    done = _run("--check", str(tmp_path / "absent"))
    assert done.returncode == 1 and "carry.sh makes it" in done.stderr
