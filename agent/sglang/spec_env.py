"""SGLang 0.5.23 environment switches that a profile key renders: today the zero-step draft-extend skip.

What the switch does (``srt/speculative/eagle_worker_v2.py``, ``EAGLEWorkerV2.forward_batch_generation``;
``tests/contract/test_spec_env_contract.py`` reads the wheel and checks the declaration, every place
that reads the variable, and the branch it switches):

* At 0 steps (adaptive speculation at or above the threshold) the worker verifies one token per
  request (a plain decode through the target-verify graph) and then, by default, still runs the
  draft model's extend pass over the verified token, "keeping draft KV warm for when the batch
  shrinks". With ``SGLANG_SPEC_SKIP_ZERO_STEP_DRAFT_EXTEND=1`` that pass is skipped at 0 steps and
  ``_stub_skipped_draft_extend`` fills the next draft input with zeros (``topk_p``,
  ``topk_index``, ``hidden_states``) instead.
* The cost: the draft model never sees the tokens decoded while at 0 steps. When the batch shrinks
  and the server steps back up, its first draft starts from those zeroed states (its first round
  proposes nothing useful), and (observed: the extend pass is what writes the draft's KV for verified
  tokens) the draft's own KV cache has no entries for the positions decoded at 0 steps, for as long
  as those requests live. Accept length is low after an upshift until
  the draft state has been re-extended by verify rounds (and stays lower for requests that lived
  through the 0-step period). SGLang's own comment calls the switch experimental ("cold recovery").
* It is read on every 0-step round with ``envs.….get()`` from the process environment, which is
  fixed when SGLang starts: changing it needs a restart.

k25console renders the variable for every speculative profile, ``1`` or ``0``, so the engine's
behaviour follows the profile and never an environment variable the agent happened to inherit.
"""

from __future__ import annotations

from typing import Literal

from agent.profile.schema import Profile
from agent.sglang.support import threshold_unavailable_reason

SKIP_ZERO_STEP_DRAFT_EXTEND = "SGLANG_SPEC_SKIP_ZERO_STEP_DRAFT_EXTEND"
"""Declared ``EnvBool(False)`` in ``srt/environ.py``; read only by ``eagle_worker_v2.py``."""
SKIP_ZERO_STEP_KEY = "speculation.skip_zero_step_draft_extend"

DECLARED_IN = "srt/environ.py"
READ_IN = (("srt/speculative/eagle_worker_v2.py", "EAGLEWorkerV2.forward_batch_generation"),)
"""Every place in the 0.5.23 wheel that reads the variable, as (file, class.method)."""

RENDERED_ENV: dict[str, str] = {SKIP_ZERO_STEP_DRAFT_EXTEND: SKIP_ZERO_STEP_KEY}
"""Environment variables k25console renders from profile keys; setting them in server.env would fight the key."""

SKIP_COST = (
    "at 0 steps the draft model is no longer extended over the decoded tokens, so after stepping back "
    "up the draft starts from a cold state and accept length is low until verify rounds have "
    "re-extended it"
)
RESTART_REASON = (
    f"SGLang reads {SKIP_ZERO_STEP_DRAFT_EXTEND} from its environment, which is fixed when it starts "
    f"(with the skip on, {SKIP_COST})"
)

Severity = Literal["error", "warning"]


def render_env(profile: Profile) -> dict[str, str]:
    """The variables this module owns, for the engine's environment: set whenever the profile speculates."""
    if not profile.speculative:
        return {}
    return {SKIP_ZERO_STEP_DRAFT_EXTEND: "1" if profile.speculation.skip_zero_step_draft_extend else "0"}


def check(profile: Profile) -> list[tuple[Severity, str, str]]:
    """``(severity, key, rule)`` for the switch: what it cannot do on this server, and env conflicts.

    An error where the server never runs at 0 steps whatever happens (no speculation, or no adaptive
    mode): like ``threshold`` and ``live_steps``, a setting that can do nothing is a mistake to show
    before launch. A warning where adaptive mode is on but no threshold is set: the switch starts to
    act once one is, and clearing the threshold live must not be refused because of this key.
    """
    out: list[tuple[Severity, str, str]] = []
    for name, key in RENDERED_ENV.items():
        if name in profile.server.env:
            out.append(("error", "server.env", f"{name} is rendered from {key}; set it there instead"))
    spec = profile.speculation
    if not spec.skip_zero_step_draft_extend:
        return out
    if not profile.speculative:
        out.append(
            (
                "error",
                SKIP_ZERO_STEP_KEY,
                "has no effect without speculation (speculation.algorithm = 'none')",
            )
        )
        return out
    unavailable = threshold_unavailable_reason(profile)
    if unavailable is not None:
        out.append(
            (
                "error",
                SKIP_ZERO_STEP_KEY,
                f"has no effect: only SGLang's adaptive mode runs at 0 steps, and {unavailable}",
            )
        )
    elif spec.threshold is None:
        out.append(
            (
                "warning",
                SKIP_ZERO_STEP_KEY,
                "has no effect until speculation.threshold is set: without it the server never runs at 0 steps",
            )
        )
    return out
