"""What a run cut short keeps: every window it completed, as levels marked partial.

A compare cancelled at 16 of 24 steps, an agent killed mid-run or ``agent bench`` stopped with
Ctrl-C kept only its options and the reason, so twenty minutes of measurement came down to one
line. Now the runner builds, after each completed window, the levels measured so far
(``partial_result``): every arm-level that has a window gets its figure (from the windows it has),
one that has none says so, and ``partial`` says which levels are whole (every window the run meant
to give them), which are cut, and which were not reached. The agent stores it as the run goes (a
kill -9 leaves it on disk), the command line writes it to ``--json`` and prints it. A partial result
recommends nothing: a threshold needs every arm at every level it compares.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from agent.bench.aggregate import Cell, RunOutcome, arm_estimates, arm_result

NOT_MEASURED = "not measured: the run was cut short before this arm's first window here"
Keep = Callable[[dict[str, Any]], None]
"""Given the partial result after each completed window (the agent stores it, the CLI holds it)."""


def ignore_partial(_: dict[str, Any]) -> None:
    return None


def _levels_words(levels: Sequence[int]) -> str:
    return ", ".join(str(c) for c in levels) or "none"


def partial_record(
    concurrency: Sequence[int], measured: Sequence[int], whole: Sequence[int], windows: int
) -> dict[str, Any]:
    """The result's ``partial``: which levels are whole, cut, not reached, in words too."""
    cut = [c for c in measured if c not in whole]
    missing = [c for c in concurrency if c not in measured]
    words = f"partial: levels {_levels_words(whole)} whole, {_levels_words(cut)} cut"
    if missing:
        words += f", {_levels_words(missing)} not reached"
    return {"whole": list(whole), "cut": cut, "not_reached": missing, "windows": windows,
            "words": f"{words} ({windows} windows kept)"}  # fmt: skip


def partial_levels(
    concurrency: Sequence[int],
    arms: Sequence[str],
    outcomes: Mapping[Cell, Sequence[RunOutcome]],
    is_whole: Callable[[int], bool],
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Per level with a window: each arm's figure from its windows (or that it has none); and the
    ``partial`` record. ``is_whole(level_index)``: the level got every window the run meant."""
    figures, noise = arm_estimates(outcomes)
    rows: list[dict[str, Any]] = []
    measured: list[int] = []
    whole: list[int] = []
    for li, c in enumerate(concurrency):
        if not any(outcomes.get((a, li)) for a in arms):
            continue
        measured.append(c)
        if is_whole(li):
            whole.append(c)
        cells = {
            a: arm_result(c, a, outcomes[(a, li)], figures[(a, li)], noise)
            if outcomes.get((a, li))
            else {"unavailable": NOT_MEASURED}
            for a in arms
        }
        rows.append({"concurrency": c, "max_concurrency": c, "cells": cells})
    windows = sum(len(v) for v in outcomes.values())
    return rows, partial_record(concurrency, measured, whole, windows)
