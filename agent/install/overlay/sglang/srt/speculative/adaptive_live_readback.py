"""Read-back of the live adaptive speculative state (k25console patch 02).

Adds ``adaptive_spec_live`` to ``/server_info`` → ``internal_states[i]`` so that an
operator sees what the server does now, not what it was launched with: the live
threshold and pinned step (patch 01), the tier the worker runs, the pre-built states,
and each batch-size slot's policy state.

The dict crosses msgpack IPC and JSON, so it holds only str keys, ints, floats and
lists. No torch, no SGLang imports: testable on its own.
"""

from __future__ import annotations

from typing import Any

READBACK_FIELD = "adaptive_spec_live"


def live_readback(draft_worker: Any) -> dict[str, Any] | None:
    """The live adaptive state of one scheduler's worker, or None when adaptive is off."""
    controller: Any = getattr(draft_worker, "adaptive_controller", None)
    params: Any = getattr(controller, "params", None)
    live = getattr(params, "live", None)
    if live is None:
        return None
    return {
        "threshold": int(live.threshold),
        "pinned_steps": int(live.pinned_steps),
        "active_steps": int(controller.worker.speculative_num_steps),
        "prebuilt_steps": sorted(int(s) for s in controller._states),
        "ema_accept_len": float(live.last_slot.ema_accept_len),
        "slots": {
            str(bs): {
                "current_steps": int(slot.current_steps),
                "candidate_steps": [int(s) for s in slot.candidate_steps],
                "ema_accept_len": float(slot.ema_accept_len),
                "batch_count": int(slot._batch_count),
            }
            for bs, slot in sorted(params._slots.items())
        },
    }


def add_live_readback(state: dict[str, Any], draft_worker: Any) -> None:
    """Add the read-back to an ``internal_state`` dict when adaptive is on."""
    readback = live_readback(draft_worker)
    if readback is not None:
        state[READBACK_FIELD] = readback
