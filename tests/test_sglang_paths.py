"""One place knows SGLang's HTTP paths: ``agent/sglang`` (``agent.sglang.paths``).

Every string literal in ``agent/`` outside ``agent/sglang`` is scanned (f-string parts and help texts
included; docstrings and comments are prose and are not), and any SGLang path found in one fails the
test. The simulated engine is not exempt: it serves its routes under the same constants.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from agent.sglang import paths

AGENT = Path(__file__).resolve().parents[1] / "agent"
OWN_PATHS = {
    ("serve/metrics_http.py", paths.METRICS),  # the agent's own Prometheus page, not SGLang's
}
"""(file under agent/, path) where the agent spells a path of its own that SGLang happens to share."""


def _pattern() -> re.Pattern[str]:
    alternatives = "|".join(re.escape(p) for p in sorted(paths.ALL, key=len, reverse=True))
    return re.compile(rf"(?<![\w/.-])({alternatives})(?![\w-])")


def _spelled(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text())
    prose = {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
    }
    pattern = _pattern()
    return [
        (node.lineno, match.group(1))
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in prose
        for match in pattern.finditer(node.value)
    ]


def test_the_paths_module_names_what_the_agent_reaches() -> None:
    wanted = {"/generate", "/v1/chat/completions", "/metrics", "/server_info", "/set_internal_state"}
    wanted |= {"/flush_cache", "/health", "/get_model_info", "/model_info", "/v1/models"}
    assert wanted <= paths.ALL


def test_no_sglang_path_is_spelled_outside_agent_sglang() -> None:
    found = {}
    for path in sorted(AGENT.rglob("*.py")):
        rel = path.relative_to(AGENT)
        if rel.parts[0] == "sglang":
            continue
        hits = [f"{line}: {p}" for line, p in _spelled(path) if (str(rel), p) not in OWN_PATHS]
        if hits:
            found[str(rel)] = hits
    assert found == {}


def test_the_scan_sees_a_path_and_skips_prose(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(
        '"""Reads /server_info."""\n'
        'URL = base + "/generate"\n'
        'msg = f"{url}/health does not answer"\n'
        'HELP = "use /v1/chat/completions"\n'
        'OK = "/generated_text /metrics_extra v2/metrics"\n'
    )
    assert sorted(p for _, p in _spelled(probe)) == ["/generate", "/health", "/v1/chat/completions"]
