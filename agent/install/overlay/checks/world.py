"""One scheduler's worth of state for the zero-step runtime, and the request stories the tests play.

``World`` stands in for the speculative worker, the target's model runner and the scheduler's
batches; its target is an oracle (the token and hidden state of every position are known), so a
test can say which tokens and hiddens the ring must hold and the catch-up must re-extend.

The stories (``plain_rounds``, ``first_resume``, ``late_prefill_resume``, ``gap_resume``) each play
the one before and go on, so a test starts from the point it checks.
"""

from __future__ import annotations

import types
from dataclasses import dataclass, field
from typing import Any

import torch

from .stand_ins import CaptureHiddenMode, EagleDraftInput, ForwardMode, Overlay


class Live:
    def __init__(self, threshold: int) -> None:
        self.threshold = threshold


class World:
    """8 request slots, a KV map, the target's 'true' tokens and hiddens, the runtime's controller."""

    HIDDEN = 12

    def __init__(self, overlay: Overlay, cpu_lens: bool) -> None:
        self.overlay = overlay
        self.runtime = overlay.runtime
        self.device = device = overlay.device
        self.cpu_lens = cpu_lens
        self.req_to_token = torch.arange(8 * 64, device=device, dtype=torch.int64).reshape(8, 64)
        self.extends: list[tuple[Any, Any]] = []
        self.forwards: list[Any] = []
        self.last_round: tuple[Any, Any, list[Any]] | None = None
        worker = types.SimpleNamespace(
            adaptive_controller=types.SimpleNamespace(
                _states={0: None, 1: None, 2: None, 3: None},
                params=types.SimpleNamespace(
                    live=Live(4), get_steps_for_batch=lambda bs: 0 if bs >= 4 else 3
                ),
                _activate=self._activate,
            ),
            speculative_num_steps=3,
            speculative_num_draft_tokens=4,
            speculative_algorithm=types.SimpleNamespace(is_standalone=lambda: False),
            req_to_token_pool=types.SimpleNamespace(req_to_token=self.req_to_token),
            topk=1,
            draft_worker=types.SimpleNamespace(_draft_extend_for_decode=self._draft_extend),
            activate_step_by_batch=lambda bs: None,
            _stub_skipped_draft_extend=self._stub,
        )
        model_runner = types.SimpleNamespace(
            model_config=types.SimpleNamespace(model_is_mrope=False),
            attn_backend="verify backend",
            decode_cuda_graph_runner=None,
            sample=self._sample,
        )
        worker.target_worker = worker._target_worker = types.SimpleNamespace(
            model_runner=model_runner, forward_batch_generation=self._target_forward
        )
        self.worker = worker
        self.ctl = self.runtime.ZeroStepController(worker, {})
        self.ctl.config.mark_built(None)
        self.ctl.plain = overlay.plain.PlainDecodeTarget(model_runner, "plain decode backend", None)
        overlay.policy.register(self.ctl)

    def _target_forward(self, batch: Any, forward_batch: Any, is_verify: bool) -> Any:
        """The target's decode: the hidden state of the position each request decodes."""
        mr = self.worker.target_worker.model_runner
        self.forwards.append((forward_batch, mr.attn_backend, is_verify))
        slots = forward_batch.req_pool_indices.tolist()
        positions = (forward_batch.seq_lens - 1).tolist()  # decode lengths count the new token
        hidden = torch.stack([self.hidden_at(s, p) for s, p in zip(slots, positions, strict=True)])
        return types.SimpleNamespace(
            logits_output=types.SimpleNamespace(hidden_states=hidden, positions=positions),
            routed_experts_output=None,
            indexer_topk_output=None,
        )

    def _stub(self, batch: Any, result: Any) -> None:
        """SGLang's zero stubs of the skipped draft extend (what the synchronous scheduler needs)."""
        result.next_draft_input.topk_p = torch.zeros((batch.seq_lens.shape[0], 1), device=self.device)
        result.next_draft_input.hidden_states = torch.zeros((batch.seq_lens.shape[0], 5), device=self.device)

    def _sample(self, logits_output: Any, forward_batch: Any) -> Any:
        slots = forward_batch.req_pool_indices.tolist()
        tokens = [self.token_at(s, p) for s, p in zip(slots, logits_output.positions, strict=True)]
        return torch.tensor(tokens, device=self.device, dtype=torch.int32)

    def _activate(self, steps: int) -> None:
        self.worker.speculative_num_steps = steps

    def _draft_extend(self, view: Any, result: Any) -> None:
        self.extends.append((view, result))
        bs = view.seq_lens.shape[0]
        result.next_draft_input.topk_p = torch.ones((bs, 1), device=self.device)
        result.next_draft_input.topk_index = torch.full((bs, 1), 7, device=self.device)
        result.next_draft_input.hidden_states = torch.zeros((bs, 5), device=self.device)

    @staticmethod
    def token_at(slot: int, pos: int) -> int:
        """The token the target produces after position ``pos`` of the request in ``slot``."""
        return 1000 * (slot + 1) + pos + 1

    def hidden_at(self, slot: int, pos: int) -> torch.Tensor:
        return torch.full((self.HIDDEN,), float(slot * 100 + pos), device=self.device)

    def batch(self, slots: list[int], lens: list[int], mode: Any) -> Any:
        dev = self.device
        return types.SimpleNamespace(
            reqs=[types.SimpleNamespace(kv=types.SimpleNamespace(req_pool_idx=s)) for s in slots],
            device=dev,
            input_ids=None,
            out_cache_loc=None,
            orig_seq_lens=None,
            spec_algorithm="EAGLE3",
            req_pool_indices=torch.tensor(slots, device=dev, dtype=torch.int64),
            req_pool_indices_cpu=torch.tensor(slots, dtype=torch.int64),
            seq_lens=torch.tensor(lens, device=dev, dtype=torch.int64),
            seq_lens_cpu=torch.tensor(lens, dtype=torch.int64) if self.cpu_lens else None,
            forward_mode=mode,
            is_extend_in_batch=False,
            extend_lens=None,
            spec_info=EagleDraftInput(
                bonus_tokens=torch.tensor(
                    [self.token_at(s, n - 1) for s, n in zip(slots, lens, strict=True)],
                    device=dev,
                    dtype=torch.int32,
                )
            ),
            return_logprob=False,
            has_grammar=False,
            hisparse_coordinator=None,
            mamba_track_indices=None,
            sampling_info=types.SimpleNamespace(has_watermark_candidates=False),
            input_embeds=None,
            replace_embeds=None,
            return_hidden_states_mode=CaptureHiddenMode.NULL,
        )

    def prefill(self, slots: list[int], lens: list[int], extend: list[int]) -> None:
        batch = self.batch(slots, lens, ForwardMode.EXTEND)
        batch.extend_lens = extend
        rows, tokens = [], []
        for slot, length, n in zip(slots, lens, extend, strict=True):
            rows += [self.hidden_at(slot, p) for p in range(length - n, length)]
            tokens.append(self.token_at(slot, length - 1))
        out = types.SimpleNamespace(
            logits_output=types.SimpleNamespace(hidden_states=torch.stack(rows)),
            next_token_ids=torch.tensor(tokens, device=self.device, dtype=torch.int32),
        )
        self.ctl.planner.launched(False, False)
        self.ctl.after_extend(batch, out)

    def hooked_prefill(self, slots: list[int], lens: list[int], extend: list[int]) -> tuple[bool, Any]:
        """A prefill as the hooked ``_forward_prefill_batch`` runs it: a plain server's when it joins
        a 0-step batch (each request's last hidden state only, no draft extend), else SGLang's (every
        position's hidden state, the draft's extend, then the ring). (plain or not, the result)."""
        batch = self.batch(slots, lens, ForwardMode.EXTEND)
        batch.extend_lens = extend
        plain = self.ctl.plain_prefill(batch)
        self.ctl.planner.launched(False, False)
        positions = [
            range(length - 1, length) if plain else range(length - n, length)
            for length, n in zip(lens, extend, strict=True)
        ]
        rows = [self.hidden_at(s, p) for s, ps in zip(slots, positions, strict=True) for p in ps]
        out = types.SimpleNamespace(
            logits_output=types.SimpleNamespace(hidden_states=torch.stack(rows)),
            next_token_ids=torch.tensor(
                [self.token_at(s, n - 1) for s, n in zip(slots, lens, strict=True)],
                device=self.device,
                dtype=torch.int32,
            ),
            next_draft_input=None,
        )
        if plain:
            return True, self.ctl.plain_prefill_output(batch, out)
        out.next_draft_input = "the draft's extend"
        self.ctl.after_extend(batch, out)
        return False, out

    def zero_round(self, slots: list[int], lens: list[int], overlap: bool = True) -> int:
        """One 0-step round as the scheduler and the worker run it; the reserve the batch got."""
        batch = self.batch(slots, lens, ForwardMode.DECODE)
        if overlap:
            batch.spec_info.future_indices = batch.req_pool_indices
        reserve: int = self.runtime.decode_reserve(batch, 8)
        assert self.runtime.reads_bonus_only(batch), "the future map gathers only the bonus token"
        self.ctl.activate(batch)
        assert self.worker.speculative_num_steps == 0, "a planned 0-step batch runs at 0 steps"
        published: list[Any] = []
        self.last_round = (batch, self.ctl.plain_round(batch, published.append), published)
        assert self.last_round[1] is not None, "plain path taken"
        return reserve


