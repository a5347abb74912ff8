"""The continuous-batching engine model: SGLang's scheduler loop on a virtual clock.

Every iteration is one forward pass, as in SGLang's event loop: when requests wait and the KV pool and
``max_running_requests`` admit some, a prefill pass (chunked at ``chunked_prefill_size``) runs; otherwise
the running batch decodes one step. A step is planned (``plan_step``: admission, KV allocation, retraction,
the tier, accepted tokens, its modelled duration) and then committed (``commit_step``) at its end time, when
its tokens become visible. The asynchronous driver in ``agent.sim.runner`` sleeps between the two; the
calibration test and what-ifs call them back to back, so a modelled hour takes seconds.

KV: each request holds its committed tokens plus, with speculation, SGLang's reserve
(``agent.sglang.kv.next_alloc_len``); admission counts what every running request may still need (all of
it with ``ignore_eos``, else ``new_token_ratio`` of it, as ``PrefillAdder`` does); when a decode step does
not fit, requests are retracted shortest-output-first and queued again, their tokens re-prefilled later
(``ScheduleBatch.retract_decode``)."""

from __future__ import annotations

import itertools
import random
from collections import deque

from agent.sglang import kv
from agent.sim import acceptance, costmodel
from agent.sim.adaptive import LiveAdaptiveController
from agent.sim.config import SimConfig
from agent.sim.drafter_change import DrafterChange
from agent.sim.overlap import OverlapRide
from agent.sim.request import SimRequest, StepPlan
from agent.sim.stats import EngineStats
from agent.sim.zero_step_path import ZeroStepBook

CLIP_MAX_NEW_TOKENS = 4096
"""``SGLANG_CLIP_MAX_NEW_TOKENS_ESTIMATION``."""
INIT_NEW_TOKEN_RATIO = 0.7
MIN_NEW_TOKEN_RATIO_FACTOR = 0.14
NEW_TOKEN_RATIO_DECAY_STEPS = 600
RETRACT_DECODE_STEPS = 20
EOS_TOKEN_ID = 163586
"""Kimi K2.5's ``<|im_end|>``; what ``finish_reason.matched`` reports when the modelled text ends."""


