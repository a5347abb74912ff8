"""``bench/`` says what it holds (issue 40): every script imports as a module of the ``bench``
package with nothing edited on ``sys.path``, every script is named in its folder's README, every
results folder has its row in the results index, and nothing there points outside the repository.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import re
import subprocess
from pathlib import Path

import pytest

from bench import REPO

BENCH = REPO / "bench"
FOLDERS = ("costs", "studies", "kit", "real")
"""The folders of scripts (``bench/README.md``); ``results`` holds what the real runs measured."""


def _sources() -> list[Path]:
    return sorted(p for p in BENCH.rglob("*.py") if p.relative_to(BENCH).parts[0] != "results")


def _scripts() -> list[Path]:
    """What a README must name: every module but the packages, and every shell script."""
    py = [p for p in _sources() if p.name != "__init__.py"]
    return sorted([*py, *(p for p in BENCH.rglob("*.sh") if p.relative_to(BENCH).parts[0] != "results")])


def _module_name(path: Path) -> str:
    return ".".join(path.relative_to(REPO).with_suffix("").parts)


def test_the_scripts_live_in_the_folders_the_readme_names() -> None:
    assert (BENCH / "__init__.py").is_file()
    assert {p.parent for p in _sources()} == {BENCH, *(BENCH / f for f in FOLDERS)}
    assert all((BENCH / f / "__init__.py").is_file() for f in FOLDERS)


def test_nothing_under_bench_names_sys_path() -> None:
    """No script puts a folder on the path to import another: they import each other as modules."""
    found = [
        f"{path.relative_to(REPO)}:{node.lineno}"
        for path in _sources()
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Attribute)
        and node.attr == "path"
        and isinstance(node.value, ast.Name)
        and node.value.id == "sys"
    ]
    assert found == []


@pytest.mark.parametrize("name", [_module_name(p) for p in _sources()])
def test_each_module_imports_as_part_of_the_package(name: str) -> None:
    """What ``python -m bench.X.Y`` does first, from the repository root (the preflight needs torch)."""
    if name == "bench.real.zero_step_preflight" and importlib.util.find_spec("torch") is None:
        pytest.skip("needs torch: tests/install/test_zero_step_runtime.py runs it with a torch python")
    module = importlib.import_module(name)
    assert module.__file__ is not None and Path(module.__file__).resolve().is_relative_to(BENCH)
    assert (module.__doc__ or "").strip(), f"{name} says nothing of what it is for"


def test_every_script_runs_as_a_module_or_says_it_is_a_part() -> None:
    """A script has its ``__main__``; the shared parts (``kit``), the ramp's parts (``ramp_*``) and the
    soak's (``real/soak_*``) have none."""
    no_main = [
        _module_name(p)
        for p in _scripts()
        if p.suffix == ".py"
        and 'if __name__ == "__main__":' not in p.read_text()
        and p.parent.name != "kit"
        and not p.stem.startswith(("ramp_", "soak_"))
    ]
    assert no_main == []


def test_every_script_is_named_in_its_folders_readme() -> None:
    """``bench/README.md`` names the scripts of costs, studies and kit; ``bench/real/README.md`` its own."""
    top = (BENCH / "README.md").read_text()
    real = (BENCH / "real" / "README.md").read_text()
    missing = [
        str(p.relative_to(REPO))
        for p in _scripts()
        if (p.name not in real if p.parent.name == "real" else not re.search(rf"\b{p.stem}\b", top))
    ]
    assert missing == []


def test_every_results_folder_has_a_row_in_the_index() -> None:
    """One row per run: its date and card as its folder's name says them, and its README."""
    results = BENCH / "results"
    rows = re.findall(
        r"^\| (\d{4}-\d{2}-\d{2}) \| ([^|]+) \| \[`([^`]+)`\]\(([^)]+)\) \|",
        (results / "README.md").read_text(),
        re.M,
    )
    folders = sorted(p.name for p in results.iterdir() if p.is_dir())
    assert sorted(folder for _, _, folder, _ in rows) == folders
    for date, card, folder, link in rows:
        assert date in folder, (date, folder)
        assert folder.split("-")[1] in card.lower(), (card, folder)  # real-h200-… → an H200
        assert link == f"{folder}/README.md" and (results / link).is_file()


OUTSIDE = ("..", "shared")
"""The folder beside the checkout that earlier sessions cited (spelled in parts, so this file does not)."""


def test_nothing_in_bench_points_outside_the_repository() -> None:
    outside = "/".join(OUTSIDE)
    found = [
        str(p.relative_to(REPO))
        for p in BENCH.rglob("*")
        if p.suffix in (".md", ".py", ".sh", ".toml")
        and (outside in p.read_text() or "/work/" in p.read_text())
    ]
    assert found == []


def test_nothing_tracked_points_outside_the_repository() -> None:
    """Issue 39: every file git tracks stands on its own (``grep -rn '<outside>' $(git ls-files)``)."""
    outside = "/".join(OUTSIDE)
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True).stdout
    found = []
    for name in listed.decode().split("\0"):
        path = REPO / name
        binary = path.suffix in (".png", ".gz", ".whl", ".svg")
        if name and path.is_file() and not binary and outside in path.read_text(errors="replace"):
            found.append(name)
    assert found == []


def test_nothing_under_bench_real_reads_from_tests() -> None:
    """Issue 46: a copy of the repository without ``tests/`` (a GPU host's) runs every GPU script, the
    preflight among them: no module under ``bench/real`` imports ``tests`` or builds a path into it."""
    found = []
    for path in sorted((BENCH / "real").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            if any(n == "tests" or n.startswith("tests.") for n in names):
                found.append(f"{path.relative_to(REPO)}:{node.lineno} imports {names}")
            text = node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else ""
            if text == "tests" or text.startswith("tests/"):
                found.append(f"{path.relative_to(REPO)}:{node.lineno} names {node.value!r}")
    assert found == []