@dataclass
class Story:
    """A world and where each request stands: its committed length per slot."""

    world: World
    lens: dict[int, int] = field(default_factory=dict)
    first_reserve: int | None = None
    resume: Any = None
    """The batch of the last resume (a drafting round) the story played."""


def plain_rounds(overlay: Overlay, cpu_lens: bool) -> Story:
    """Slot 2: a 10-token prompt, then 6 plain 0-step rounds (positions 10..15). Slot 5: a 7-token
    prompt prefilled during the 0-step period, then 2 rounds (7, 8). Four requests a round: at the
    threshold."""
    story = Story(World(overlay, cpu_lens))
    w, lens = story.world, story.lens
    w.prefill([2], [10], [10])
    lens[2] = 10
    for rnd in range(6):
        slots = [2] + ([5] if rnd >= 4 else [])
        if rnd == 4:
            w.prefill([5], [7], [7])
            lens[5] = 7
        batch_lens = [lens[s] for s in slots] + [0] * (4 - len(slots))
        slots_padded = slots + [0, 1, 3, 4][: 4 - len(slots)]
        for s, n in zip(slots_padded, batch_lens, strict=True):
            lens.setdefault(s, n)
        reserve = w.zero_round(slots_padded, [lens[s] for s in slots_padded])
        story.first_reserve = reserve if story.first_reserve is None else story.first_reserve
        for s in slots_padded:
            lens[s] += 1
    return story


