"""Zero-step rounds as plain decodes: the plain round (k25console patch 03).

* ``PlainDecodeTarget``: a second attention backend and decode CUDA-graph runner for the target,
  built at start-up in plain ``ForwardMode.DECODE`` (the runner is constructed while the model
  runner reads as non-speculative, which is what selects DECODE capture, one token per request and
  no verify input). A 0-step round binds them for its one forward.
* ``run_plain_decode``: the whole 0-step round as a plain decode, in place of SGLang's verify path:
  input = each request's bonus token, one KV slot per request (the slot SGLang's one-token verify
  writes), position = committed length, the target's own decode graph and sampler, and a result
  that carries only what the scheduler reads.
* ``batch_facts``: what ``k25_zero_step_policy.plain_ineligible_reason`` needs to know of a batch.

SGLang imports are local to the functions: the runtime is imported by the scheduler's batch code,
which loads early.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import torch
from sglang.srt.speculative.k25_zero_step_timer import mark

if TYPE_CHECKING:
    from sglang.srt.managers.utils import GenerationBatchResult
    from sglang.srt.model_executor.runner import DecodeCudaGraphRunner


class PlainDecodeTarget:
    """The target's attention backend and decode graph for 0-step rounds."""

    def __init__(self, model_runner: Any, attn_backend: Any, graph_runner: Any) -> None:
        self.model_runner = model_runner
        self.attn_backend = attn_backend
        self.graph_runner = graph_runner

    @classmethod
    def build(cls, model_runner: Any) -> PlainDecodeTarget:
        from sglang.srt.model_executor.cuda_graph_config import (
            Backend,
            Phase,
            check_cuda_graph_backend,
        )
        from sglang.srt.speculative.spec_info import SpeculativeAlgorithm

        algorithm = model_runner.spec_algorithm
        backup_init = model_runner.init_new_workspace
        model_runner.spec_algorithm = SpeculativeAlgorithm.NONE
        try:
            attn_backend = model_runner._get_attention_backend(init_new_workspace=True)
            graph_runner = None
            if not check_cuda_graph_backend(Phase.DECODE, Backend.DISABLED):
                graph_runner = _plain_graph_runner_cls()(model_runner, attn_backend=attn_backend)
        finally:
            model_runner.spec_algorithm = algorithm
            model_runner.init_new_workspace = backup_init
        return cls(model_runner, attn_backend, graph_runner)

    @contextlib.contextmanager
    def bound(self) -> Iterator[None]:
        """The target model runner with this state's backend and graph, for one forward."""
        mr = self.model_runner
        saved = (mr.attn_backend, mr.decode_cuda_graph_runner)
        mr.attn_backend, mr.decode_cuda_graph_runner = self.attn_backend, self.graph_runner
        try:
            yield
        finally:
            mr.attn_backend, mr.decode_cuda_graph_runner = saved


_PLAIN_RUNNER_CLS: type[DecodeCudaGraphRunner] | None = None


def _plain_graph_runner_cls() -> type[DecodeCudaGraphRunner]:
    """``DecodeCudaGraphRunner`` that captures the target's hidden states (for the catch-up)."""
    global _PLAIN_RUNNER_CLS
    if _PLAIN_RUNNER_CLS is None:
        from sglang.srt.model_executor.forward_batch_info import CaptureHiddenMode
        from sglang.srt.model_executor.runner import DecodeCudaGraphRunner

        class PlainDecodeGraphRunner(DecodeCudaGraphRunner):
            """A decode graph whose capture mode is never below FULL.

            The base class sets its mode from the server's return-hidden-states setting (NULL
            unless asked) before it captures; the aux hidden states a catch-up needs must be
            among the graph's outputs, so the attribute keeps at least FULL.
            """

            @property
            def capture_hidden_mode(self) -> CaptureHiddenMode:
                mode: CaptureHiddenMode = self.__dict__.get(
                    "_k25_capture_hidden_mode", CaptureHiddenMode.FULL
                )
                return mode

            @capture_hidden_mode.setter
            def capture_hidden_mode(self, value: CaptureHiddenMode) -> None:
                self.__dict__["_k25_capture_hidden_mode"] = max(value, CaptureHiddenMode.FULL)

        _PLAIN_RUNNER_CLS = PlainDecodeGraphRunner
    return _PLAIN_RUNNER_CLS


