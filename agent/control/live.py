"""Applying a live change to a running engine through ``/set_internal_state``, and proving it took.

SGLang 0.5.23 answers ``/set_internal_state`` with one bool per scheduler (``[true]`` on success,
``tokenizer_control_mixin.set_internal_state``). A 200 with ``[false]`` means a rank refused, so we
check the body, then read the value back from ``/server_info`` → ``internal_states[0]``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import httpx

from agent.profile.words import value_words
from agent.sglang import live_control

READBACK_OF = {
    live_control.LIVE_THRESHOLD_KEY: "threshold",
    live_control.LIVE_STEPS_KEY: "pinned_steps",
}


@dataclass(frozen=True)
class LiveOutcome:
    ok: bool
    message: str
    readback: dict[str, Any] = field(default_factory=dict)


async def read_live_state(
    http: httpx.AsyncClient, url: str, headers: dict[str, str]
) -> dict[str, Any] | None:
    response = await http.get(url + "/server_info", headers=headers, timeout=10.0)
    response.raise_for_status()
    states = response.json().get("internal_states") or []
    if not states or not isinstance(states[0], dict):
        return None
    live = states[0].get(live_control.READBACK_FIELD)
    return live if isinstance(live, dict) else None


async def apply_live(
    http: httpx.AsyncClient, url: str, args: dict[str, int], headers: dict[str, str]
) -> LiveOutcome:
    try:
        response = await http.post(
            url + "/set_internal_state", json={"server_args": args}, headers=headers, timeout=30.0
        )
    except httpx.HTTPError as exc:
        return LiveOutcome(False, f"the engine did not answer /set_internal_state: {type(exc).__name__}")
    if response.status_code != 200:
        return LiveOutcome(False, f"the engine answered /set_internal_state with HTTP {response.status_code}")
    body = response.json()
    if not isinstance(body, list) or not body or not all(x is True for x in body):
        return LiveOutcome(
            False, f"the engine refused the change (it answered {response.text[:200]}); nothing was changed"
        )
    try:
        live = await read_live_state(http, url, headers)
    except (httpx.HTTPError, ValueError) as exc:
        return LiveOutcome(False, f"applied, but /server_info could not be read back: {type(exc).__name__}")
    if live is None:
        return LiveOutcome(
            False, f"applied, but /server_info has no {live_control.READBACK_FIELD} to read back"
        )
    readback = {READBACK_OF[k]: live.get(READBACK_OF[k]) for k in args}
    wrong = {k: v for k, v in args.items() if live.get(READBACK_OF[k]) != v}
    if wrong:
        asked = {READBACK_OF[k]: v for k, v in args.items()}
        return LiveOutcome(
            False,
            f"the engine reports {readback_words(readback)} after asking for {readback_words(asked)}",
            readback,
        )
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