def first_resume(overlay: Overlay, cpu_lens: bool) -> Story:
    """Then slots 2 and 5 (and two of the padding requests) draft again: the first catch-up."""
    story = plain_rounds(overlay, cpu_lens)
    w, lens = story.world, story.lens
    slots = [2, 5, 0, 1]
    story.resume = w.batch(slots, [lens[s] for s in slots], ForwardMode.DECODE)
    w.ctl.maybe_catch_up(story.resume)
    return story


def late_prefill_resume(overlay: Overlay, cpu_lens: bool) -> Story:
    """Then a request is prefilled (slot 6), one more 0-step round runs without it, and all five
    resume: slot 6's draft state is current, the others missed a round."""
    story = first_resume(overlay, cpu_lens)
    w, lens = story.world, story.lens
    w.ctl.maybe_catch_up(story.resume)  # a second drafting round: nothing to catch up
    w.prefill([6], [5], [5])
    for s in (2, 5, 0, 1):
        lens[s] += 1
    w.zero_round([2, 5, 0, 1], [lens[s] for s in (2, 5, 0, 1)])
    for s in (2, 5, 0, 1):
        lens[s] += 1
    story.resume = w.batch([2, 5, 0, 1, 6], [lens[s] for s in (2, 5, 0, 1)] + [5], ForwardMode.DECODE)
    story.resume.spec_info.topk_index = torch.full((5, 1), 3, device=w.device)
    w.ctl.maybe_catch_up(story.resume)
    return story


def gap_resume(overlay: Overlay, cpu_lens: bool) -> Story:
    """Then slot 2 jumps 3 positions past what the ring holds and slot 7 was never seen: neither has
    anything held before its length."""
    story = late_prefill_resume(overlay, cpu_lens)
    w, lens = story.world, story.lens
    w.ctl.streak.missed([2, 7])
    lens[2] += 3
    story.resume = w.batch([2, 7], [lens[2], 9], ForwardMode.DECODE)
    story.resume.spec_info.topk_index = torch.full((2, 1), 3, device=w.device)
    w.ctl.maybe_catch_up(story.resume)
    return story


def plain_prefill_resume(overlay: Overlay, cpu_lens: bool) -> Story:
    """After the plain rounds, slot 6 arrives (a 6-token prompt) while the batch decodes at 0 steps:
    its prefill is a plain server's. One more 0-step round with it, then all five resume."""
    story = plain_rounds(overlay, cpu_lens)
    w, lens = story.world, story.lens
    slots = [2, 5, 0, 1]
    plain, out = w.hooked_prefill([6], [6], [6])
    assert plain, "a prefill that joins a 0-step batch is a plain server's"
    story.resume = out  # the prefill's result, for the tests to read
    lens[6] = 6
    w.zero_round([*slots, 6], [lens[s] for s in [*slots, 6]])
    for s in [*slots, 6]:
        lens[s] += 1
    resume = w.batch([*slots, 6], [lens[s] for s in [*slots, 6]], ForwardMode.DECODE)
    resume.spec_info.topk_index = torch.full((5, 1), 3, device=w.device)
    w.ctl.maybe_catch_up(resume)
    story.lens = lens
    return story
