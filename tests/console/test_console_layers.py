"""Screens and widgets never see the App: no cast to it, no import of it, no attribute of it looked up
by name; the App picks no screen by its class. (The layers themselves are import-linter's contract in
pyproject.toml, checked by `lint-imports` in ./dev test.)"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from console_testkit import text_of, until

from console.app import ConsoleApp
from console.link.replay import ReplayLink
from console.palette import ConsoleCommands
from console.registry import COMMANDS
from console.screens.kv import KvScreen

CONSOLE = Path(__file__).resolve().parents[2] / "console"
BELOW_APP = sorted(
    [*(CONSOLE / "screens").glob("*.py"), *(CONSOLE / "widgets").glob("*.py"), CONSOLE / "session.py"]
)
RECORDING = Path(__file__).parent / "data" / "local-sim.jsonl"


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


async def test_a_screen_command_from_the_palette_runs_on_its_screen() -> None:
    """KV what-if, in the registry with no key: the palette shows KV and runs the screen's own action
    there (the App has no such action any more); a replay has no agent to ask, and says so."""
    app = ConsoleApp(ReplayLink(RECORDING, speed=0), clock=lambda: 1000.0, operator="palette")
    command = next(c for c in COMMANDS if c.title == "KV what-if")
    assert command.screens == ("kv",) and not command.action.startswith("app.")
    async with app.run_test(size=(100, 30)) as pilot:
        await until(lambda: app.model.link.state == "ended", what="the whole recording")
        await ConsoleCommands(app.screen)._run(command)
        assert app.current_mode == "kv" and isinstance(app.screen, KvScreen)
        await until(lambda: "could not answer" in text_of(app, "#whatif-result"), what="the what-if's answer")
        await pilot.pause()
