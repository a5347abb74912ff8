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

from agent.wire.actions import NO_THRESHOLD as NO_THRESHOLD
from agent.wire.actions import RELEASE_PINNED_STEPS as RELEASE_PINNED_STEPS

LIVE_THRESHOLD_KEY: Final = "adaptive_spec_threshold"
LIVE_STEPS_KEY: Final = "adaptive_spec_steps"
LIVE_KEYS: Final = (LIVE_THRESHOLD_KEY, LIVE_STEPS_KEY)

# The two sentinels are the operator's values on the wire (``agent.wire.actions``, defined once
# there): RELEASE_PINNED_STEPS as LIVE_STEPS_KEY returns the step choice to SGLang's EMA policy,
# NO_THRESHOLD as LIVE_THRESHOLD_KEY speculates at every batch size; the patch reads the same numbers.

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

# Patch 03 (zero-step rounds as plain decodes): agent/install/patches/03-zero-step-plain-decode/README.md
ZERO_STEP_KEY: Final = "adaptive_spec_zero_step_plain"
"""Live key: the path of 0-step rounds, ``ZERO_STEP_VALUE[path]`` (an int: SGLang's request type
``Dict[str, Union[int, float]]`` admits no other values)."""
ZERO_STEP_PLAIN: Final = "plain"
"""A 0-step round is the target's own decode (DECODE mode and graph), the draft caught up on resume."""
ZERO_STEP_VERIFY: Final = "verify"
"""A 0-step round is SGLang 0.5.23's own: a one-token verify through the target-verify graph."""
ZERO_STEP_PATHS: Final = (ZERO_STEP_PLAIN, ZERO_STEP_VERIFY)
ZERO_STEP_VALUE: Final = {ZERO_STEP_PLAIN: 1, ZERO_STEP_VERIFY: 0}
ZERO_STEP_CONFIG_KEY: Final = "k25_zero_step"
"""Global key of the adaptive config JSON: the launch path (absent: plain)."""
ROUND_TIMING_KEY: Final = "k25_round_timing"
"""Live key on any patched server: time the next N rounds part by part (0 clears the table)."""
ZERO_STEP_READBACK_FIELD: Final = "zero_step"
"""Field of the ``READBACK_FIELD`` dict that patch 03 adds."""
ZERO_STEP_READBACK_KEYS: Final = (
    "path",  # str, the path in force
    "launch_path",  # str, what the adaptive config asked for
    "plain_built",  # bool, whether the plain decode state exists
    "build_error",  # str | None, why it does not
    "plain_rounds",  # int, 0-step rounds that decoded plainly
    "verify_rounds",  # int, 0-step rounds on the verify path by choice
    "fallback_rounds",  # int, 0-step rounds on the verify path because the batch needed it
    "last_fallback",  # str | None, what the last such batch needed
    "forced_zero",  # int, batches planned at 0 steps that the policy would have moved
    "catchups",  # int, draft catch-ups on resume
    "catchup_tokens",  # int, tokens they re-extended
    "catchups_skipped",  # int, requests of resume batches that had nothing to catch up on
    "plain_prefills",  # int, prefills that joined a 0-step batch: no draft extend, caught up on resume
    "errors",  # int, catch-ups that failed (the draft then resumed cold)
    "last_error",  # str | None
    "last_reserve",  # int | None, per-request KV reserve of the last decode batch prepared
    "state",  # {str: int | None} | None, sizes of what the runtime keeps across rounds (ZERO_STEP_STATE_KEYS)
    "host",  # {str: ...}, the scheduler process's memory and collector time (ZERO_STEP_HOST_KEYS)
)
ZERO_STEP_STATE_KEYS: Final = (
    "missed_slots",  # request slots that decoded without the draft, not yet caught up (deferred catch-ups)
    "ring_slots",  # int | None, the ring's rows (the request pool's slots; None before its first use)
    "ring_width",  # int | None, positions kept per slot
    "ring_held",  # int | None, entries holding a position (read without blocking: an earlier call's)
    "last_rows_capacity",  # rows of the pinned buffer for an extend's last rows
    "ones_len",  # length of the plain rounds' accept-length tensor
    "timer_pending",  # timed rounds whose GPU events were not read back yet
    "timing_kinds",  # kinds in the timing table
    "adaptive_slots",  # the adaptive policy's batch-size slots
)
"""Issue 46: every structure patch 03 keeps across rounds, so that a long run shows whether one grows."""
ZERO_STEP_HOST_KEYS: Final = (
    "rss_kib",  # int | None, the scheduler process's resident memory (VmRSS)
    "rss_peak_kib",  # int | None, its high-water mark (VmHWM)
    "gc_collections",  # [int, int, int], collections per generation since patch 03 attached
    "gc_s",  # [float, float, float], seconds they took, per generation
    "gc_total_s",  # float, their sum
    "gc_longest_ms",  # float, the longest one
    "gc_pending",  # [int, int, int], gc.get_count(): what awaits each generation
    "gc_metered",  # bool, whether the meter is on (it starts when patch 03 attaches)
)
ROUND_TIMING_FIELD: Final = "k25_round_timing"
"""Field of ``internal_states[i]``: ``{"remaining", "kinds": {kind: {"rounds", "mean_batch_size", "stages"}}}``."""
ROUND_TIMING_KINDS: Final = ("zero_plain", "zero_verify", "spec", "decode")
