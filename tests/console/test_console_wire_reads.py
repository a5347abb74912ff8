"""The console reads the wire as typed models: no ``.get(`` on wire data (issue 40).

Every answer, event and stream item is read into its ``agent.wire`` model at the link
(``console.link.client``), so a screen reads attributes: ``event.data.url``, never
``event.data.get("url")``. This scans every module of the console the way the colour test scans for
colour literals (``test_console_theme.py``): a ``.get(`` is allowed only on what the console itself
owns, and each kind of owner is listed here with why; anything else fails, naming file and line.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

CONSOLE = Path(__file__).resolve().parents[2] / "console"

CONSTANT = re.compile(r"^_?[A-Z][A-Z0-9_]*$")
"""A module's own table (``STATE_STYLE``, ``_KIND_STYLE``): words and styles the console defines."""

OWN: dict[str, str] = {
    "os.environ": "the process environment",
    "self._states": "ActionTracker's phases by action id (console.model.actions)",
    "self.runs": "BenchTracker's runs by id (console.model.bench)",
    "model.actions": "the ActionTracker's own lookup by id",
    "model.bench.runs": "BenchTracker's runs by id",
    "tracker.labels": "the words this console keeps for actions it knows",
    "variables": "the theme's own variables (console.theme)",
    "notes": "a history chart's notes, built on that screen",
    "self.screen.active_bindings": "Textual's bindings of the screen in view",
    "getattr(self, '__watchers', {})": "Textual's reactive watchers (the footer)",
    "clients": "a fleet change's clients by host (console.fleet.change)",
    "by_url": "the fleet's own lookup of hosts by engine URL (console.fleet.model)",
}
"""Receivers of ``.get(`` that hold the console's own data, never the agent's."""

NOT_THE_WIRE: dict[tuple[str, str], str] = {
    ("console/fleet/hosts.py", "entry"): "the operator's hosts file (TOML), each refusal naming its line",
    ("console/fleet/hosts.py", "data"): "the operator's hosts file (TOML)",
    ("console/fleet/hosts.py", "common"): "the operator's hosts file's [defaults] (TOML)",
    ("console/demo/router.py", "ready"): "the demo's SGLang router's own /readiness page, not the agent's",
    ("console/fleet/ledger.py", "plans"): "the console's own kept account of fleet changes (its file)",
    ("console/fleet/ledger.py", "outcomes"): "the console's own kept account of fleet changes (its file)",
    ("console/fleet/ledger.py", "account"): "the console's own kept account of fleet changes (its file)",
    ("console/fleet/ledger.py", "h"): "the console's own kept account of fleet changes (its file)",
    ("console/fleet/ledger.py", "plan"): "the console's own kept account of fleet changes (its file)",
    ("console/fleet/routing.py", "by_name"): "the fleet's own rows by host name, built there",
    ("console/fleet/routing.py", "engine_urls or {}"): "the fleet's own host → engine URL map",
    ("console/fleet/routing.py", "rank"): "the module's own severity order",
}
"""Module and receiver of a ``.get(`` that reads something other than the agent's wire."""


def wire_gets(source: str) -> list[tuple[int, str]]:
    """Every ``X.get(...)`` whose receiver is not the console's own (see ``OWN``, ``CONSTANT``): its
    line and receiver. An HTTP GET of an agent route (a path as first argument) is a request, not a
    read: its answer goes into its model next."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if not (
            isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
        ):
            continue
        receiver = node.func.value
        said = ast.unparse(receiver)
        if isinstance(receiver, ast.Dict) or said in OWN:
            continue
        last = receiver.attr if isinstance(receiver, ast.Attribute) else getattr(receiver, "id", "")
        if CONSTANT.match(last):
            continue
        first = node.args[0] if node.args else None
        if first is not None and any(
            isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.startswith("/")
            for n in ast.walk(first)
        ):
            continue  # a request of a route (a path, or a URL ending in one)
        found.append((node.lineno, said))
    return sorted(found)


def test_the_scan_finds_gets_on_wire_data_and_passes_the_consoles_own() -> None:
    spelled = """
event.data.get("action_id")
data.get("fraction")
payload.get("seq", 0)
raw.get("kind") == "response"
body.get("detail", body)
record.source.get("client")
"""
    assert [said for _, said in wire_gets(spelled)] == [
        "event.data", "data", "payload", "raw", "body", "record.source",
    ]  # fmt: skip
    clean = """
STATE_STYLE.get(run.state, "$bad")
_KIND_STYLE.get(event.kind, "")
{"a": 1}.get(kind)
os.environ.get("HOME")
model.actions.get(pending.action_id)
await agent.get("/v1/status", timeout=5.0)
await client.get(url + "/v1/models")
"""
    assert wire_gets(clean) == []


def test_no_console_module_reads_wire_data_with_get() -> None:
    modules = sorted(CONSOLE.rglob("*.py"))
    assert len(modules) > 50
    found = {}
    for path in modules:
        name = str(path.relative_to(CONSOLE.parent))
        hits = [
            (line, said) for line, said in wire_gets(path.read_text()) if (name, said) not in NOT_THE_WIRE
        ]
        if hits:
            found[name] = hits
    assert found == {}, f".get( on wire data (read the agent.wire model's attribute): {found}"
