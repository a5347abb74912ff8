"""Profile values in an operator's words: "unset", "on"/"off", plain numbers and names, never a repr.

Plans, reasons and event messages quote profile values; the agent writes them and the console shows
them as they are, so the words are decided here, once, where both sides can import them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence


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
