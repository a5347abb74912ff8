"""A finished request rides one more decode pass, as SGLang's overlap scheduler makes it do.

SGLang launches decode pass k+1 before it has read pass k's result, so a request that finished in
pass k is still in pass k+1. The decode-log window counts it there (a pass, its batch slot, its
accepted tokens: ``num_generated_tokens``), ``spec_verify_calls`` does not. The real engine
(``tests/fixtures/sglang-0.5.23-real``) shows it at the launch step count only:

* after SGLang's warm-up request (8 tokens, 2 verify calls at 3 steps) the page reads 3 decode
  passes and 12 decode tokens (``metrics-idle-after-start.prom``);
* at c=1 the decode log's phase moves by 3 passes a request at 3 steps (a 32-verify request took 33
  passes) and by 7 at 0 steps (127 verify calls, 127 passes) (``engine.log``);
* the smoke's requests give the decode windows 4.00, 2.80, 1.00 x4, 3.10, 3.20, 2.00, 2.00 only
  with the ride at 3 steps and none at 0 or 1 (``engine.log``; ``tests/sim/test_spec_counting.py``).

With another request running the rider joins the next decode pass; with none it is a pass of its
own. It is counted, not timed: it runs while the response goes out, and the calibration's figures
already hold whatever it costs.
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING, Protocol

from agent.sim import acceptance

if TYPE_CHECKING:
    from agent.sim.adaptive import LiveAdaptiveController
    from agent.sim.calibration import Calibration
    from agent.sim.config import SimConfig
    from agent.sim.request import SimRequest, StepPlan
    from agent.sim.stats import EngineStats


class Rider(Protocol):
    """What the ride reads of the engine after a pass (the engine itself, named by shape so that
    this module does not import the engine that owns it)."""

    @property
    def config(self) -> SimConfig: ...
    @property
    def controller(self) -> LiveAdaptiveController | None: ...
    @property
    def cal(self) -> Calibration: ...
    @property
    def now(self) -> float: ...
    @property
    def rng(self) -> random.Random: ...
    @property
    def running(self) -> list[SimRequest]: ...
    @property
    def stats(self) -> EngineStats: ...
    @property
    def active_draft_tokens(self) -> int: ...


class OverlapRide:
    def __init__(self) -> None:
        self._riders: list[tuple[int, int]] = []
        """(accepted tokens, accepted drafts) of each request riding the next decode pass."""

    def take(self) -> tuple[int, int, int]:
        """(riders, their accepted tokens, their accepted drafts) for the pass now being counted."""
        riders, self._riders = self._riders, []
        return len(riders), sum(t for t, _ in riders), sum(d for _, d in riders)

    def after_pass(self, engine: Rider, plan: StepPlan) -> None:
        """Seat the requests ``plan`` finished (at the launch step count) for one more pass."""
        if engine.config.mode == "none" or plan.steps <= 0 or plan.steps != engine.config.steps:
            return
        depth = min(plan.steps, plan.draft_tokens - 1)
        topk = 1 if engine.controller is not None else engine.config.topk
        for req in plan.batch:
            if req.aborted or not req.finished or req.finished_at != engine.now:
                continue
            probs = req._probs.get((depth, topk)) or acceptance.position_probabilities(
                req.acceptance or engine.cal.acceptance, req.first_accept, depth, topk
            )
            drafts = acceptance.draw_accepted_drafts(probs, req.rng or engine.rng)
            self._riders.append((drafts + 1, drafts))
        if self._riders and not engine.running:
            riders, tokens, drafts_total = self.take()
            engine.stats.on_decode_pass(engine, plan.eager, riders, 0, tokens, drafts_total)
