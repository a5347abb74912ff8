"""The flags SGLang 0.5.23's launcher accepts, so a typo in ``server.extra_flags`` is caught before launch.

``cli_flags.json`` is generated from the pinned wheel's source (``tests/contract/sglang_source.py``)
and a contract test fails when it no longer matches, so it moves with the pin. Each flag is a
``switch`` (no value), takes one ``value``, or a ``list`` of one or more values.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Literal, cast

FlagKind = Literal["switch", "value", "list"]


@cache
def known_flags() -> dict[str, FlagKind]:
    data = json.loads(resources.files("agent.sglang").joinpath("cli_flags.json").read_text(encoding="utf-8"))
    return cast(dict[str, FlagKind], data["flags"])


def extra_flag_problems(items: list[str]) -> list[str]:
    """What is wrong with an argv fragment for 0.5.23's parser: unknown flags, switches given values, missing values."""
    flags = known_flags()
    problems: list[str] = []
    i = 0
    while i < len(items):
        item = items[i]
        name, has_inline, _ = item.partition("=")
        kind = flags.get(name)
        if kind is None:
            problems.append(f"{name} is not a flag of SGLang 0.5.23")
            i += 1
            while i < len(items) and not items[i].startswith("--"):
                i += 1
            continue
        following = 0
        j = i + 1
        while j < len(items) and not items[j].startswith("--"):
            following += 1
            j += 1
        if kind == "switch" and (has_inline or following):
            problems.append(f"{name} is a switch and takes no value")
        elif kind == "value" and (int(bool(has_inline)) + following) != 1:
            problems.append(f"{name} takes exactly one value")
        elif kind == "list" and not (has_inline or following):
            problems.append(f"{name} needs one or more values")
        i = j
    return problems
