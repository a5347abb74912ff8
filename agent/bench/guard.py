"""The hook a compare calls around what it forces on the engine, so a caller can write it ahead.

A compare forces the live threshold (and pins the step policy) for each arm and puts the values it
found back at its end. A run cut short (its process killed) never reaches that end: the engine keeps
the arm's value, and the next agent would take it for the operator's. ``forcing`` is called with the
values to put back before anything is forced (it may raise to refuse the run: nothing is forced
then), ``restored`` once the run has tried to put them back. The agent's guard audits both
(``agent.serve.bench_forcing``), so whoever comes next finds an intent with no outcome and puts
the values back. Kept here, free of the audit: this package measures, it does not persist.
"""

from __future__ import annotations

from typing import Protocol

from agent.sglang.live_control import LIVE_STEPS_KEY, LIVE_THRESHOLD_KEY, RELEASE_PINNED_STEPS


class LiveGuard(Protocol):
    def forcing(self, restore: dict[str, int]) -> None:
        """Before the first forced value: ``restore`` is the live keys and values to put back."""

    def restored(self, ok: bool, message: str) -> None:
        """After the run put them back (``ok``) or could not (``message`` says why)."""


def restore_args(threshold: int, steps_reset: bool) -> dict[str, int]:
    """What a compare puts back: the threshold it found and, where it pinned the steps to reset them,
    the step choice given back to SGLang's policy."""
    args = {LIVE_THRESHOLD_KEY: threshold}
    if steps_reset:
        args[LIVE_STEPS_KEY] = RELEASE_PINNED_STEPS
    return args
