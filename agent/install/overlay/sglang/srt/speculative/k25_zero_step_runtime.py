"""Zero-step rounds as plain decodes: the torch side (k25console patch 03), as SGLang's hooks see it.

``k25_zero_step_policy`` holds the decisions and says why; the runtime carries them out. SGLang's own
files call this module only (``k25_zero_step_runtime.X``); what it does is in four parts beside it:

* ``k25_zero_step_plain``: the plain decode state built at start-up, and the whole 0-step round as a
  plain decode. ``reads_bonus_only`` (here) lets the future map skip gathering a draft input such a
  round does not read.
* ``k25_zero_step_ring``: per request slot, the target hidden state and next token of the last few
  positions decoded without the draft (and of each extend's last position).
* ``k25_zero_step_catchup``: on the first drafting round after 0-step rounds, one draft extend over
  those positions, so that the draft drafts from current state.
* ``k25_zero_step_timer``: stage timings of sampled rounds (``TIMER`` and ``mark``, re-exported here
  for SGLang's hooks).

Here: the scheduler-side KV hooks (``decode_reserve``, ``decode_reserve_for``), the controller that
ties the parts together on one ``EAGLEWorkerV2`` (``ZeroStepController``) and ``attach``.

SGLang imports are local to the functions: this module is imported by the scheduler's batch
code, which loads early.
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any

import torch
from sglang.srt.speculative import k25_zero_step_policy as policy
from sglang.srt.speculative.k25_zero_step_catchup import catch_up
from sglang.srt.speculative.k25_zero_step_plain import PlainDecodeTarget, batch_facts, run_plain_decode
from sglang.srt.speculative.k25_zero_step_ring import HiddenRing, LastRows, slots_of
from sglang.srt.speculative.k25_zero_step_timer import TIMER, mark

__all__ = [
    "TIMER",
    "ZeroStepController",
    "attach",
    "decode_reserve",
    "decode_reserve_for",
    "mark",
    "reads_bonus_only",
]

logger = logging.getLogger(__name__)


# ------------------------------------------------------- scheduler-side KV hooks


def _alloc_len() -> int:
    from sglang.srt.mem_cache.allocation_sizing import get_alloc_len_per_decode

    return get_alloc_len_per_decode()


def decode_reserve(batch: Any, default_reserve: int) -> int:
    """The per-request reserve of one decode batch being prepared (``eagle_prepare_for_decode``).

    Records on the batch whether it was planned at 0 steps: its forward then runs at 0 steps.
    """
    ctl: ZeroStepController | None = policy.controller()
    if ctl is None:
        return default_reserve
    zero = ctl.routes_zero(len(batch.reqs))
    batch._k25_zero_planned = zero
    reserve = ctl.planner.reserve(zero, _alloc_len(), default_reserve)
    ctl.counters.last_reserve = reserve
    return reserve


def decode_reserve_for(num_requests: int, default_reserve: int) -> int:
    """The same reserve for the capacity check of ``num_requests`` (``check_decode_mem``)."""
    ctl: ZeroStepController | None = policy.controller()
    if ctl is None:
        return default_reserve
    return ctl.planner.reserve(ctl.routes_zero(num_requests), _alloc_len(), default_reserve)


def reads_bonus_only(batch: Any) -> bool:
    """The scheduler's resolve of this batch's draft input needs only the bonus tokens.

    A batch planned at 0 steps that the plain decode will take reads nothing else of its draft
    input; the future map then skips gathering top-k and hidden state (``_resolve_spec_extras``),
    and keeps the ones each request last drafted from for when speculation resumes.
    """
    if not getattr(batch, "_k25_zero_planned", False) or not batch.forward_mode.is_decode():
        return False
    ctl: ZeroStepController | None = policy.controller()
    return ctl is not None and ctl.plain_selected and ctl.plain_reason(batch) is None


# ------------------------------------------------------------------ the controller


class ZeroStepController:
    """Patch 03's state on one ``EAGLEWorkerV2`` (one per scheduler process)."""

    def __init__(self, worker: Any, adaptive_config: dict[str, Any]) -> None:
        self.worker = worker
        self.config = policy.ZeroStepConfig(policy.launch_path(adaptive_config))
        self.planner = policy.ReservePlanner()
        self.streak = policy.StreakBook()
        self.counters = policy.ZeroStepCounters()
        self.plain: PlainDecodeTarget | None = None
        self.ring: HiddenRing | None = None
        self._ones: torch.Tensor | None = None  # accept lengths of plain rounds (read-only)
        self.last_caught: torch.Tensor | None = None
        self.ring_off = False  # set by the first ring failure: the draft then resumes cold
        self.last_rows = LastRows()
        # the last decode launched: its size, whether at 0 steps, when (what a prefill joins)
        self.last_decode: tuple[int, bool, float] = (0, False, float("-inf"))

    # -- what it holds (issue 46: nothing here may grow with the number of requests served)

    def state_sizes(self) -> dict[str, Any]:
        """The sizes of every structure the runtime keeps across rounds, for the read-back
        (``zero_step.state``): each is bounded by the request pool's slots or the largest batch."""
        ring = self.ring
        return {
            "missed_slots": len(self.streak),
            "ring_slots": None if ring is None else ring.slots,
            "ring_width": None if ring is None else ring.width,
            "ring_held": None if ring is None else ring.held(),
            "last_rows_capacity": self.last_rows.capacity,
            "ones_len": 0 if self._ones is None else int(self._ones.shape[0]),
            "timer_pending": TIMER.pending,
            "timing_kinds": len(policy.TIMING.kinds),
            "adaptive_slots": len(getattr(self.worker.adaptive_controller.params, "_slots", ()) or ()),
        }

    # -- start-up

    def build(self) -> None:
        """Build the plain decode state after SGLang's own states; a failure leaves the verify path."""
        if self.config.launch_path != policy.PLAIN:
            self.config.mark_built("the adaptive config asks for the verify path")
            return
        tic = time.perf_counter()
        try:
            self.plain = PlainDecodeTarget.build(self.worker._target_worker.model_runner)
        except Exception as exc:  # the server must start; 0-step rounds then verify as before
            logger.exception("k25 zero-step: the plain decode state could not be built")
            self.config.mark_built(f"{type(exc).__name__}: {exc}")
            return
        self.config.mark_built(None)
        logger.info(
            "k25 zero-step: plain decode state built in %.2fs (graph: %s); 0-step rounds decode plainly",
            time.perf_counter() - tic,
            "yes" if self.plain.graph_runner is not None else "no, eager",
        )

    # -- routing

    def routes_zero(self, batch_size: int) -> bool:
        """A batch of this size goes to the fixed 0-step slot (the live threshold)."""
        threshold: int = self.worker.adaptive_controller.params.live.threshold
        return threshold > 0 and batch_size >= threshold

    def activate(self, batch: Any) -> None:
        """``activate_step_by_batch``, except that a batch planned at 0 steps runs at 0 steps."""
        bs = batch.seq_lens.shape[0]
        adaptive = self.worker.adaptive_controller
        if getattr(batch, "_k25_zero_planned", False):
            if adaptive.params.get_steps_for_batch(bs) != 0:
                self.counters.forced_zero += 1
            adaptive._activate(0)
        else:
            self.worker.activate_step_by_batch(bs)
        zero = self.worker.speculative_num_steps == 0
        self.planner.launched(True, zero)
        self.last_decode = (bs, zero, time.monotonic())

    # -- the 0-step round

    @property
    def plain_selected(self) -> bool:
        """The plain path is in force and its state was built (else 0-step rounds verify)."""
        return self.config.plain and self.plain is not None

    def plain_reason(self, batch: Any) -> str | None:
        """Why this 0-step batch cannot decode plainly though the plain path is selected (None: it
        can). Counts nothing."""
        return policy.plain_ineligible_reason(batch_facts(batch, self.worker._target_worker.model_runner))

    def use_plain(self, batch: Any) -> bool:
        """Whether this 0-step round decodes plainly; counts the round by its path."""
        if not self.plain_selected:
            self.counters.verify_rounds += 1
            return False
        reason = self.plain_reason(batch)
        if reason is not None:
            self.counters.fallback_rounds += 1
            self.counters.last_fallback = reason
            return False
        self.counters.plain_rounds += 1
        return True

    def plain_round(self, batch: Any, on_publish: Any = None) -> Any:
        """The whole 0-step round as a plain decode, or None for SGLang's verify path."""
        if not self.use_plain(batch):
            return None
        plain = self.plain
        assert plain is not None  # use_plain: the plain state was built
        if self._ones is None or self._ones.shape[0] < batch.seq_lens.shape[0]:
            slots = self.worker.req_to_token_pool.req_to_token.shape[0]
            self._ones = torch.ones(
                (max(slots, batch.seq_lens.shape[0]),), dtype=torch.int32, device=batch.seq_lens.device
            )
        try:
            result = run_plain_decode(self.worker, batch, plain, self._ones)
        except Exception as exc:
            self._plain_failed(exc)
            return None
        if batch.spec_info.future_indices is None:
            # The synchronous scheduler keeps this draft input on the batch (filtered and merged
            # with it), so it must carry top-k and hidden state: SGLang's zero stubs.
            self.worker._stub_skipped_draft_extend(batch, result)
        if on_publish is not None:
            on_publish(result.new_seq_lens)
        self.after_plain_round(batch, result)
        mark("ring")
        return result

    def _plain_failed(self, exc: BaseException) -> None:
        """The plain round raised: this round and the rest of the run take SGLang's verify path.

        Nothing the round did before the exception is lost or doubled: the verify path sets the
        batch's input and KV slot itself and writes the same token's KV at the same position, and
        the scheduler's forward isolation restores the batch afterwards. The error is counted,
        named in the read-back (``last_error``, ``build_error``) and logged once with its traceback,
        so that a bug costs the plain path's speed, never the server.
        """
        self.counters.errors += 1
        self.counters.last_error = f"plain round: {type(exc).__name__}: {exc}"
        logger.exception("k25 zero-step: the plain round failed; 0-step rounds take the verify path")
        self.config.mark_built(self.counters.last_error)

    def _ring_failed(self, where: str, exc: BaseException) -> None:
        """A ring hook failed: count it, say so once, and stop keeping the ring for this run.

        The hooks run inside the scheduler's loop, so an exception there would kill the server;
        without the ring the first drafting round after 0-step rounds drafts cold, as SGLang's own
        skip of the zero-step draft extend does, and the plain decode itself is untouched.
        """
        self.counters.errors += 1
        self.counters.last_error = f"ring ({where}): {type(exc).__name__}: {exc}"
        if not self.ring_off:
            logger.exception("k25 zero-step: the %s ring hook failed; no catch-up for this run", where)
        self.ring_off = True
        self.ring = None
        self.streak = policy.StreakBook()

    def _ring_for(self, hidden: torch.Tensor | None) -> HiddenRing | None:
        if self.ring_off:
            return None
        if self.ring is None and hidden is not None and hidden.dim() == 2:
            states = self.worker.adaptive_controller._states
            width = max([s + 1 for s in states] + [self.worker.speculative_num_draft_tokens])
            slots = self.worker.req_to_token_pool.req_to_token.shape[0]
            self.ring = HiddenRing(slots, width, hidden, hidden.device)
        return self.ring

    def after_plain_round(self, batch: Any, batch_output: Any) -> None:
        """Keep what the draft would have seen this round, for the catch-up (never raises)."""
        if self.ring_off:
            return
        try:
            self._ring_plain_round(batch, batch_output)
        except Exception as exc:
            self._ring_failed("plain round", exc)

    def _ring_plain_round(self, batch: Any, batch_output: Any) -> None:
        hidden = batch_output.logits_output.hidden_states
        ring = self._ring_for(hidden)
        if ring is None or hidden.shape[0] != batch.seq_lens.shape[0]:
            self.counters.last_error = "a plain round returned no hidden states: no catch-up"
            return
        ring.put(batch.req_pool_indices, batch.seq_lens, batch_output.next_token_ids, hidden)
        self.streak.missed(slots_of(batch))

    def after_extend(self, batch: Any, batch_output: Any, plain: bool = False) -> None:
        """An extend's last position per request, so that its request joins a later catch-up
        (never raises). ``plain``: the extend ran as a plain server's (``plain_prefill``), so the
        draft has nothing of the new requests yet and they are marked for the catch-up."""
        if self.ring_off or not self.config.plain or batch.forward_mode.is_idle():
            return
        try:
            self._ring_extend(batch, batch_output, plain)
        except Exception as exc:
            self._ring_failed("extend", exc)

    def _ring_extend(self, batch: Any, batch_output: Any, plain: bool) -> None:
        hidden = batch_output.logits_output.hidden_states
        bs = batch.seq_lens.shape[0]
        if hidden is None:
            return
        if hidden.shape[0] != bs:  # every position's hidden state: pick each request's last
            lens = batch.extend_lens
            if isinstance(lens, torch.Tensor):
                lens = lens.tolist() if lens.device.type == "cpu" else None
            if not isinstance(lens, list) or hidden.shape[0] != sum(lens):
                return
            hidden = hidden[self.last_rows.of(lens, hidden.device)]
        ring = self._ring_for(hidden)
        if ring is None:
            return
        ring.put(batch.req_pool_indices, batch.seq_lens - 1, batch_output.next_token_ids, hidden)
        if plain:  # the draft has not seen the new requests: the first drafting round catches up
            self.streak.missed(slots_of(batch))
        else:  # a new request (or chunk): the draft extend made its draft state current
            self.streak.caught_up(slots_of(batch))

    # -- a prefill that joins a 0-step batch

    def plain_prefill(self, batch: Any) -> bool:
        """Whether this prefill runs as a plain server's: the target captures each request's last
        hidden state only and the draft's extend is left to the catch-up (``policy.prefill_joins_zero``
        says when). Never raises: a failure leaves SGLang's prefill."""
        try:
            plain = self._joins_zero(batch)
        except Exception as exc:
            self._ring_failed("prefill", exc)
            return False
        if plain:
            self.counters.plain_prefills += 1
        return plain

    def _joins_zero(self, batch: Any) -> bool:
        from sglang.srt.model_executor.forward_batch_info import CaptureHiddenMode

        if self.ring_off or not self.plain_selected or not batch.forward_mode.is_extend():
            return False
        worker = self.worker
        if worker.speculative_algorithm.is_standalone():  # no hidden states to keep
            return False
        if batch.return_hidden_states_mode != CaptureHiddenMode.NULL or self.plain_reason(batch) is not None:
            return False
        running, zero, at = self.last_decode
        threshold: int = worker.adaptive_controller.params.live.threshold
        return policy.prefill_joins_zero(threshold, running, zero, len(batch.reqs), time.monotonic() - at)

    def plain_prefill_output(self, batch: Any, batch_output: Any) -> Any:
        """A plain prefill's result: the draft input SGLang's skipped draft extend leaves (the bonus
        token and zero stubs of the right shape, never read at 0 steps), and the ring's entry."""
        from sglang.srt.speculative.eagle_info import EagleDraftInput

        batch_output.next_draft_input = EagleDraftInput(
            bonus_tokens=batch_output.next_token_ids, num_tokens_per_req=1, num_tokens_for_logprob_per_req=1
        )
        self.worker._stub_skipped_draft_extend(batch, batch_output)
        self.after_extend(batch, batch_output, plain=True)
        return batch_output

    # -- resuming

    def maybe_catch_up(self, batch: Any) -> None:
        """Before the first draft after 0-step rounds: one draft extend over what was missed."""
        if self.ring_off or not self.streak.pending:
            return
        if self.ring is None or batch.forward_mode.is_idle():
            return
        try:
            slots = slots_of(batch)
            if not self.streak.pending_in(slots):
                return  # requests that missed nothing (the ones that did have finished)
            self.streak.caught_up(slots)
            ndt = self.worker.speculative_num_draft_tokens
            self.last_caught = catch_up(self.worker, self.ring, batch, min(ndt, self.ring.width), ndt)
        except Exception as exc:  # one failure turns the ring off: later resumes draft cold
            self._ring_failed("catch-up", exc)
            return
        self.counters.catchups += 1
        held = self.last_caught
        if held is not None:  # one read-back per resume, after the catch-up's kernels are queued
            self.counters.catchup_tokens += int(held.sum())
            self.counters.catchups_skipped += int((held == 0).sum())


def attach(worker: Any) -> ZeroStepController | None:
    """Patch 03 on an adaptive ``EAGLEWorkerV2`` that hosts the draft (else None)."""
    if getattr(worker, "adaptive_controller", None) is None or worker.topk != 1:
        return None
    from sglang.srt.runtime_context import get_parallel, get_spec

    if get_parallel().pp_size > 1:
        return None
    path = get_spec().speculative_adaptive_config
    config: dict[str, Any] = {}
    if path is not None:
        with open(path) as fh:
            config = json.load(fh)
    ctl = ZeroStepController(worker, config)
    policy.register(ctl)
    return ctl
