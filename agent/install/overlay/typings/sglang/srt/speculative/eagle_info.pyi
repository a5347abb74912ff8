from torch import Tensor

class EagleDraftInput:
    topk_p: Tensor | None
    topk_index: Tensor | None
    draft_probs: Tensor | None
    hidden_states: Tensor | None
    bonus_tokens: Tensor | None
    future_indices: Tensor | None
    def __init__(self, bonus_tokens: Tensor | None = None) -> None: ...
