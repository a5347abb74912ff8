"""Screens and widgets never see the App: no cast to it, no import of it, no attribute of it looked up
by name; the App picks no screen by its class. (The layers themselves are import-linter's contract in
pyproject.toml, checked by `lint-imports` in ./dev test.)"""

from __future__ import annotations

import ast
import re
from pathlib import Path

CONSOLE = Path(__file__).resolve().parents[2] / "console"
BELOW_APP = sorted(
    [*(CONSOLE / "screens").glob("*.py"), *(CONSOLE / "widgets").glob("*.py"), CONSOLE / "session.py"]
)
SCREEN_CLASSES = {p.stem for p in (CONSOLE / "screens").glob("*.py")}


def test_no_screen_or_widget_casts_or_imports_the_app() -> None:
    found = []
    for path in BELOW_APP:
        source = path.read_text()
        for pattern in (
            r"\bcast\(",
            r"ConsoleApp",
            r"type:\s*ignore",
            r"from console\.app\b",
            r"getattr\(self\.app",
        ):
            found += [f"{path.relative_to(CONSOLE)}: {pattern}" for _ in re.finditer(pattern, source)]
    assert found == []


def test_no_widget_imports_a_screen() -> None:
    found = []
    for path in sorted((CONSOLE / "widgets").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("console.screens"):
                found.append(f"{path.name}: {node.module}")
    assert found == []


def test_the_app_picks_no_screen_with_isinstance() -> None:
    tree = ast.parse((CONSOLE / "app.py").read_text())
    picks = [
        ast.unparse(node)
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "isinstance"
        and "Screen" in ast.unparse(node.args[1])
    ]
    assert picks == []
