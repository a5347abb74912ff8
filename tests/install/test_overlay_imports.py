"""What the overlay imports: nothing of ours, only the standard library, torch and SGLang.

The overlay runs in the stack's python, which has SGLang and its dependencies and not k25console. Its
import-linter contracts (``agent/install/overlay/importlinter.toml``: nothing of ours, no torch in the
torch-free modules, the runtime's parts in layers) are run here as ``./dev test`` runs them, with the
overlay on ``PYTHONPATH``; the graph itself is read with grimp for what a contract cannot say: that
every import outside SGLang is the standard library or torch.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from agent.install.patchset import OVERLAY_DIR

REPO = Path(__file__).resolve().parents[2]
CONFIG = OVERLAY_DIR / "importlinter.toml"
ALLOWED_OUTSIDE = {"torch"}
"""What the overlay may import beyond the standard library and ``sglang``: what SGLang itself needs."""


def _lint(overlay: Path) -> subprocess.CompletedProcess[str]:
    lint = Path(sys.executable).with_name("lint-imports")
    return subprocess.run(
        [str(lint), "--no-cache", str(CONFIG)],
        capture_output=True,
        text=True,
        check=False,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(overlay)},
    )


def test_the_overlays_contracts_hold() -> None:
    done = _lint(OVERLAY_DIR)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert re.search(r"Contracts: 3 kept, 0 broken", done.stdout), done.stdout[-2000:]


@pytest.mark.parametrize(
    ("module", "line", "broken"),
    [
        ("k25_zero_step_ring.py", "from agent.sglang import live_control", "imports nothing of k25console"),
        ("k25_zero_step_policy.py", "import torch", "import no torch"),
        (
            "k25_zero_step_timer.py",
            "from sglang.srt.speculative import k25_zero_step_runtime",
            "runtime's parts",
        ),
    ],
)
def test_a_contract_the_overlay_breaks_is_named(tmp_path: Path, module: str, line: str, broken: str) -> None:
    overlay = tmp_path / "overlay"
    shutil.copytree(OVERLAY_DIR / "sglang", overlay / "sglang")
    path = overlay / "sglang/srt/speculative" / module
    future = "from __future__ import annotations\n"
    path.write_text(path.read_text().replace(future, f"{future}\n{line}\n", 1))
    done = _lint(overlay)
    assert done.returncode == 1, done.stdout[-2000:]
    assert re.search(rf"{re.escape(broken)}.*BROKEN", done.stdout.replace("\n", " ")), done.stdout[-2000:]


_GRAPH = """
import json, sys
import grimp
graph = grimp.build_graph("sglang", include_external_packages=True, cache_dir=None)
print(json.dumps({m: sorted(graph.find_modules_directly_imported_by(m)) for m in graph.modules if m.startswith("sglang.")}))
"""


def _outside_imports(overlay: Path) -> dict[str, set[str]]:
    """Per overlay module, what it imports that is neither the standard library, sglang nor allowed.
    (In a fresh interpreter: this one has test folders named ``sglang`` on its path.)"""
    done = subprocess.run(
        [sys.executable, "-c", _GRAPH],
        capture_output=True,
        text=True,
        check=True,
        cwd=overlay,
        env={**os.environ, "PYTHONPATH": str(overlay)},
    )
    imports: dict[str, list[str]] = json.loads(done.stdout.strip().splitlines()[-1])
    assert "sglang.srt.speculative.k25_zero_step_runtime" in imports
    found: dict[str, set[str]] = {}
    for module, imported in imports.items():
        outside = {
            m
            for m in imported
            if m.split(".")[0] not in sys.stdlib_module_names and m.split(".")[0] != "sglang"
        }
        if outside - ALLOWED_OUTSIDE:
            found[module] = outside - ALLOWED_OUTSIDE
    return found


def test_the_overlay_imports_only_the_standard_library_torch_and_sglang(tmp_path: Path) -> None:
    assert _outside_imports(OVERLAY_DIR) == {}
    overlay = tmp_path / "overlay"
    shutil.copytree(OVERLAY_DIR / "sglang", overlay / "sglang")
    ring = overlay / "sglang/srt/speculative/k25_zero_step_ring.py"
    ring.write_text(ring.read_text().replace("\nimport torch\n", "\nimport numpy\nimport torch\n", 1))
    assert _outside_imports(overlay) == {"sglang.srt.speculative.k25_zero_step_ring": {"numpy"}}
