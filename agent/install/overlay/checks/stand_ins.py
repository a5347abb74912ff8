"""SGLang's names the zero-step runtime imports, stood in for, and the overlay loaded with them.

The runtime (``agent/install/overlay/sglang/srt/speculative/k25_zero_step_*.py``) imports a handful of
SGLang names lazily: a cache-location kernel, the forward-mode and capture enums, ``ForwardBatch``,
``EagleDraftInput``, ``GenerationBatchResult``, the allocation length and the runtime context. Here
each is a small stand-in that does what the runtime relies on (``tests/install/test_zero_step_surface.py``
holds the runtime's reads to the pinned wheel's classes, so a stand-in cannot drift unnoticed), and
``load`` imports the overlay's own modules, unchanged, from a tree: the repository's overlay, or a
site-packages ``agent install`` wrote (the GPU host's preflight).

Torch is needed; pytest is not (``bench/real/zero_step_preflight.py`` runs these tests without it).
"""

from __future__ import annotations

import importlib
import sys
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

OVERLAY = Path(__file__).resolve().parents[1]
"""The overlay these checks sit in (``agent/install/overlay``): the tree ``load`` reads by default."""


def _module(name: str, **attrs: Any) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__path__ = []  # a package, so that submodules resolve through sys.modules
    for key, value in attrs.items():
        setattr(module, key, value)
    return module


class ForwardMode:
    """The three modes the runtime sets or asks about."""

    DECODE: ForwardMode
    EXTEND: ForwardMode
    TARGET_VERIFY: ForwardMode

    def __init__(self, name: str) -> None:
        self.name = name

    def is_idle(self) -> bool:
        return self.name == "IDLE"

    def is_extend(self) -> bool:
        return self.name == "EXTEND"

    def is_decode(self) -> bool:
        return self.name == "DECODE"


ForwardMode.DECODE = ForwardMode("DECODE")
ForwardMode.EXTEND = ForwardMode("EXTEND")
ForwardMode.TARGET_VERIFY = ForwardMode("TARGET_VERIFY")


class EagleDraftInput:
    def __init__(
        self, bonus_tokens: Any = None, num_tokens_per_req: int = -1, num_tokens_for_logprob_per_req: int = -1
    ) -> None:
        self.bonus_tokens = bonus_tokens
        self.num_tokens_per_req = num_tokens_per_req
        self.num_tokens_for_logprob_per_req = num_tokens_for_logprob_per_req
        self.topk_p = self.topk_index = self.hidden_states = self.draft_probs = None
        self.future_indices = None  # the overlap scheduler sets it: the future map relays the rest


def assign_extend_cache_locs_uniform_func(
    *,
    req_pool_indices: Any,
    req_to_token: Any,
    start_offset: Any,
    batch_size: int,
    draft_token_num: int,
    device: Any,
) -> Any:
    cols = torch.arange(draft_token_num, device=device, dtype=torch.int64)
    pos = start_offset.to(torch.int64).unsqueeze(1) + cols
    return req_to_token[req_pool_indices.to(torch.int64).unsqueeze(1), pos].reshape(-1)


class CaptureHiddenMode:
    NULL = "NULL"
    LAST = "LAST"
    FULL = "FULL"


class ForwardBatch:
    """What the plain round's target forward is handed: the decode view's fields."""

    def __init__(self, view: Any, capture_hidden_mode: Any) -> None:
        self.forward_mode = view.forward_mode
        self.input_ids = view.input_ids
        self.seq_lens = view.seq_lens
        self.req_pool_indices = view.req_pool_indices
        self.out_cache_loc = view.out_cache_loc
        self.spec_info = view.spec_info
        self.capture_hidden_mode = capture_hidden_mode

    @classmethod
    def init_new(cls, view: Any, model_runner: Any, capture_hidden_mode: Any, **_: Any) -> ForwardBatch:
        return cls(view, capture_hidden_mode)


@dataclass(frozen=True)
class Overlay:
    """The zero-step modules as loaded, and the device the tests run on."""

    policy: types.ModuleType
    runtime: types.ModuleType
    plain: types.ModuleType
    ring: types.ModuleType
    catchup: types.ModuleType
    timer: types.ModuleType
    device: str
    tree: Path


def stand_ins(tree: Path) -> dict[str, types.ModuleType]:
    speculative = _module("sglang.srt.speculative")
    speculative.__path__ = [str(tree / "sglang" / "srt" / "speculative")]  # the overlay's own modules
    return {
        "sglang": _module("sglang"),
        "sglang.srt": _module("sglang.srt"),
        "sglang.srt.speculative": speculative,
        "sglang.kernels": _module("sglang.kernels"),
        "sglang.kernels.ops": _module("sglang.kernels.ops"),
        "sglang.kernels.ops.speculative": _module("sglang.kernels.ops.speculative"),
        "sglang.kernels.ops.speculative.cache_locs": _module(
            "sglang.kernels.ops.speculative.cache_locs",
            assign_extend_cache_locs_uniform_func=assign_extend_cache_locs_uniform_func,
        ),
        "sglang.srt.model_executor": _module("sglang.srt.model_executor"),
        "sglang.srt.model_executor.forward_batch_info": _module(
            "sglang.srt.model_executor.forward_batch_info",
            ForwardMode=ForwardMode,
            CaptureHiddenMode=CaptureHiddenMode,
            ForwardBatch=ForwardBatch,
        ),
        "sglang.srt.managers": _module("sglang.srt.managers"),
        "sglang.srt.managers.utils": _module(
            "sglang.srt.managers.utils", GenerationBatchResult=types.SimpleNamespace
        ),
        "sglang.srt.speculative.spec_info": _module(
            "sglang.srt.speculative.spec_info", SpeculativeAlgorithm=types.SimpleNamespace(NONE="NONE")
        ),
        "sglang.srt.speculative.eagle_info": _module(
            "sglang.srt.speculative.eagle_info", EagleDraftInput=EagleDraftInput
        ),
        "sglang.srt.mem_cache": _module("sglang.srt.mem_cache"),
        "sglang.srt.mem_cache.allocation_sizing": _module(
            "sglang.srt.mem_cache.allocation_sizing", get_alloc_len_per_decode=lambda: 4
        ),
        "sglang.srt.runtime_context": _module(
            "sglang.srt.runtime_context",
            get_parallel=lambda: types.SimpleNamespace(pp_size=1),
            get_spec=lambda: types.SimpleNamespace(speculative_adaptive_config=None),
        ),
    }


def load(tree: Path = OVERLAY, device: str = "cpu") -> Overlay:
    """The overlay's zero-step modules from ``tree`` (a folder holding ``sglang/srt/speculative``),
    with SGLang's names stood in for; what an earlier ``load`` imported is dropped first."""
    runtime_file = tree / "sglang" / "srt" / "speculative" / "k25_zero_step_runtime.py"
    if not runtime_file.is_file():
        raise FileNotFoundError(f"{runtime_file} does not exist: give the overlay or a patched site-packages")
    for name in [n for n in sys.modules if n == "sglang" or n.startswith("sglang.")]:
        del sys.modules[name]
    sys.modules.update(stand_ins(tree))
    modules = {
        part: importlib.import_module(f"sglang.srt.speculative.k25_zero_step_{part}")
        for part in ("policy", "runtime", "plain", "ring", "catchup", "timer")
    }
    return Overlay(**modules, device=device, tree=tree)
