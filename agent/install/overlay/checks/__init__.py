"""Patch 03's torch-side checks: the zero-step runtime driven with torch and stand-ins for SGLang.

They live beside the overlay they check, not under ``tests/``, so that a copy of the repository that
leaves ``tests/`` out (a GPU host's) still runs them: ``bench/real/zero_step_preflight.py`` runs them
there without pytest, and ``tests/overlay`` runs the same ones under pytest in the CPU torch venv. So
the modules import torch and each other (relatively: the package is imported from its folder under a
name of its own) and nothing else; ``agent install`` does not copy them (only ``overlay/sglang`` is
installed).

* ``stand_ins``: the SGLang names the runtime imports lazily, stood in for, and ``load`` (the overlay's
  modules from a tree, with the stand-ins).
* ``world``: a small scheduler around the runtime (requests, slots, rounds, prefills, resumes).
* ``check_*``: the checks, one function ``test_*`` each, whose docstring's first line is its words.
  A check takes ``zero`` (the loaded overlay) and, where the batch may or may not carry a CPU copy of
  its sequence lengths, ``cpu_lens``; ``plan`` runs each such check both ways.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ARGUMENTS = ("zero", "cpu_lens")
"""What a check may take: the loaded overlay, and whether the batch carries a CPU copy of its lengths."""


@dataclass(frozen=True)
class Check:
    """One check as it runs: its function, its words, and ``cpu_lens`` (None: the check does not take it)."""

    fn: Callable[..., None]
    module: str
    words: str
    cpu_lens: bool | None

    @property
    def id(self) -> str:
        """``module.function`` and the ``cpu_lens`` variant: unique, for pytest's ids."""
        variant = "" if self.cpu_lens is None else ("[cpu-lens]" if self.cpu_lens else "[gpu-lens-only]")
        return f"{self.module}.{self.fn.__name__}{variant}"

    @property
    def name(self) -> str:
        """The words the preflight prints (the ``cpu_lens`` variant said)."""
        if self.cpu_lens is None:
            return self.words
        return f"{self.words} (with{'' if self.cpu_lens else 'out'} a CPU copy of the sequence lengths)"

    def run(self, zero: Any) -> None:
        params = inspect.signature(self.fn).parameters
        kwargs: dict[str, Any] = {"zero": zero} if "zero" in params else {}
        if self.cpu_lens is not None:
            kwargs["cpu_lens"] = self.cpu_lens
        self.fn(**kwargs)


def modules() -> list[Any]:
    """The ``check_*`` modules, by file name."""
    here = Path(__file__).resolve().parent
    return [importlib.import_module(f"{__name__}.{p.stem}") for p in sorted(here.glob("check_*.py"))]


def plan() -> list[Check]:
    """Every check, in file and line order, ``cpu_lens`` checks twice; a check that asks for an
    argument nobody gives is an error naming it."""
    out: list[Check] = []
    for module in modules():
        short = module.__name__.rsplit(".", 1)[-1]
        found = [
            fn
            for name, fn in vars(module).items()
            if name.startswith("test_") and inspect.isfunction(fn) and fn.__module__ == module.__name__
        ]
        for fn in sorted(found, key=lambda fn: fn.__code__.co_firstlineno):
            params = list(inspect.signature(fn).parameters)
            unknown = [p for p in params if p not in ARGUMENTS]
            if unknown:
                raise TypeError(
                    f"{short}.{fn.__name__} asks for {unknown}; a check may take only {list(ARGUMENTS)}"
                )
            words = (fn.__doc__ or fn.__name__).strip().splitlines()[0]
            variants: tuple[bool | None, ...] = (True, False) if "cpu_lens" in params else (None,)
            out.extend(Check(fn, short, words, v) for v in variants)
    return out


def title(module: str) -> str:
    """A check module's first docstring line (the preflight's section heading)."""
    doc = importlib.import_module(f"{__name__}.{module}").__doc__
    return (doc or module).strip().splitlines()[0]
