"""One request as the engine model's scheduler holds it, and one planned step.

Apart from ``engine`` so that the engine's helpers (``stats``, ``overlap``) can name them without
importing the engine itself."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from agent.sim.calibration import Acceptance

FinishReason = dict[str, Any]
"""SGLang's ``meta_info.finish_reason`` object, as the server answers it (open: type, matched, length)."""


@dataclass(eq=False)
class SimRequest:
    """One request as the scheduler sees it; token counts only, the text is made up by the server."""

    rid: str
    input_len: int
    max_new_tokens: int
    ignore_eos: bool = True
    stream: bool = False
    natural_len: int | None = None
    """Output length at which the modelled model emits EOS (when ``ignore_eos`` is off)."""
    notify: Callable[[SimRequest], None] | None = None
    log_metrics: bool = True
    prompt_key: int | None = None
    """Digest of the prompt (``text.prompt_key``); None: predictability drawn from the engine's generator."""
    rng: random.Random | None = None
    """The request's own generator (seeded by its prompt) for its acceptance draws; None: the engine's."""

    arrival: float = 0.0
    first_accept: float = 0.0
    acceptance: Acceptance | None = None
    """The drafter's acceptance it drew ``first_accept`` from (``drafter_change``); None: the calibration's."""
    output_len: int = 0
    prefilled: int = 0
    prefill_target: int = 0
    kv_allocated: int = 0
    verify_ct: int = 0
    correct_drafts: int = 0
    proposed_drafts: int = 0
    drafts_histogram: list[int] = field(default_factory=list)
    retractions: int = 0
    first_token_at: float | None = None
    last_token_at: float | None = None
    finished_at: float | None = None
    finish_reason: FinishReason | None = None
    aborted: bool = False
    _probs: dict[tuple[int, int], tuple[float, ...]] = field(default_factory=dict)

    @property
    def committed(self) -> int:
        return self.input_len + self.output_len

    @property
    def finished(self) -> bool:
        return self.finish_reason is not None

    @property
    def remaining_new(self) -> int:
        return max(0, self.max_new_tokens - self.output_len)


@dataclass
class StepPlan:
    kind: Literal["prefill", "decode"]
    duration: float
    batch: list[SimRequest]
    tokens: list[int] = field(default_factory=list)
    """Per request of ``batch``: new output tokens this step."""
    accepted_drafts: list[int] = field(default_factory=list)
    steps: int = 0
    draft_tokens: int = 0
    completes_prefill: list[bool] = field(default_factory=list)
    eager: bool = False
