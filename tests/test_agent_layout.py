"""The agent's layout rules: small modules, and one folder (agent/sglang) that knows SGLang's surface.

``agent/sim`` is exempt from the surface rule: it *is* an SGLang (the test double), so it writes
the keys and metric names the rest of the agent must only read through ``agent.sglang``. So is
``agent/install/overlay``: it is code that runs inside SGLang (``agent install`` copies it there) and
writes the read-back the agent reads.
"""

from __future__ import annotations

import ast
from pathlib import Path

from agent.sglang import live_control, server_info

REPO = Path(__file__).resolve().parents[1]
AGENT = REPO / "agent"
MAX_LINES = 450
KNOWS_SGLANG = ("sglang", "sim")

RAW_KEYS = {
    *server_info.SERVER_ARGS_READ,
    *server_info.TOP_LEVEL_READ,
    *server_info.INTERNAL_STATE_READ,
    *server_info.MEMORY_USAGE_KEYS,
    *server_info.SECRET_FIELDS,
    *live_control.READBACK_KEYS,
    live_control.READBACK_FIELD,
    server_info.CUDA_GRAPH_MAX_BS_DECODE,
    server_info.OLD_CUDA_GRAPH_MAX_BS,
    server_info.ENABLE_DP_ATTENTION,
}
"""Keys of /server_info answers (and of the patch's read-back) that k25console reads."""

OWN_KEYS = {
    ("bench/options.py", "api_key"),  # BenchOptions' own fields, dropped from a stored result
    ("bench/options.py", "admin_api_key"),
    ("bench/compare.py", "token_capacity"),  # the bench result's own key (off_memory)
    ("install/stack.py", "version"),  # the install's import-check script prints its own JSON lines
    ("cli/control.py", "status"),  # the agent's own action result (agent.wire.ActionResult)
    ("cli/status.py", "threshold"),  # the agent's own snapshot (agent.wire Speculation)
    ("cli/status.py", "pinned_steps"),
    ("wire/bench_env.py", "tp_size"),  # a bench result's own server summary, read back
    ("control/audit.py", "status"),  # the audit record's own result
    ("control/undo.py", "status"),  # the audit record's own result (the last applied change)
    ("wire/audit.py", "status"),  # the audit record's own result (agent audit, the Audit screen)
    ("serve/reconcile.py", "threshold"),  # the audit's "live" values (the read-back's names, our record)
    ("serve/reconcile.py", "pinned_steps"),
    ("telemetry/changes.py", "threshold"),  # the action catalogue's kind (agent.wire.actions), for its words
}


OVERLAY = AGENT / "install" / "overlay"


def _outside_sglang() -> list[Path]:
    return [
        p
        for p in AGENT.rglob("*.py")
        if p.relative_to(AGENT).parts[0] not in KNOWS_SGLANG and not p.is_relative_to(OVERLAY)
    ]


def test_no_module_of_ours_is_over_450_lines() -> None:
    """The module-size rule holds for all of our code, not only the agent: the console, the bench's
    scripts and the tools too (the tests are exempt)."""
    roots = ("agent", "console", "bench", "tools")
    sizes = {
        str(p.relative_to(REPO)): len(p.read_text().splitlines())
        for root in roots
        for p in (REPO / root).rglob("*.py")
    }
    walked = {root: sum(path.startswith(f"{root}/") for path in sizes) for root in roots}
    assert min(walked.values()) >= 2, walked
    assert {path: n for path, n in sizes.items() if n > MAX_LINES} == {}


def test_internal_states_is_read_only_in_agent_sglang() -> None:
    found = [str(p.relative_to(REPO)) for p in AGENT.rglob("*.py") if '"internal_states"' in p.read_text()]
    assert [f for f in found if not f.startswith("agent/sglang/")] == []


def _raw_reads(path: Path) -> list[str]:
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        key = None
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
            key = node.slice.value
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("get", "pop", "setdefault")
            and node.args
            and isinstance(node.args[0], ast.Constant)
        ):
            key = node.args[0].value
        if isinstance(key, str) and key in RAW_KEYS:
            out.append(f"{node.lineno}: {key}")
        text = node.value if isinstance(node, ast.Constant) else None
        if isinstance(text, str) and text.startswith(("sglang:", "sglang_")):
            out.append(f"{node.lineno}: metric name {text}")
    return out


def test_no_raw_server_info_or_metrics_key_outside_agent_sglang() -> None:
    found = {}
    for path in _outside_sglang():
        rel = str(path.relative_to(AGENT))
        reads = [r for r in _raw_reads(path) if (rel, r.split(": ", 1)[1]) not in OWN_KEYS]
        if reads:
            found[rel] = reads
    assert found == {}


def test_the_scan_would_see_a_raw_read(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(
        'x = info.get("speculative_algorithm")\ny = state["avg_spec_accept_length"]\nz = "sglang:num_running_reqs"\n'
    )
    assert len(_raw_reads(probe)) == 3
