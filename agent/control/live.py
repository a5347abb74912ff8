"""Applying a live change to a running engine, and proving it took.

The round trip (``/set_internal_state``, the answer per DP rank, the read-back from ``/server_info``)
is ``EngineClient.set_live`` in ``agent.sglang``, shared with the benchmark; this module turns its
outcome into the operator's words.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import httpx

from agent.profile.words import value_words
from agent.sglang import live_control
from agent.sglang.client import EngineClient, EngineError
from agent.sglang.info_view import LiveSpec
from agent.sglang.live_control import READBACK_OF


@dataclass(frozen=True)
class LiveOutcome:
    ok: bool
    message: str
    readback: dict[str, Any] = field(default_factory=dict)


def _readback(live: LiveSpec, keys: list[str]) -> dict[str, Any]:
    return {READBACK_OF[k]: live.value_of(k) for k in keys}


async def apply_live(
    http: httpx.AsyncClient, url: str, args: dict[str, int], headers: dict[str, str]
) -> LiveOutcome:
    """Set the live keys ``args`` and read them back; ``ok`` only when the engine reports them."""
    client = EngineClient(url, http, headers=headers, timeout_s=30.0)
    try:
        live = await client.set_live(**args)
    except EngineError as exc:
        return LiveOutcome(False, str(exc))
    readback = _readback(live, list(args))
    return LiveOutcome(True, f"applied live; the engine reports {readback_words(readback)}", readback)


def readback_words(values: dict[str, Any]) -> str:
    """``{"threshold": 64, "pinned_steps": -1}`` → "threshold 64, steps chosen by SGLang's policy"."""
    parts = []
    for key, value in values.items():
        if key == "threshold":
            parts.append("no threshold" if value == live_control.NO_THRESHOLD else f"threshold {value}")
        elif key == "pinned_steps":
            released = value == live_control.RELEASE_PINNED_STEPS
            parts.append("steps chosen by SGLang's policy" if released else f"steps pinned at {value}")
        else:
            parts.append(f"{key} {value_words(value)}")
    return ", ".join(parts) or "nothing"