class Engine:
    """The scheduler and its modelled GPU; single-threaded, driven by ``plan_step``/``commit_step``."""

    def __init__(self, config: SimConfig, seed: int = 0, drafter_change: DrafterChange | None = None) -> None:
        self.config = config
        self.drafter_change = drafter_change
        self.cal = config.calibration
        self.seed = seed
        self.rng = random.Random(seed)
        self.now = 0.0
        self.waiting: deque[SimRequest] = deque()
        self.running: list[SimRequest] = []
        self.chunked: SimRequest | None = None
        self.kv_used = 0
        self.new_token_ratio = INIT_NEW_TOKEN_RATIO
        self._ratio_min = INIT_NEW_TOKEN_RATIO * MIN_NEW_TOKEN_RATIO_FACTOR
        self._ratio_decay = (INIT_NEW_TOKEN_RATIO - self._ratio_min) / NEW_TOKEN_RATIO_DECAY_STEPS
        self.controller: LiveAdaptiveController | None = None
        if config.mode == "adaptive" and config.adaptive_config is not None:
            self.controller = LiveAdaptiveController(config.steps, config.adaptive_config)
        self.active_steps = config.steps
        self.active_draft_tokens = config.draft_tokens
        self.stats = EngineStats(config)
        self.zero_step = ZeroStepBook(self.cal, config.zero_step_plain and self.controller is not None)
        self._ids = itertools.count()
        self.ride = OverlapRide()

    # ------------------------------------------------------------------ requests

    def new_rid(self) -> str:
        return f"{next(self._ids):x}{self.rng.getrandbits(64):016x}"

    def submit(self, req: SimRequest, at: float | None = None) -> None:
        """Queue a request that arrived at virtual time ``at`` (default: now)."""
        req.arrival = self.now if at is None else at
        # How predictable a request's text is, and how the drafts fare along it, belong to its prompt
        # (greedy decoding writes the same text for the same prompt): the same prompt draws the same
        # values, so a benchmark's arms sending the same prompts differ only by their setting.
        if req.prompt_key is not None:
            req.rng = random.Random(self.seed * 2**32 + req.prompt_key)
        change = self.drafter_change
        req.acceptance = change.acceptance if change and self.now >= change.after_s else self.cal.acceptance
        req.first_accept = acceptance.draw_first_accept(req.acceptance, req.rng or self.rng)
        req.prefill_target = req.input_len
        self.waiting.append(req)

    def _refuse(self, req: SimRequest) -> None:
        budget = min(req.remaining_new, CLIP_MAX_NEW_TOKENS)
        need = req.prefill_target + budget + self.config.reserve_per_decode
        message = (
            f"The request needs about {need} KV cache slots (input plus output budget), more than the "
            f"{self.config.pool_tokens} the pool holds (max_total_num_tokens)."
        )
        self.abort(req, message=message, status_code=400)
        if req.notify is not None:
            req.notify(req)

    def abort(self, req: SimRequest, message: str = "client disconnected", status_code: int = 499) -> None:
        """Drop the request wherever it is and free its KV (the client went away, or it can never run)."""
        if req.finished:
            return
        req.aborted = True
        req.finish_reason = {
            "type": "abort",
            "message": message,
            "status_code": status_code,
            "err_type": None,
        }
        req.finished_at = self.now
        if req in self.waiting:
            self.waiting.remove(req)
        if req in self.running:
            self.running.remove(req)
        if self.chunked is req:
            self.chunked = None
        self._free(req)
        self.stats.on_abort(req)

    @property
    def idle(self) -> bool:
        return not self.waiting and not self.running and self.chunked is None

    @property
    def kv_available(self) -> int:
        return self.config.pool_tokens - self.kv_used

    # ------------------------------------------------------------------ step

    def plan_step(self) -> StepPlan | None:
        """Choose and cost the next forward pass; None when there is nothing to do."""
        while True:
            plan = self._plan_prefill()
            if plan is not None:
                return plan
            if self.running:
                return self._plan_decode()
            if not self.waiting:
                return None
            # Nothing runs and the head of the queue still does not fit: it never will.
            self._refuse(self.waiting[0])

    def commit_step(self, plan: StepPlan) -> None:
        """The pass ends: advance the clock, deliver its tokens, finish and free requests."""
        self.now += plan.duration
        if plan.kind == "prefill":
            self._commit_prefill(plan)
        else:
            self._commit_decode(plan)

    # ------------------------------------------------------------------ prefill

    def _running_offset(self) -> float:
        total = 0.0
        for req in self.running:
            ratio = 1.0 if req.ignore_eos else self.new_token_ratio
            total += min(req.remaining_new, CLIP_MAX_NEW_TOKENS) * ratio
        return total

    def _plan_prefill(self) -> StepPlan | None:
        cfg = self.config
        budget = cfg.chunked_prefill_size
        batch: list[SimRequest] = []
        chunks: list[int] = []
        pairs = 0
        if self.chunked is not None:
            req = self.chunked
            take = min(budget, req.prefill_target - req.prefilled)
            batch.append(req)
            chunks.append(take)
            budget -= take
        if self.waiting and budget > 0:
            rem_total = self.kv_available - self._running_offset()
            slots = cfg.max_running_requests - len(self.running) - len(batch)
            while self.waiting and budget > 0 and slots > 0:
                req = self.waiting[0]
                extend = req.prefill_target - req.prefilled
                ratio = 1.0 if req.ignore_eos else self.new_token_ratio
                need = (
                    kv.ceil_to_page(extend, cfg.profile.server.page_size)
                    + min(req.remaining_new, CLIP_MAX_NEW_TOKENS) * ratio
                    + cfg.reserve_per_decode
                )
                if need > rem_total:
                    break
                self.waiting.popleft()
                self.stats.on_admit(req, self.now)
                take = min(budget, extend)
                batch.append(req)
                chunks.append(take)
                budget -= take
                rem_total -= need
                slots -= 1
        if not batch:
            return None
        completes: list[bool] = []
        page = cfg.profile.server.page_size
        for req, take in zip(batch, chunks, strict=True):
            prefix = req.prefilled
            pairs += take * (prefix + take // 2)
            grow = kv.ceil_to_page(prefix + take, page) - req.kv_allocated
            if grow > 0:
                req.kv_allocated += grow
                self.kv_used += grow
            completes.append(prefix + take >= req.prefill_target)
        new_tokens = sum(chunks)
        arrivals = sum(completes)
        plain_zero = self._plain_zero_steps_at(len(self.running) + arrivals)
        duration = costmodel.prefill_step_s(
            self.cal, new_tokens, pairs, cfg.speculative, arrivals, plain_zero
        )
        if plain_zero and not self.cal.spec.arrival.at_zero_steps:
            self.zero_step.plain_prefill({req.rid: take for req, take in zip(batch, chunks, strict=True)})
        plan = StepPlan("prefill", duration, batch, tokens=chunks, completes_prefill=completes)
        # The request that does not finish its prefill continues in the next prefill pass.
        self.chunked = next((r for r, done in zip(batch, completes, strict=True) if not done), None)
        return plan

    def _commit_prefill(self, plan: StepPlan) -> None:
        for req, take, done in zip(plan.batch, plan.tokens, plan.completes_prefill, strict=True):
            if req.aborted:
                continue
            req.prefilled += take
            self.stats.on_prefill_tokens(take)
            if not done:
                continue
            if self.chunked is req:
                self.chunked = None
            self.running.append(req)
            self._emit(req, 1)
        self.stats.on_prefill_pass(self)

    # ------------------------------------------------------------------ decode

    def _tier(self, batch_size: int) -> tuple[int, int, int]:
        """(steps, topk, draft tokens) of the next round."""
        cfg = self.config
        if cfg.mode == "none":
            return 0, 0, 0
        if self.controller is not None:
            steps = self.controller.steps_for_batch(batch_size)
            return steps, 1, steps + 1
        return cfg.steps, cfg.topk, cfg.draft_tokens

    def _plain_zero_steps_at(self, batch_size: int) -> bool:
        """Whether a batch of this size runs at 0 steps on patch 03's plain path (the live threshold)."""
        ctl = self.controller
        return ctl is not None and self.zero_step.plain and 0 < ctl.threshold <= batch_size

    def _decode_need(self, req: SimRequest, batch_size: int) -> int:
        page = self.config.profile.server.page_size
        if self.config.mode == "none":
            target = max(req.kv_allocated, kv.ceil_to_page(req.committed + 1, page))
        else:
            reserve = self.zero_step.reserve(self.config, self.controller, batch_size)
            target = kv.next_alloc_len(req.committed, req.kv_allocated, reserve, page)
        return target - req.kv_allocated

    def _retract(self) -> None:
        """``retract_decode``: drop the least advanced requests until the next step fits."""
        order = sorted(self.running, key=lambda r: (r.output_len, -r.input_len), reverse=True)
        retracted: list[SimRequest] = []
        while len(order) > 1 and sum(self._decode_need(r, len(order)) for r in order) > self.kv_available:
            req = order.pop()
            self._free(req)
            req.retractions += 1
            req.prefilled = 0
            req.prefill_target = req.committed
            retracted.append(req)
        if not retracted:
            return
        self.running = [r for r in self.running if r not in retracted]
        for req in reversed(retracted):
            self.waiting.appendleft(req)
        decoded = sum(r.output_len for r in self.running)
        max_new = sum(r.max_new_tokens for r in self.running)
        self.new_token_ratio = min(1.0, (decoded + RETRACT_DECODE_STEPS * len(self.running)) / (max_new + 1))
        self.stats.on_retract(retracted)

    def _plan_decode(self) -> StepPlan:
        cfg = self.config
        needs = [self._decode_need(r, len(self.running)) for r in self.running]
        if sum(needs) > self.kv_available:
            self._retract()
            needs = [self._decode_need(r, len(self.running)) for r in self.running]
        for req, grow in zip(self.running, needs, strict=True):
            req.kv_allocated += grow
        self.kv_used += sum(needs)
        batch = list(self.running)
        size = len(batch)
        steps, topk, draft_tokens = self._tier(size)
        self.active_steps, self.active_draft_tokens = steps, draft_tokens
        eager = size > cfg.graph_max_bs
        kv_tokens = sum(r.committed for r in batch)
        tokens: list[int] = []
        accepted: list[int] = []
        if cfg.mode == "none":
            duration = costmodel.decode_step_s(self.cal, size, kv_tokens, eager)
            self.zero_step.time("decode", size, {"target_forward": duration})
            tokens = [1] * size
        else:
            plain = self.zero_step.plain and steps == 0
            shape = (steps, topk, draft_tokens, eager, cfg.skip_zero_step_draft_extend, plain)
            duration = costmodel.spec_step_s(self.cal, size, kv_tokens, *shape)
            rids, skip = [r.rid for r in batch], shape[4]
            duration += self.zero_step.round(steps, plain, rids, draft_tokens, kv_tokens, skip)
            depth = min(steps, draft_tokens - 1)
            for req in batch:
                if depth <= 0:
                    accepted.append(0)
                    tokens.append(1)
                    continue
                probs = req._probs.get((depth, topk))
                if probs is None:
                    probs = acceptance.position_probabilities(
                        req.acceptance or self.cal.acceptance, req.first_accept, depth, topk
                    )
                    req._probs[(depth, topk)] = probs
                n = acceptance.draw_accepted_drafts(probs, req.rng or self.rng)
                accepted.append(n)
                tokens.append(n + 1)
        plan = StepPlan("decode", duration, batch, tokens=tokens, accepted_drafts=accepted, eager=eager)
        plan.steps, plan.draft_tokens = steps, draft_tokens
        return plan

    def _commit_decode(self, plan: StepPlan) -> None:
        spec = self.config.mode != "none"
        proposed = (plan.draft_tokens - 1) if plan.steps > 0 else 0
        delivered = 0
        live, counted_accept, counted_correct = self.ride.take()  # last pass's finished requests
        for i, req in enumerate(plan.batch):
            if req.aborted:
                continue
            live += 1
            new = plan.tokens[i]
            if spec:
                drafts = plan.accepted_drafts[i]
                req.verify_ct += 1
                req.correct_drafts += drafts
                req.proposed_drafts += proposed
                while len(req.drafts_histogram) <= drafts:
                    req.drafts_histogram.append(0)
                req.drafts_histogram[drafts] += 1
                counted_accept += new
                counted_correct += drafts
            delivered += self._emit(req, new)
        if self.controller is not None and plan.accepted_drafts:
            self.controller.on_verify_complete(plan.accepted_drafts, len(plan.batch))
        self.new_token_ratio = max(self.new_token_ratio - self._ratio_decay, self._ratio_min)
        self.stats.on_decode_pass(self, plan.eager, live, delivered, counted_accept, counted_correct)
        self.ride.after_pass(self, plan)

    # ------------------------------------------------------------------ shared

    def _emit(self, req: SimRequest, new: int) -> int:
        """Deliver up to ``new`` tokens to a request; finish it at its length or EOS. Returns tokens delivered."""
        limit = req.remaining_new
        stop_at = None if req.ignore_eos or req.natural_len is None else req.natural_len
        if stop_at is not None:
            limit = min(limit, max(0, stop_at - req.output_len))
        new = min(new, limit) if limit > 0 else 0
        if new == 0 and req.output_len == 0:
            new = 1  # a prefill always produces the first token
        if req.first_token_at is None and new > 0:
            req.first_token_at = self.now
            self.stats.on_first_token(req)
        elif new > 0 and req.last_token_at is not None:
            self.stats.on_tokens(req, new, self.now - req.last_token_at)
        req.output_len += new
        if new > 0:
            req.last_token_at = self.now
        if req.output_len >= req.max_new_tokens:
            req.finish_reason = {"type": "length", "length": req.max_new_tokens}
        elif stop_at is not None and req.output_len >= stop_at:
            req.finish_reason = {"type": "stop", "matched": EOS_TOKEN_ID}
        if req.finish_reason is not None:
            req.finished_at = self.now
            if req in self.running:
                self.running.remove(req)
            self._free(req)
            self.stats.on_finish(req)
        if req.notify is not None:
            req.notify(req)
        return new

    def _free(self, req: SimRequest) -> None:
        self.kv_used -= req.kv_allocated
        req.kv_allocated = 0
        self.zero_step.forget(req.rid)

    def flush(self) -> bool:
        """``/flush_cache``: only when idle; restarts the decode-log counts and accept-length totals."""
        if self.idle:
            self.stats.reset_on_flush()
        return self.idle
