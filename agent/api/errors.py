"""The 422 a request that breaks a field's rule gets: the field and what it allows, never what was sent.

FastAPI's own answer carries each error's ``input``: a 50 MB ``operator`` came back whole, and a
``NaN`` in it made the answer itself fail ("Out of range float values are not JSON compliant",
naming no field). Here each error keeps its place (``loc``), its words (``msg``) and its ``type``;
a pattern is said in words where the agent has words for it (``wire.plans.PRINTABLE``). A body can
break many rules at once (a 1 MiB body holds 100,000 unknown keys): the answer says the first
``ERRORS_SHOWN`` and how many more, so it stays a few KB whatever was sent.
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


ERRORS_SHOWN = 10
"""The refusals one answer lists; the rest are counted."""

TYPE_WORDS = {"extra_forbidden": "no such field in this request"}


def _msg(error: dict[str, Any]) -> str:
    if error.get("type") in TYPE_WORDS:
        return TYPE_WORDS[str(error.get("type"))]
    if error.get("type") == "string_pattern_mismatch":
        pattern = str((error.get("ctx") or {}).get("pattern"))
        return PATTERN_WORDS.get(pattern, str(error.get("msg", "")))
    return str(error.get("msg", ""))


def _loc(loc: Any) -> list[str | int]:
    return [part if isinstance(part, int) else str(part)[:64] for part in (loc or ())]


def shown_errors(errors: Any) -> list[dict[str, Any]]:
    """The errors as the answer carries them: place, words, type; no input, no context; the first
    ``ERRORS_SHOWN``, then one line that counts the rest."""
    errors = list(errors)
    shown: list[dict[str, Any]] = [
        {"loc": _loc(e.get("loc")), "msg": _msg(e), "type": str(e.get("type", ""))}
        for e in errors[:ERRORS_SHOWN]
    ]
    if len(errors) > ERRORS_SHOWN:
        more = len(errors) - ERRORS_SHOWN
        shown.append({"loc": [], "msg": f"and {more} more refusals of this request", "type": "more_errors"})
    return shown


async def validation_error(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    return JSONResponse(status_code=422, content={"detail": shown_errors(exc.errors())})
