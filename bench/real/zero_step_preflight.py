"""Patch 03's torch side, driven without SGLang: the overlay's torch tests, run without pytest.

``agent install`` copies the overlay's zero-step modules into the stack; this script imports them from
a site-packages (or any tree holding ``sglang/srt/speculative/k25_zero_step_*.py``, the repository's
``agent/install/overlay`` among them) with stand-ins for the SGLang names the runtime imports lazily,
and runs the tests of ``tests/overlay`` on them: prefills, 0-step plain rounds, resumes and faults
through the runtime's plain round, ring, streak book, reserve planner, catch-up and round timer. They
are the same tests pytest runs (``tests/overlay/conftest.py``); this runner needs torch only, which is
what the GPU host's stack has:

    python -m bench.real.zero_step_preflight SITE_PACKAGES [--device cuda]     (from the repository root)

One line per check (``PASS``/``FAIL`` and the check's words), then ``N/M checks passed``; exit 0 when
every check passed. ``bench/real/gpu.sh`` runs it on the GPU host with the stack's python before any
engine starts, so that a shape bug costs seconds, not an engine start-up.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import inspect
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

from bench import REPO

TESTS = REPO / "tests" / "overlay"
PACKAGE = "k25_overlay_tests"
"""The name ``tests/overlay`` is imported under here (its modules import each other relatively)."""

FIXTURES = ("zero", "cpu_lens")
"""The fixtures of ``tests/overlay/conftest.py`` this runner provides (a test asking another is an error)."""


def overlay_tests() -> str:
    """Import the package ``tests/overlay`` from its folder, under ``PACKAGE``; return that name.

    Not ``import tests.overlay``: ``tests`` is no package (pytest puts its folders on the path
    itself), so it would be a namespace folder found through the working directory, and a regular
    ``tests`` package that some wheel left in the stack's site-packages wins over a namespace folder
    wherever it sits on ``sys.path``. Imported from its own path under a name nothing else uses, the
    package is this repository's, and its modules' relative imports (``from .overlay_stand_ins
    import ...``) resolve inside it. ``sys.path`` is left as it was.
    """
    if PACKAGE not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            PACKAGE, TESTS / "__init__.py", submodule_search_locations=[str(TESTS)]
        )
        if spec is None or spec.loader is None:
            raise SystemExit(f"{TESTS}: not the overlay's tests (no __init__.py)")
        package = importlib.util.module_from_spec(spec)
        sys.modules[PACKAGE] = package  # before it runs: its submodules find their parent there
        spec.loader.exec_module(package)
    return PACKAGE


def test_modules() -> list[ModuleType]:
    package = overlay_tests()
    return [importlib.import_module(f"{package}.{p.stem}") for p in sorted(TESTS.glob("test_overlay_*.py"))]


def test_functions(module: ModuleType) -> list[Callable[..., None]]:
    found = [
        fn
        for name, fn in vars(module).items()
        if name.startswith("test_") and inspect.isfunction(fn) and fn.__module__ == module.__name__
    ]
    return sorted(found, key=lambda fn: fn.__code__.co_firstlineno)


def check_name(fn: Callable[..., None]) -> str:
    """A check's words: its docstring's first line (the function's name when it has none)."""
    return (fn.__doc__ or fn.__name__).strip().splitlines()[0]


def run_one(fn: Callable[..., None], kwargs: dict[str, Any], name: str) -> bool:
    try:
        fn(**kwargs)
    except AssertionError as exc:
        print(f"FAIL  {name}{('  ' + str(exc)) if str(exc) else ''}")
        return False
    except Exception as exc:
        print(f"FAIL  {name}  {type(exc).__name__}: {exc}")
        return False
    print(f"PASS  {name}")
    return True


def run(tree: Path, device: str) -> int:
    stand_ins = importlib.import_module(f"{overlay_tests()}.overlay_stand_ins")
    zero = stand_ins.load(tree, device)  # an overlay_stand_ins.Overlay
    results: list[bool] = []
    for module in test_modules():
        print(f"-- {(module.__doc__ or module.__name__).strip().splitlines()[0]}")
        for fn in test_functions(module):
            params = list(inspect.signature(fn).parameters)
            unknown = [p for p in params if p not in FIXTURES]
            if unknown:
                print(
                    f"{module.__name__}.{fn.__name__} asks for {unknown}; the runner has only {list(FIXTURES)}"
                )
                return 2
            for cpu_lens in (True, False) if "cpu_lens" in params else (None,):
                kwargs: dict[str, Any] = {"zero": zero} if "zero" in params else {}
                name = check_name(fn)
                if cpu_lens is not None:
                    kwargs["cpu_lens"] = cpu_lens
                    name += f" (with{'' if cpu_lens else 'out'} a CPU copy of the sequence lengths)"
                results.append(run_one(fn, kwargs, name))
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
