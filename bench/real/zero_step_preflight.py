"""Patch 03's torch side, driven without SGLang: the overlay's checks, run without pytest.

``agent install`` copies the overlay's zero-step modules into the stack; this script imports them from
a site-packages (or any tree holding ``sglang/srt/speculative/k25_zero_step_*.py``, the repository's
``agent/install/overlay`` among them) with stand-ins for the SGLang names the runtime imports lazily,
and runs the overlay's checks (``agent/install/overlay/checks``) on them: prefills, 0-step plain
rounds, resumes and faults through the runtime's plain round, ring, streak book, reserve planner,
catch-up and round timer, and a long 0-step stretch whose state stays bounded. They are the checks
pytest runs (``tests/overlay``); this runner needs torch only, which is what the GPU host's stack has,
and nothing under ``tests/``, which a copy of the repository may leave out:

    python -m bench.real.zero_step_preflight SITE_PACKAGES [--device cuda]     (from the repository root)

One line per check (``PASS``/``FAIL`` and the check's words), then ``N/M checks passed``; exit 0 when
every check passed, 1 when one failed, 2 when the checks cannot be loaded. ``bench/real/gpu.sh`` runs it
on the GPU host with the stack's python before any engine starts, and stops the set-up when it fails,
so that a shape bug costs seconds, not an engine start-up.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

from bench import REPO

CHECKS = REPO / "agent" / "install" / "overlay" / "checks"
PACKAGE = "k25_overlay_checks"
"""The name the overlay's checks are imported under (their modules import each other relatively)."""


def overlay_checks() -> ModuleType:
    """Import the package ``agent/install/overlay/checks`` from its folder, under ``PACKAGE``.

    Not by a dotted name: ``agent/install/overlay`` is no package (it is laid out as SGLang's
    site-packages), and a name some wheel in the stack's site-packages also uses would win wherever
    it sits on ``sys.path``. Imported from its own path under a name nothing else uses, the package is
    this repository's, and its modules' relative imports (``from .stand_ins import ...``) resolve
    inside it. ``sys.path`` is left as it was.
    """
    if PACKAGE not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            PACKAGE, CHECKS / "__init__.py", submodule_search_locations=[str(CHECKS)]
        )
        if spec is None or spec.loader is None:
            raise SystemExit(f"{CHECKS}: not the overlay's checks (no __init__.py)")
        package = importlib.util.module_from_spec(spec)
        sys.modules[PACKAGE] = package  # before it runs: its submodules find their parent there
        spec.loader.exec_module(package)
    return sys.modules[PACKAGE]


def run_one(check: Any, zero: Any) -> bool:
    try:
        check.run(zero)
    except AssertionError as exc:
        print(f"FAIL  {check.name}{('  ' + str(exc)) if str(exc) else ''}")
        return False
    except Exception as exc:
        print(f"FAIL  {check.name}  {type(exc).__name__}: {exc}")
        return False
    print(f"PASS  {check.name}")
    return True


def run(tree: Path, device: str) -> int:
    package = overlay_checks()
    try:
        plan = package.plan()
    except TypeError as exc:
        print(exc)
        return 2
    stand_ins = importlib.import_module(f"{PACKAGE}.stand_ins")
    zero = stand_ins.load(tree, device)  # a stand_ins.Overlay
    results: list[bool] = []
    module = None
    for check in plan:
        if check.module != module:
            module = check.module
            print(f"-- {package.title(module)}")
        results.append(run_one(check, zero))
    print(f"{sum(results)}/{len(results)} checks passed on {device} (torch {torch.__version__})")
    return 0 if all(results) else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("site", type=Path, help="site-packages (or a tree) with the overlay's sglang modules")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = parser.parse_args()
    return run(args.site, args.device)


if __name__ == "__main__":
    sys.exit(main())
