"""Reading the operator's ``server.extra_flags`` the way argparse will (SGLang 0.5.23's launcher parses them).

Rules need to know whether an extra flag turns something on that changes what SGLang supports
(attention DP, two-batch overlap, FlashInfer all-reduce fusion...). Flags may be written
``--name value`` or ``--name=value``; a flag followed by another flag (or nothing) is a switch.
"""

from __future__ import annotations


def parse_extra_flags(items: list[str]) -> dict[str, list[str]]:
    """Map each ``--flag`` to the values that follow it (empty for a switch); later repeats append."""
    parsed: dict[str, list[str]] = {}
    current: str | None = None
    for item in items:
        if item.startswith("--"):
            name, sep, value = item.partition("=")
            parsed.setdefault(name, [])
            if sep:
                parsed[name].append(value)
                current = None
            else:
                current = name
        elif current is not None:
            parsed[current].append(item)
    return parsed


def flag_names(items: list[str]) -> list[str]:
    """The flag names (``--foo``) in order of appearance."""
    return [item.partition("=")[0] for item in items if item.startswith("--")]


def first_value(items: list[str], name: str) -> str | None:
    values = parse_extra_flags(items).get(name)
    return values[0] if values else None


def has_flag(items: list[str], *names: str) -> bool:
    parsed = parse_extra_flags(items)
    return any(n in parsed for n in names)
