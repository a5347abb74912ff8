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


PRESETS: dict[str, ModelShape] = {
    "tiny": ModelShape(),
    "heavy": ModelShape(hidden=2048, layers=24, heads=16, kv_heads=4, head_dim=128, intermediate=5632),
    # Llama-3-8B's shape with a 32k vocabulary (bf16, ~15 GB): a round is GPU-bound, as a deployment's
    # is, and its figures repeat within about 5 % (bench/results/real-h200-2026-12-03-8b-verify).
    "big": ModelShape(hidden=4096, layers=32, heads=32, kv_heads=8, head_dim=128, intermediate=14336),
}


@dataclass(frozen=True)
class ChainSpec:
    """A chain set (``tiny_models.build_chain``): a target that walks a cycle of ``tokens`` tokens and
    one EAGLE-3 head per share q of drafts it gets right (accept length about 1 + q + ... + q^steps)."""

    tokens: int = 1024
    shares: tuple[float, ...] = (1.0, 0.8)

    def problems(self) -> list[str]:
        out = []
        if self.tokens < 8:
            out.append(f"the cycle needs at least 8 tokens, got {self.tokens}")
        for q in self.shares:
            if not 0.0 <= q <= 1.0:
                out.append(f"every accepted share must be between 0 and 1, got {q}")
        if len(set(self.head_names())) != len(self.shares):
            out.append("accepted shares must differ by at least 0.01")
        return out

    def head_names(self) -> list[str]:
        return [head_name(q) for q in self.shares]


def head_name(share: float) -> str:
    """``q080`` for a head that drafts 80 % of the cycle right."""
    return f"q{round(share * 100):03d}"


CHAIN_PRESETS: dict[str, ChainSpec] = {
    # accept length at 3 steps about 2.95 (q 0.8) and 4.00 (q 1.0, the oracle's): a real drafter's range
    # and the always-accepted reference, over one target
    "tuned": ChainSpec(tokens=1024, shares=(1.0, 0.8)),
    "range": ChainSpec(tokens=1024, shares=(1.0, 0.85, 0.8, 0.7)),
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
    chain: ChainSpec | None = None
    """A chain set (a cycling target and heads of chosen acceptance) instead of the 777 set."""

    @property
    def drafts(self) -> tuple[str, ...]:
        return tuple(self.chain.head_names()) if self.chain is not None else DRAFTS

    @property
    def folder(self) -> Path:
        identity: dict[str, Any] = asdict(self.shape)
        if self.chain is not None:
            identity["chain"] = asdict(self.chain)
        digest = hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:8]
        return self.root / f"{self.preset}{'-chain' if self.chain else ''}-{digest}"

    @property
    def target(self) -> Path:
        return self.folder / "tiny-llama"

    def draft(self, kind: str) -> Path:
        return self.folder / f"tiny-eagle3-{kind}"

    def spec(self) -> dict[str, Any]:
        spec: dict[str, Any] = {
            "shape": asdict(self.shape),
            "seed": self.seed,
            "out": {"target": str(self.target), **{k: str(self.draft(k)) for k in self.drafts}},
        }
        if self.chain is not None:
            names = self.chain.head_names()
            spec["chain"] = {
                "tokens": self.chain.tokens,
                "heads": dict(zip(names, self.chain.shares, strict=True)),
            }
        return spec

    def complete(self) -> bool:
        """Written before with this very spec (the script writes its spec last in every folder)."""
        for folder in (self.target, *(self.draft(k) for k in self.drafts)):
            try:
                if json.loads((folder / "k25-tiny-spec.json").read_text()) != self.spec():
                    return False
            except (OSError, ValueError):
                return False
            if not (folder / "model.safetensors").is_file():
                return False
        return True
