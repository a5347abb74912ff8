"""The 422 a request that breaks a field's rule gets: the field and what it allows, never what was sent.

FastAPI's own answer carries each error's ``input``: a 50 MB ``operator`` came back whole, and a
``NaN`` in it made the answer itself fail ("Out of range float values are not JSON compliant",
naming no field). Here each error keeps its place (``loc``), its words (``msg``) and its ``type``;
a pattern is said in words where the agent has words for it (``wire.plans.PRINTABLE``).
"""

from __future__ import annotations

from typing import Any

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from agent.wire.plans import PRINTABLE

PATTERN_WORDS = {
    PRINTABLE: "String should be printable text: no control characters, line breaks or terminal escapes",
}


def _msg(error: dict[str, Any]) -> str:
    if error.get("type") == "string_pattern_mismatch":
        pattern = str((error.get("ctx") or {}).get("pattern"))
        return PATTERN_WORDS.get(pattern, str(error.get("msg", "")))
    return str(error.get("msg", ""))


def _loc(loc: Any) -> list[str | int]:
    return [part if isinstance(part, int) else str(part)[:64] for part in (loc or ())]


def shown_errors(errors: Any) -> list[dict[str, Any]]:
    """The errors as the answer carries them: place, words, type; no input, no context."""
    return [{"loc": _loc(e.get("loc")), "msg": _msg(e), "type": str(e.get("type", ""))} for e in errors]


async def validation_error(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    return JSONResponse(status_code=422, content={"detail": shown_errors(exc.errors())})
