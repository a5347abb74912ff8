"""Profile values in an operator's words: "unset", "on"/"off", plain numbers and names, never a repr.

Plans, reasons and event messages quote profile values; the agent writes them and the console shows
them as they are, so the words are decided here, once, where both sides can import them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence


def value_words(value: object) -> str:
    """``None`` → "unset", ``True``/``False`` → "on"/"off", ``[1, 2]`` → "1, 2", ``[]`` → "none"."""
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, str):
        return value or "empty"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, Mapping):
        if not value:
            return "none"
        return ", ".join(f"{k} {value_words(v)}" for k, v in value.items())
    if isinstance(value, Sequence):
        return ", ".join(value_words(v) for v in value) if value else "none"
    return str(value)


def given_words(value: object) -> str:
    """What a client sent, in words for a refusal: no value, true/false as JSON and TOML write them,
    text in quotes, a list as ``[1, 2]``; never a Python repr (``None``, ``True``, ``'x'``)."""
    if value is None:
        return "no value"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f"“{value}”" if value else "an empty text"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(given_words(v) for v in value) + "]"
    return value_words(value)


def count_words(n: int, noun: str) -> str:
    """ "1 request", "12 requests": a count with its noun, never "request(s)"."""
    return f"{n:,} {noun}" if n == 1 else f"{n:,} {noun}s"


Known = Callable[[str, object], "tuple[str, str] | None"]
"""A setting's name and its value in words for a key a caller knows (the action catalogue's
``agent.wire.actions.said``), None for any other key."""


def change_words(before: object, after: object, known: Known | None = None) -> str:
    """An audit line's change: "threshold 143 → 40; steps not pinned → 2" for each key its before
    and after name (a key that did not change reads once: "threshold 143"); "" when it names none.
    ``known`` names the keys it knows in its own words, any other key reads as it is."""

    def said(key: str, value: object) -> tuple[str, str]:
        found = known(key, value) if known is not None else None
        return found if found is not None else (key, value_words(value))

    if isinstance(before, Mapping) and isinstance(after, Mapping):
        parts = []
        for key in dict.fromkeys([*before, *after]):
            name, old = said(key, before.get(key))
            new = said(key, after.get(key))[1]
            parts.append(f"{name} {old}" if old == new else f"{name} {old} → {new}")
        return "; ".join(parts)
    if before is None and after is None:
        return ""
    return f"{value_words(before)} → {value_words(after)}"


def printable_words(text: str, limit: int | None = None) -> str:
    """``text`` safe to print on a terminal or in one log line: each control character, line break,
    terminal escape or other non-printing character written as its escape (``\\n``, ``\\x1b``,
    ``\\u202e``), so that no text can start a line of its own or recolour the screen; cut at
    ``limit`` characters with "…"."""
    out = []
    for c in text:
        if c.isprintable() or c == " ":
            out.append(c)
        elif c == "\n":
            out.append("\\n")
        elif c == "\t":
            out.append("\\t")
        elif c == "\r":
            out.append("\\r")
        elif ord(c) < 0x100:
            out.append(f"\\x{ord(c):02x}")
        else:
            out.append(f"\\u{ord(c):04x}" if ord(c) < 0x10000 else f"\\U{ord(c):08x}")
    shown = "".join(out)
    return shown if limit is None or len(shown) <= limit else shown[: limit - 1] + "…"
