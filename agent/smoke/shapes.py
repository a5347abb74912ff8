"""The shapes of the tiny models ``agent smoke`` writes, and where it writes them.

``tiny`` is the shape proven on the real engine (8 layers, hidden 512); ``heavy`` (hidden 2048, 24
layers, 16 heads, 4 KV heads, head_dim 128, intermediate 5632) costs enough per token for an
off-versus-baseline measurement (issue 18). Head counts can be chosen so that a tensor-parallel size
of 2, 4 or 8 divides them (SGLang shards attention heads over TP ranks; KV heads may also be fewer
than the TP size when the TP size is a multiple of them, SGLang then replicates them).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

TINY_MODELS_SCRIPT = Path(__file__).with_name("tiny_models.py")
"""Run by the stack's python; it imports nothing of the agent."""
DRAFTS = ("oracle", "random")


@dataclass(frozen=True)
class ModelShape:
    vocab: int = 32000
    hidden: int = 512
    layers: int = 8
    heads: int = 8
    kv_heads: int = 8
    head_dim: int = 64
    intermediate: int = 1408
    max_position: int = 8192

    def problems(self, tp_size: int = 1) -> list[str]:
        out = []
        if self.vocab <= 777:
            out.append(f"vocab must be above 777 (the token the target always picks), got {self.vocab}")
        if self.layers < 4:
            out.append(f"layers must be at least 4 (EAGLE-3 reads layers 2, L/2 and L-3), got {self.layers}")
        if self.heads % self.kv_heads:
            out.append(f"heads ({self.heads}) must be a multiple of kv_heads ({self.kv_heads})")
        if self.heads % tp_size:
            out.append(f"heads ({self.heads}) must be divisible by the TP size {tp_size}")
        if self.kv_heads % tp_size and tp_size % self.kv_heads:
            out.append(f"kv_heads ({self.kv_heads}) and the TP size {tp_size} must divide one another")
        for name in ("hidden", "heads", "kv_heads", "head_dim", "intermediate"):
            if getattr(self, name) < 1:
                out.append(f"{name} must be positive")
        return out

    def kv_bytes_per_token(self) -> int:
        """bf16 K and V of every target layer, plus the 1-layer draft's share (SGLang's MHA cell)."""
        target = self.kv_heads * self.head_dim * 2 * 2 * self.layers
        return target + target // self.layers


PRESETS: dict[str, ModelShape] = {
    "tiny": ModelShape(),
    "heavy": ModelShape(hidden=2048, layers=24, heads=16, kv_heads=4, head_dim=128, intermediate=5632),
}


def shape_for(preset: str, *, heads: int | None = None, kv_heads: int | None = None) -> ModelShape:
    if preset not in PRESETS:
        raise ValueError(f"--preset must be one of {', '.join(PRESETS)}, got {preset!r}")
    shape = PRESETS[preset]
    if heads is not None:
        shape = replace(shape, heads=heads)
    if kv_heads is not None:
        shape = replace(shape, kv_heads=kv_heads)
    return shape


@dataclass(frozen=True)
class ModelSet:
    """The three model folders of one shape, under ``root/<preset>-<digest>``."""

    root: Path
    shape: ModelShape
    preset: str
    seed: int = 0

    @property
    def folder(self) -> Path:
        digest = hashlib.sha256(json.dumps(asdict(self.shape), sort_keys=True).encode()).hexdigest()[:8]
        return self.root / f"{self.preset}-{digest}"

    @property
    def target(self) -> Path:
        return self.folder / "tiny-llama"

    def draft(self, kind: str) -> Path:
        return self.folder / f"tiny-eagle3-{kind}"

    def spec(self) -> dict[str, Any]:
        return {
            "shape": asdict(self.shape),
            "seed": self.seed,
            "out": {"target": str(self.target), **{k: str(self.draft(k)) for k in DRAFTS}},
        }

    def complete(self) -> bool:
        """Written before with this very spec (the script writes its spec last in every folder)."""
        for folder in (self.target, *(self.draft(k) for k in DRAFTS)):
            try:
                if json.loads((folder / "k25-tiny-spec.json").read_text()) != self.spec():
                    return False
            except (OSError, ValueError):
                return False
            if not (folder / "model.safetensors").is_file():
                return False
        return True
