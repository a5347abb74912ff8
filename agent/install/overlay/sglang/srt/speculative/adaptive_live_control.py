"""Live control of adaptive speculative decoding (k25console patch 01).

SGLang reads ``--speculative-adaptive-config`` once, at start-up. This module lets two
things change on a running server through ``/set_internal_state``:

* ``adaptive_spec_threshold`` (int >= 0): a running batch of this many requests or
  more decodes with 0 speculative steps. ``0`` means no threshold (every batch is
  routed to a speculating slot). Needs a pre-built 0-step state.
* ``adaptive_spec_steps`` (int): the step count used below the threshold, one of the
  pre-built states (> 0); ``-1`` hands the choice back to the EMA policy.

The request is broadcast to every TP rank and only rank 0 answers, so validation and
application read nothing but the request and state that every rank built identically
from the same config (the slots and the pre-built state keys); a rank that decided
differently would replay a different graph shape and hang the next collective.

Nothing here imports torch or the rest of SGLang: the slot class is taken from the
params object, and the handler/rejection classes are passed in by the caller, so the
module can be tested on its own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

LIVE_THRESHOLD_KEY = "adaptive_spec_threshold"
LIVE_STEPS_KEY = "adaptive_spec_steps"
RELEASE_PINNED_STEPS = -1
NO_THRESHOLD = 0


def _threshold_slots(slots: dict[int, Any]) -> list[int]:
    """Trailing slot keys whose only candidate is 0 steps: the launch-time threshold."""
    keys: list[int] = []
    for bs in sorted(slots, reverse=True):
        if slots[bs].candidate_steps != [0]:
            break
        keys.insert(0, bs)
    return keys


class LiveAdaptiveState:
    """The live threshold and pinned step of one ``AdaptiveSpeculativeParams``.

    Routing (``route``) replaces ``AdaptiveSpeculativeParams._route``: a batch at or
    above the threshold gets a private slot fixed at 0 steps (its EMA policy can never
    move: 0 is its only candidate); a smaller batch goes to the largest speculating
    slot key <= its padded size, exactly as SGLang routes. The launch-time threshold
    (trailing ``[0]``-only slots) is the initial value, so an untouched server routes as
    unpatched SGLang does (up to CUDA-graph padding: the threshold compares the raw
    batch size, as an operator counts requests).
    """

    def __init__(self, params: Any) -> None:
        self.params = params
        slots = params._slots
        markers = _threshold_slots(slots)
        self.threshold: int = markers[0] if markers else NO_THRESHOLD
        self.pinned_steps: int = RELEASE_PINNED_STEPS
        self._speculating_keys: list[int] = [bs for bs in params._bs_list if bs not in markers] or list(
            params._bs_list
        )
        slot_cls = type(slots[params._bs_list[0]])
        self.zero_slot = slot_cls(0, {"candidate_steps": [0]})
        self._saved_candidates: dict[int, list[int]] = {}
        # Each speculating slot as SGLang built it (its launch step and neutral EMA):
        # what a release goes back to, so the policy learns again (see set_pinned_steps).
        self._launch_state: dict[int, Any] = {
            bs: (slots[bs].current_steps, slots[bs].ema_accept_len) for bs in self._speculating_keys
        }
        # The speculating slot routed last: its EMA is the one worth showing.
        self.last_slot = slots[self._speculating_keys[0]]

    def route(self, batch_size: int) -> Any:
        if self.threshold > NO_THRESHOLD and batch_size >= self.threshold:
            slot = self.zero_slot
        else:
            padded = self.params._pad_to_cuda_graph_bs(batch_size)
            keys = self._speculating_keys
            below = [bs for bs in keys if bs <= padded]
            slot = self.params._slots[below[-1] if below else keys[0]]
            self.last_slot = slot
        return slot

    # ------------------------------------------------------------ validation

    @staticmethod
    def check_threshold(value: Any, prebuilt: list[int]) -> str | None:
        """Why ``value`` cannot be the threshold, or None when it can."""
        if isinstance(value, bool) or not isinstance(value, int):
            return f"{LIVE_THRESHOLD_KEY} must be an integer >= 0, got {value!r}"
        if value < 0:
            return f"{LIVE_THRESHOLD_KEY} must be >= 0 (0 = no threshold), got {value}"
        if value > NO_THRESHOLD and 0 not in prebuilt:
            return (
                f"{LIVE_THRESHOLD_KEY}={value} needs a pre-built 0-step state; "
                f"pre-built steps are {prebuilt} (add a slot with candidate_steps [0] "
                "to the adaptive config and restart)"
            )
        return None

    @staticmethod
    def check_steps(value: Any, prebuilt: list[int]) -> str | None:
        """Why ``value`` cannot be the pinned step, or None when it can."""
        if isinstance(value, bool) or not isinstance(value, int):
            return f"{LIVE_STEPS_KEY} must be an integer, got {value!r}"
        if value == RELEASE_PINNED_STEPS:
            return None
        speculating = [s for s in prebuilt if s > 0]
        if value not in speculating:
            return (
                f"{LIVE_STEPS_KEY}={value} is not a pre-built speculating state; "
                f"choose one of {speculating} or {RELEASE_PINNED_STEPS} to release"
            )
        return None

    # ----------------------------------------------------------------- apply

    def set_threshold(self, value: int) -> None:
        self.threshold = value

    def set_pinned_steps(self, value: int) -> None:
        """Pin every speculating slot to one step, or release the pin.

        Pinning narrows each slot's candidates to ``[value]`` so its EMA policy can
        only stay there, and moves the slot's current step to the nearest member
        (``_recompute_params`` looks it up with ``list.index``).

        Releasing restores the launch candidates and resets each pinned slot to the
        state SGLang built it in: the launch step, the neutral EMA (steps - 1) and a
        new warm-up (batch count 0). The EMA measured under a pin of k steps is
        censored at k accepted drafts, so it cannot tell whether more steps would be
        accepted; left as it was, a slot pinned to 1 step reads ~1.0 and the policy
        climbs back one step per update interval at best. Reset, the policy starts
        again from the operator's launch setting and adapts after its warm-up.
        """
        slots = self.params._slots
        for bs in self._speculating_keys:
            slot = slots[bs]
            if value == RELEASE_PINNED_STEPS:
                if bs not in self._saved_candidates:
                    continue
                slot.candidate_steps = self._saved_candidates.pop(bs)
                slot.current_steps, slot.ema_accept_len = self._launch_state[bs]
                slot._batch_count = 0
            else:
                self._saved_candidates.setdefault(bs, slot.candidate_steps)
                slot.candidate_steps = [value]
            if slot.current_steps not in slot.candidate_steps:
                slot.current_steps = min(slot.candidate_steps, key=lambda s: (abs(s - slot.current_steps), s))
        self.pinned_steps = value
        # The union of candidates is a cached_property; drop the stale value.
        self.params.__dict__.pop("candidate_steps", None)


def _controller_of(scheduler: Any) -> Any:
    worker = getattr(scheduler, "draft_worker", None)
    return getattr(worker, "adaptive_controller", None)


def update_handlers(
    scheduler: Any,
    handler_cls: Callable[..., Any],
    rejected_cls: Callable[[str], Exception],
) -> dict[str, Any]:
    """``/set_internal_state`` handlers for the two live keys.

    Both apply handlers return None: the keys are not ``ServerArgs`` fields, and
    ``get_context().override`` raises for unknown names after validation succeeded.
    """

    def live_state(key: str) -> LiveAdaptiveState:
        controller = _controller_of(scheduler)
        live: LiveAdaptiveState | None = getattr(getattr(controller, "params", None), "live", None)
        if live is None:
            raise rejected_cls(
                f"{key} needs adaptive speculative decoding "
                "(--speculative-adaptive, still enabled after resolution)."
            )
        return live

    def prebuilt() -> list[int]:
        return sorted(_controller_of(scheduler)._states)

    def validate(check: Callable[[Any, list[int]], str | None]) -> Callable[[str, Any], None]:
        def run(key: str, value: Any) -> None:
            live_state(key)
            reason = check(value, prebuilt())
            if reason is not None:
                raise rejected_cls(reason)

        return run

    def apply_threshold(key: str, value: Any) -> None:
        live_state(key).set_threshold(int(value))

    def apply_steps(key: str, value: Any) -> None:
        live_state(key).set_pinned_steps(int(value))

    return {
        LIVE_THRESHOLD_KEY: handler_cls(validate(LiveAdaptiveState.check_threshold), apply_threshold),
        LIVE_STEPS_KEY: handler_cls(validate(LiveAdaptiveState.check_steps), apply_steps),
    }
