"""The adaptive speculative-decoding config JSON that SGLang 0.5.23 reads (``--speculative-adaptive-config``).

SGLang's loader (``srt/speculative/adaptive_spec_params.py: _load_adaptive_config``) treats every
top-level key made of digits as a batch-size slot ``{"candidate_steps": [...], ...}`` and merges
every other top-level key *under* each slot as a default. A running batch is routed to the largest
slot key not above its size (the smallest slot when below all keys), and the slot's EMA policy
chooses among its candidate steps; ``0`` steps means plain decoding.

k25console maps the operator's two controls onto that format:

* the *threshold* T becomes a slot ``"T": {"candidate_steps": [0]}``: batches of T or more never
  speculate;
* the slot ``"1"`` carries the step counts the operator may pick live (``speculation.live_steps``,
  or just ``speculation.num_steps``); SGLang builds a runtime state (CUDA graphs included) for every
  step in the union of all slots at start-up, which is what makes switching among them possible
  without a restart.
"""

from __future__ import annotations

from typing import Any

from agent.profile.schema import Profile, Speculation
from agent.sglang.live_control import ZERO_STEP_CONFIG_KEY

FIRST_SLOT = 1
"""The slot that holds every batch below the threshold (SGLang routes smaller batches to the smallest key)."""

NO_SPECULATION_STEPS = 0
"""A candidate step of 0: SGLang skips drafting and verifies one token (plain decode)."""

SLOT_FIELDS = (
    "candidate_steps",
    "ema_alpha",
    "update_interval",
    "warmup_batches",
    "down_hysteresis",
    "up_hysteresis",
    "ceiling_coeff",
)
"""Per-slot keys SGLang 0.5.23 reads (``AdaptiveStepSlot.__init__``); any other key is ignored by it."""


def live_step_choices(spec: Speculation) -> list[int]:
    """Step counts below the threshold: the operator's live choices, or the single configured count."""
    if spec.live_steps:
        return sorted(spec.live_steps)
    return [spec.num_steps] if spec.num_steps is not None else []


def adaptive_config(profile: Profile) -> dict[str, Any] | None:
    """The JSON object to write for ``--speculative-adaptive-config``, or None when adaptive is off.

    Raises ValueError for a threshold of 1: every batch would route to the 0-step slot and the
    speculating states would never be built. ``agent.sglang.rules.check_profile`` reports that
    first, with the file and key.
    """
    spec = profile.speculation
    if not profile.speculative or not spec.adaptive:
        return None
    steps = live_step_choices(spec)
    if not steps:
        raise ValueError("adaptive speculation needs speculation.num_steps or speculation.live_steps")
    config: dict[str, Any] = {}
    # Global defaults first: SGLang merges non-digit keys under every slot.
    for key in ("ema_alpha", "update_interval", "warmup_batches"):
        value = getattr(spec, key)
        if value is not None:
            config[key] = value
    # Patch 03's launch path; SGLang merges it under each slot as a default and never reads it.
    config[ZERO_STEP_CONFIG_KEY] = spec.zero_step
    config[str(FIRST_SLOT)] = {"candidate_steps": steps}
    if spec.threshold is not None:
        if spec.threshold <= FIRST_SLOT:
            raise ValueError("the speculation threshold must be at least 2")
        config[str(spec.threshold)] = {"candidate_steps": [NO_SPECULATION_STEPS]}
    return config


def slots(config: dict[str, Any]) -> dict[int, dict[str, Any]]:
    """The batch-size slots of a config as SGLang reads them (digit keys only), each merged with the globals."""
    globals_ = {k: v for k, v in config.items() if not k.isdigit()}
    return {int(k): {**globals_, **v} for k, v in config.items() if k.isdigit()}


def candidate_steps(config: dict[str, Any]) -> list[int]:
    """The union of every slot's candidate steps: the states SGLang builds at start-up.

    Mirrors ``resolve_candidate_steps_from_config``; its maximum plus one is the draft width SGLang
    sizes KV reservation and buffers for, whatever tier is active.
    """
    union: set[int] = set()
    for entry in slots(config).values():
        union.update(int(s) for s in entry["candidate_steps"])
    return sorted(union)


def route(config: dict[str, Any], batch_size: int) -> int:
    """The slot key SGLang routes a batch of ``batch_size`` to (without CUDA-graph padding).

    Same rule as ``AdaptiveSpeculativeParams._find_closest_bs``: the largest key not above the
    batch size, or the smallest key when the batch is below all of them.
    """
    keys = sorted(slots(config))
    below = [k for k in keys if k <= batch_size]
    return below[-1] if below else keys[0]
