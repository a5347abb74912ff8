from typing import Any

from torch import Tensor

def assign_extend_cache_locs_uniform_func(
    req_pool_indices: Tensor,
    req_to_token: Tensor,
    start_offset: Tensor,
    batch_size: int,
    draft_token_num: int,
    device: Any,
) -> Tensor: ...
