"""Running a few pure functions of the pinned SGLang wheel here, with small stubs for their imports.

``allocation_sizing.py`` imports the runtime context (config bags) and, inside its functions,
``SpeculativeAlgorithm`` (whose module imports torch). The stubs below provide exactly what those
functions read: the ``spec``/``schedule`` bags and the algorithm predicates ``is_uno`` and
``has_draft_kv`` (transcribed: UNO is only UNO, NGRAM alone writes no draft KV).
``max_speculative_num_draft_tokens`` is SGLang's own, compiled from ``runtime_context.py``.
"""

from __future__ import annotations

import bisect
import json
import logging
import math
import sys
import types
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cached_property
from pathlib import Path
from typing import Any

from sglang_source import exec_functions


class StubAlgorithm:
    def __init__(self, name: str | None) -> None:
        self.name = (name or "NONE").upper()

    @classmethod
    def from_string(cls, name: str | None) -> StubAlgorithm:
        return cls(name)

    def is_uno(self) -> bool:
        return self.name == "UNO"

    def has_draft_kv(self) -> bool:
        return self.name != "NGRAM"

    def get_platform_worker_cls(self) -> None:
        return None


class Bags:
    """The config the stubbed runtime context hands out; tests set its fields per case."""

    def __init__(self) -> None:
        self.spec = types.SimpleNamespace()
        self.schedule = types.SimpleNamespace(page_size=1)
        self.parallel = types.SimpleNamespace(attn_dcp_size=1)

    def set(
        self,
        *,
        algorithm: str | None,
        steps: int | None,
        topk: int | None,
        draft_tokens: int | None,
        max_draft_tokens: int | None,
        page_size: int,
    ) -> None:
        self.spec = types.SimpleNamespace(
            speculative_algorithm=algorithm,
            speculative_num_steps=steps,
            speculative_eagle_topk=topk,
            speculative_num_draft_tokens=draft_tokens,
            max_speculative_num_draft_tokens=max_draft_tokens,
        )
        self.schedule = types.SimpleNamespace(page_size=page_size)


@contextmanager
def allocation_sizing(src: Path) -> Iterator[tuple[types.ModuleType, Bags]]:
    """SGLang's ``srt/mem_cache/allocation_sizing.py`` as a module, over stubbed bags."""
    bags = Bags()
    runtime = types.ModuleType("sglang.srt.runtime_context")
    runtime.get_spec = lambda: bags.spec  # type: ignore[attr-defined]
    runtime.get_schedule = lambda: bags.schedule  # type: ignore[attr-defined]
    runtime.get_parallel = lambda: bags.parallel  # type: ignore[attr-defined]
    real = exec_functions(
        src / "srt/runtime_context.py", ("max_speculative_num_draft_tokens",), {"get_spec": lambda: bags.spec}
    )
    runtime.max_speculative_num_draft_tokens = real.max_speculative_num_draft_tokens  # type: ignore[attr-defined]
    spec_info = types.ModuleType("sglang.srt.speculative.spec_info")
    spec_info.SpeculativeAlgorithm = StubAlgorithm  # type: ignore[attr-defined]
    stubs = {
        "sglang": types.ModuleType("sglang"),
        "sglang.srt": types.ModuleType("sglang.srt"),
        "sglang.srt.runtime_context": runtime,
        "sglang.srt.speculative": types.ModuleType("sglang.srt.speculative"),
        "sglang.srt.speculative.spec_info": spec_info,
    }
    saved = {name: sys.modules.get(name) for name in stubs}
    sys.modules.update(stubs)
    try:
        module = types.ModuleType("sglang.srt.mem_cache.allocation_sizing")
        path = src / "srt/mem_cache/allocation_sizing.py"
        exec(compile(path.read_text(), str(path), "exec"), module.__dict__)
        yield module, bags
    finally:
        for name, old in saved.items():
            if old is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = old


def adaptive_spec_params(src: Path) -> types.SimpleNamespace:
    """The config loader, routing and support check of ``srt/speculative/adaptive_spec_params.py``."""
    namespace: dict[str, Any] = {
        "json": json,
        "math": math,
        "bisect": bisect,
        "cached_property": cached_property,
        "logger": logging.getLogger("sglang-contract"),
        "log_info_on_rank0": lambda logger, msg: None,
        "resolving_view": lambda args: args,
        "resolved_view": lambda args: args,
        "attn_dp_enabled_of": lambda cfg: cfg.attn_dp_size > 1,
        "SpeculativeAlgorithm": StubAlgorithm,
    }
    return exec_functions(
        src / "srt/speculative/adaptive_spec_params.py",
        (
            "DEFAULT_ADAPTIVE_CONFIG",
            "adaptive_unsupported_reason",
            "_load_adaptive_config",
            "resolve_candidate_steps_from_config",
            "AdaptiveStepSlot",
            "AdaptiveSpeculativeParams",
        ),
        namespace,
    )