def batch_facts(batch: Any, model_runner: Any) -> dict[str, bool]:
    """What ``policy.plain_ineligible_reason`` needs to know about one 0-step batch."""
    sampling = batch.sampling_info
    return {
        "idle": batch.forward_mode.is_idle(),
        "has_grammar": bool(batch.has_grammar),
        "return_logprob": bool(batch.return_logprob),
        "hisparse": batch.hisparse_coordinator is not None,
        "mamba": batch.mamba_track_indices is not None,
        "mrope": bool(model_runner.model_config.model_is_mrope),
        "watermark": bool(getattr(sampling, "has_watermark_candidates", False)),
        "input_embeds": batch.input_embeds is not None or batch.replace_embeds is not None,
    }


def run_plain_decode(
    worker: Any, batch: Any, plain: PlainDecodeTarget, ones: torch.Tensor
) -> GenerationBatchResult:
    """One 0-step round as a plain decode, end to end: the host path of a server without a drafter.

    Input = each request's bonus token, one KV slot per request (the slot SGLang's one-token
    verify writes), position = committed length; the target's own decode graph; the target's own
    sampler. None of spec v2's verify bookkeeping runs (no verify input, no verify sampler, no
    commit kernels, no stubbed draft extend): the result carries what the scheduler's result
    processing and the future map read (tokens, accept lengths of 1, new lengths, the bonus
    token as the next draft input; no top-k or hidden stubs, so the future map keeps each
    request's last drafted-from state for the resume).
    """
    from sglang.kernels.ops.speculative.cache_locs import assign_extend_cache_locs_uniform_func
    from sglang.srt.managers.utils import GenerationBatchResult
    from sglang.srt.model_executor.forward_batch_info import (
        CaptureHiddenMode,
        ForwardBatch,
        ForwardMode,
    )
    from sglang.srt.speculative.eagle_info import EagleDraftInput
    from sglang.srt.speculative.spec_info import SpeculativeAlgorithm

    target_worker = worker.target_worker
    model_runner = target_worker.model_runner
    bs = batch.seq_lens.shape[0]
    batch.input_ids = batch.spec_info.bonus_tokens
    batch.out_cache_loc = assign_extend_cache_locs_uniform_func(
        req_pool_indices=batch.req_pool_indices,
        req_to_token=worker.req_to_token_pool.req_to_token,
        start_offset=batch.seq_lens,
        batch_size=bs,
        draft_token_num=1,
        device=batch.device,
    )
    view = copy.copy(batch)
    view.forward_mode = ForwardMode.DECODE
    view.spec_info = None
    view.spec_algorithm = SpeculativeAlgorithm.NONE
    # Decode convention: seq_lens counts the token being decoded (spec v2's excludes it).
    view.seq_lens = batch.seq_lens + 1
    view.seq_lens_cpu = batch.seq_lens_cpu + 1 if batch.seq_lens_cpu is not None else None
    view.seq_lens_sum = None
    if batch.orig_seq_lens is not None:
        view.orig_seq_lens = batch.orig_seq_lens + 1
    forward_batch = ForwardBatch.init_new(
        view,
        model_runner,
        capture_hidden_mode=CaptureHiddenMode.FULL,
        return_hidden_states_before_norm=False,
    )
    with plain.bound():
        runner = model_runner.decode_cuda_graph_runner
        can_run_cuda_graph = bool(runner and runner.can_run_graph(forward_batch))
        if can_run_cuda_graph:
            runner.load_batch(forward_batch)
            forward_batch.mark_forward_metadata_ready()
        mark("prepare")
        output = target_worker.forward_batch_generation(
            batch=None, forward_batch=forward_batch, is_verify=True
        )
    mark("target_forward")
    logits_output = output.logits_output
    next_token_ids = model_runner.sample(logits_output, forward_batch)
    mark("sample")
    return GenerationBatchResult(
        logits_output=logits_output,
        next_token_ids=next_token_ids,
        can_run_cuda_graph=can_run_cuda_graph,
        speculative_num_draft_tokens=1,
        next_draft_input=EagleDraftInput(bonus_tokens=next_token_ids),
        accept_lens=ones[:bs],
        new_seq_lens=batch.seq_lens + 1,
        routed_experts_output=output.routed_experts_output,
        indexer_topk_output=output.indexer_topk_output,
        extra_keep_alive_refs=[forward_batch],
    )
