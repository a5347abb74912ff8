"""The live-speculation keys that k25console's SGLang patch adds (SGLang 0.5.23).

Defined once here so that the simulated engine, the agent's controller and the patch set's tests
share them; a test checks that the patch under ``agent/install/patches`` uses exactly these names.

SGLang 0.5.23 reads its adaptive config once, at start-up. The patch lets two things change on a
running server through ``POST /set_internal_state`` ``{"server_args": {KEY: value}}``:

* ``LIVE_THRESHOLD_KEY``: the speculation threshold, an int. A running batch of this many requests
  or more decodes with 0 speculative steps. ``0`` means "no threshold": speculate at every batch size
  (the slots' own candidate steps apply). ``1`` means "never speculate".
* ``LIVE_STEPS_KEY``: the step count used below the threshold, an int that must be one of the
  pre-built candidate states (> 0), or ``-1`` to hand the choice back to SGLang's EMA policy.

Both are validated identically on every TP rank (no rank-local state is consulted) and applied
without going through SGLang's config-override call, which rejects unknown names.

The live state is read back in ``/server_info`` → ``internal_states[0][READBACK_FIELD]``, a dict
with the keys in ``READBACK_KEYS``.
"""

from typing import Final

LIVE_THRESHOLD_KEY: Final = "adaptive_spec_threshold"
LIVE_STEPS_KEY: Final = "adaptive_spec_steps"
LIVE_KEYS: Final = (LIVE_THRESHOLD_KEY, LIVE_STEPS_KEY)

RELEASE_PINNED_STEPS: Final = -1
"""Value of ``LIVE_STEPS_KEY`` that returns step choice to SGLang's EMA policy."""

NO_THRESHOLD: Final = 0
"""Value of ``LIVE_THRESHOLD_KEY`` that speculates at every batch size."""

READBACK_FIELD: Final = "adaptive_spec_live"
READBACK_OF: Final = {LIVE_THRESHOLD_KEY: "threshold", LIVE_STEPS_KEY: "pinned_steps"}
"""Each live key → the read-back key that shows its value."""
READBACK_KEYS: Final = (
    "threshold",  # int, NO_THRESHOLD when unset
    "pinned_steps",  # int, RELEASE_PINNED_STEPS when the EMA policy chooses
    "active_steps",  # int, the tier the worker runs now (0 = not speculating)
    "prebuilt_steps",  # sorted list[int], the candidate states built at start-up
    "ema_accept_len",  # float, EMA of accepted draft tokens of the slot that ran last
    "slots",  # {"<bs>": {"current_steps", "candidate_steps", "ema_accept_len", "batch_count"}}
)
