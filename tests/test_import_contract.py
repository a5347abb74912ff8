"""The import boundaries: the agent never imports textual; the console imports only agent.wire and agent.profile.

Checked twice: statically by import-linter (the contracts in pyproject.toml), and at run time by
importing the modules in a fresh interpreter and looking at ``sys.modules`` (which also catches
imports made through importlib or inside functions that run at import).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ALLOWED_AGENT = ("wire", "profile")
"""The agent's subpackages the console may import (``agent`` itself, the package, is allowed too)."""


def _agent_modules_outside_allowed(modules: list[str]) -> list[str]:
    return sorted(m for m in modules if m.startswith("agent.") and m.split(".")[1] not in ALLOWED_AGENT)


def _run(code: str) -> dict[str, list[str]]:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, check=False, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, list[str]] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_import_linter_contracts_hold() -> None:
    lint = Path(sys.executable).with_name("lint-imports")
    done = subprocess.run([str(lint)], capture_output=True, text=True, check=False, cwd=ROOT)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert re.search(r"Contracts: [1-9]\d* kept, 0 broken", done.stdout), done.stdout[-2000:]


def test_wire_and_profile_pull_in_nothing_else() -> None:
    """What the console may import from the agent stands alone: no textual, no other agent module."""
    result = _run(
        """
        import json, sys
        import agent.wire, agent.profile
        print(json.dumps({"modules": sorted(sys.modules)}))
        """
    )
    modules = result["modules"]
    assert "agent.wire" in modules and "agent.profile" in modules
    assert not [m for m in modules if m == "textual" or m.startswith("textual.")]
    assert _agent_modules_outside_allowed(modules) == []


def test_console_modules_import_only_wire_and_profile_from_the_agent() -> None:
    """Import every module of the console package; then only agent.wire/agent.profile may be loaded."""
    result = _run(
        """
        import importlib, json, pkgutil, sys
        import console
        names = sorted(m.name for m in pkgutil.walk_packages(console.__path__, "console."))
        for name in names:
            importlib.import_module(name)
        if not names:
            import agent.wire, agent.profile
        print(json.dumps({"imported": names, "modules": sorted(sys.modules)}))
        """
    )
    assert _agent_modules_outside_allowed(result["modules"]) == [], result["imported"]


def test_the_check_would_catch_a_forbidden_import() -> None:
    found = _agent_modules_outside_allowed(
        ["agent", "agent.wire.snapshot", "agent.profile", "agent.sglang.kv"]
    )
    assert found == ["agent.sglang.kv"]


def test_the_static_contract_names_every_agent_subpackage_but_wire_and_profile() -> None:
    """import-linter's forbidden list is explicit; a new agent subpackage must be added to it."""
    import pkgutil
    import tomllib

    import agent

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    contracts = config["tool"]["importlinter"]["contracts"]
    console_contract = next(c for c in contracts if c.get("source_modules") == ["console"])
    subpackages = {f"agent.{m.name}" for m in pkgutil.iter_modules(agent.__path__) if m.ispkg}
    expected = {name for name in subpackages if name.split(".")[1] not in ALLOWED_AGENT}
    assert expected <= set(console_contract["forbidden_modules"])
