"""Values of SGLang's JSON answers, typed: a value of the wrong type is unknown (None), never an error
(``info_view`` and ``zero_step_view`` read every field through these)."""

from __future__ import annotations

import math
from typing import Any


def as_int(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, float) and (not math.isfinite(value) or not value.is_integer()):
        return None
    return int(value)


def as_float(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def as_bool(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def as_str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def as_ints(value: Any) -> tuple[int, ...]:
    if not isinstance(value, list | tuple):
        return ()
    found = [as_int(v) for v in value]
    return tuple(v for v in found if v is not None)


def as_floats(value: Any) -> tuple[float, ...]:
    if not isinstance(value, list | tuple):
        return ()
    found = [as_float(v) for v in value]
    return tuple(v for v in found if v is not None)
