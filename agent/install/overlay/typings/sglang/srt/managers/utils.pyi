from typing import Any

from torch import Tensor

class GenerationBatchResult:
    logits_output: Any
    next_token_ids: Tensor | None
    can_run_cuda_graph: bool
    speculative_num_draft_tokens: int | None
    next_draft_input: Any
    accept_lens: Tensor | None
    new_seq_lens: Tensor | None
    routed_experts_output: Any
    indexer_topk_output: Any
    extra_keep_alive_refs: list[Any] | None
    def __init__(
        self,
        *,
        logits_output: Any = None,
        next_token_ids: Tensor | None = None,
        can_run_cuda_graph: bool = False,
        speculative_num_draft_tokens: int | None = None,
        next_draft_input: Any = None,
        accept_lens: Tensor | None = None,
        new_seq_lens: Tensor | None = None,
        routed_experts_output: Any = None,
        indexer_topk_output: Any = None,
        extra_keep_alive_refs: list[Any] | None = None,
    ) -> None: ...
