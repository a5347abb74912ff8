from torch import Tensor

class EagleDraftInput:
    topk_p: Tensor | None
    topk_index: Tensor | None
    draft_probs: Tensor | None
    hidden_states: Tensor | None
    bonus_tokens: Tensor | None
    future_indices: Tensor | None
    num_tokens_per_req: int
    num_tokens_for_logprob_per_req: int
    def __init__(
        self,
        bonus_tokens: Tensor | None = None,
        num_tokens_per_req: int = -1,
        num_tokens_for_logprob_per_req: int = -1,
    ) -> None: ...
