"""The agent's and the bench's import graphs: no loop in either, their layers contracts complete.

import-linter's layers contract (run by ``test_import_contract``) keeps every part on its floor; it
cannot see a loop between two modules of one part, so the module graph is checked here with grimp,
the graph library import-linter itself is built on (function-level and ``TYPE_CHECKING`` imports
included: a loop hidden in a function is still a loop).
"""

from __future__ import annotations

import ast
import pkgutil
import subprocess
import sys
import tomllib
from collections import defaultdict
from pathlib import Path

import grimp

import agent

ROOT = Path(__file__).resolve().parents[1]


def _loops(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            part = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                part.append(w)
                if w == v:
                    break
            if len(part) > 1:
                found.append(sorted(part))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def _edges(package: str) -> dict[str, set[str]]:
    graph = grimp.build_graph(package)
    inside = f"{package}."
    edges: dict[str, set[str]] = defaultdict(set)
    for module in graph.modules:
        if module.startswith(inside):
            edges[module] |= {
                m for m in graph.find_modules_directly_imported_by(module) if m.startswith(inside)
            }
    return edges


def test_the_agent_import_graph_has_no_loop() -> None:
    edges = _edges("agent")
    assert len(edges) > 150
    assert _loops(edges) == []


def test_the_bench_import_graph_has_no_loop() -> None:
    """The bench scripts import each other as modules (``bench.studies.ramp_figures``); no loop either."""
    edges = _edges("bench")
    assert len(edges) > 30
    assert _loops(edges) == []


def test_the_loop_finder_sees_a_loop() -> None:
    edges: dict[str, set[str]] = defaultdict(set, {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}})
    assert _loops(edges) == [["a", "b", "c"]]


def test_the_layers_contract_names_every_agent_part_and_allows_no_exception() -> None:
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    layers = next(c for c in contracts if c["type"] == "layers" and c.get("containers") == ["agent"])
    assert layers.get("ignore_imports", []) == []
    assert layers.get("exhaustive") is True
    named = {part.strip() for floor in layers["layers"] for part in floor.split("|")}
    parts = {m.name for m in pkgutil.iter_modules(agent.__path__) if m.ispkg}
    assert named == parts


def test_the_bench_layers_contract_names_every_bench_folder_and_allows_no_exception() -> None:
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    layers = next(c for c in contracts if c["type"] == "layers" and c.get("containers") == ["bench"])
    assert layers.get("ignore_imports", []) == [] and layers.get("exhaustive") is True
    named = {part.strip() for floor in layers["layers"] for part in floor.split("|")}
    assert named == {m.name for m in pkgutil.iter_modules([str(ROOT / "bench")]) if m.ispkg}


def test_only_the_cli_and_the_whatifs_may_import_the_simulator() -> None:
    """The layers put the sim low (it imports only sglang and profile); a second contract keeps every
    other part from importing it, and must name each of them."""
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    sim = next(c for c in contracts if c["type"] == "forbidden" and c["forbidden_modules"] == ["agent.sim"])
    assert sim.get("ignore_imports", []) == []
    parts = {m.name for m in pkgutil.iter_modules(agent.__path__) if m.ispkg}
    assert {m.removeprefix("agent.") for m in sim["source_modules"]} == parts - {"cli", "whatif", "sim"}


def _function_level_agent_imports(root: Path) -> list[str]:
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for inner in ast.walk(node):
                if isinstance(inner, ast.ImportFrom) and (inner.module or "").startswith("agent"):
                    found.append(f"{path.relative_to(root)}:{inner.lineno}: {inner.module}")
                elif isinstance(inner, ast.Import) and any(a.name.startswith("agent") for a in inner.names):
                    found.append(f"{path.relative_to(root)}:{inner.lineno}")
    return found


def test_agent_modules_import_each_other_at_the_top_but_in_the_cli() -> None:
    """A function-level import hides a dependency from the contracts; only the command modules keep
    theirs (start-up cost: the next test)."""
    found = _function_level_agent_imports(ROOT / "agent")
    assert [f for f in found if not f.startswith("cli/")] == []
    assert found  # the scan sees the CLI's own


def test_agent_help_loads_neither_the_api_server_nor_the_simulator() -> None:
    """Why the CLI's imports sit in its functions: ``agent --help`` stays cheap."""
    code = (
        "import sys, agent.cli.main as m\n"
        "try:\n    m.main(['--help'])\nexcept SystemExit:\n    pass\n"
        "print(sorted(n for n in ('fastapi', 'uvicorn', 'agent.sim.engine', 'agent.serve.daemon') if n in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert done.stdout.strip().splitlines()[-1] == "[]"
