"""Write tiny local models for a real SGLang EAGLE-3 smoke run: a target and two EAGLE-3 heads.

Run by the STACK's python (torch, safetensors and tokenizers live there, never in the agent's
environment); it imports nothing of the agent. ``agent smoke`` runs it as

    <stack venv>/bin/python tiny_models.py SPEC.json

where SPEC.json holds the shape (``agent.smoke.shapes.ModelShape``) and the output folders. It
prints one JSON line with what it wrote. Nothing is downloaded.

* target: a ``LlamaForCausalLM`` whose layers add nothing (``o_proj = down_proj = 0``), so the
  residual stream is the token embedding, and the embedding is built so that the final norm and
  LM head always pick token ``C`` (777): its greedy next token is always C.
* oracle: an EAGLE-3 head built the same way (``fc`` passes the target's hidden state through, its
  layer adds nothing, its LM head is the target's): it always drafts C, so every draft is accepted
  and the accept length is steps + 1.
* random: an EAGLE-3 head with random weights: almost no draft is accepted (accept length ~1).

A WordLevel tokenizer (``w4`` ... ``w<vocab-1>``) makes chat and text requests work.
Proven on the real engine (SGLang 0.5.23, one H200, 2026-12-01) with the ``tiny`` shape.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

CANDIDATE = 777


def tensor_plan(shape: dict[str, Any], oracle: bool | None) -> list[tuple[str, tuple[int, ...], str]]:
    """(name, shape, init) of every tensor: init is rnd, zeros, ones, embed, head, fc or the target's
    (``oracle`` None: the target; True/False: the oracle/random EAGLE-3 head). No torch needed."""
    v, h, nh, kv, hd, i = (
        shape[k] for k in ("vocab", "hidden", "heads", "kv_heads", "head_dim", "intermediate")
    )
    if oracle is None:
        plan = [
            ("model.embed_tokens.weight", (v, h), "embed"),
            ("model.norm.weight", (h,), "ones"),
            ("lm_head.weight", (v, h), "head"),
        ]
        for layer in range(shape["layers"]):
            p = f"model.layers.{layer}."
            plan += [
                (p + "self_attn.q_proj.weight", (nh * hd, h), "rnd"),
                (p + "self_attn.k_proj.weight", (kv * hd, h), "rnd"),
                (p + "self_attn.v_proj.weight", (kv * hd, h), "rnd"),
                (p + "self_attn.o_proj.weight", (h, nh * hd), "zeros"),
                (p + "mlp.gate_proj.weight", (i, h), "rnd"),
                (p + "mlp.up_proj.weight", (i, h), "rnd"),
                (p + "mlp.down_proj.weight", (h, i), "zeros"),
                (p + "input_layernorm.weight", (h,), "ones"),
                (p + "post_attention_layernorm.weight", (h,), "ones"),
            ]
        return plan
    p = "midlayer."
    return [
        ("fc.weight", (h, 3 * h), "fc" if oracle else "rnd"),
        ("norm.weight", (h,), "ones"),
        ("lm_head.weight", (v, h), "head" if oracle else "rnd"),
        ("embed_tokens.weight", (v, h), "embed"),
        ("d2t", (v,), "d2t"),
        ("t2d", (v,), "t2d"),
        (p + "self_attn.q_proj.weight", (nh * hd, 2 * h), "rnd"),
        (p + "self_attn.k_proj.weight", (kv * hd, 2 * h), "rnd"),
        (p + "self_attn.v_proj.weight", (kv * hd, 2 * h), "rnd"),
        (p + "self_attn.o_proj.weight", (h, nh * hd), "zeros" if oracle else "rnd"),
        (p + "mlp.gate_proj.weight", (i, h), "rnd"),
        (p + "mlp.up_proj.weight", (i, h), "rnd"),
        (p + "mlp.down_proj.weight", (h, i), "zeros" if oracle else "rnd"),
        (p + "input_layernorm.weight", (h,), "ones"),
        (p + "hidden_norm.weight", (h,), "ones"),
        (p + "post_attention_layernorm.weight", (h,), "ones"),
    ]


def model_config(shape: dict[str, Any], draft: bool) -> dict[str, Any]:
    base = {
        "model_type": "llama", "vocab_size": shape["vocab"], "hidden_size": shape["hidden"],
        "intermediate_size": shape["intermediate"], "num_attention_heads": shape["heads"],
        "num_key_value_heads": shape["kv_heads"], "head_dim": shape["head_dim"],
        "max_position_embeddings": shape["max_position"], "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
        "hidden_act": "silu", "tie_word_embeddings": False, "torch_dtype": "bfloat16",
        "bos_token_id": 1, "eos_token_id": 2, "pad_token_id": 0,
    }  # fmt: skip
    if draft:
        return {**base, "architectures": ["LlamaForCausalLMEagle3"], "num_hidden_layers": 1,
                "draft_vocab_size": shape["vocab"], "target_hidden_size": shape["hidden"]}  # fmt: skip
    return {**base, "architectures": ["LlamaForCausalLM"], "num_hidden_layers": shape["layers"]}


def tokenizer_config(shape: dict[str, Any]) -> dict[str, Any]:
    return {
        "tokenizer_class": "PreTrainedTokenizerFast", "bos_token": "<s>", "eos_token": "</s>",
        "pad_token": "<pad>", "unk_token": "<unk>", "model_max_length": shape["max_position"],
        "chat_template": "{% for m in messages %}{{ m['content'] }} {% endfor %}",
    }  # fmt: skip


def _write_json(path: str, data: dict[str, Any]) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=1)


def _write_tokenizer(folder: str, shape: dict[str, Any]) -> None:
    from tokenizers import Tokenizer, models, pre_tokenizers

    vocab = {"<pad>": 0, "<s>": 1, "</s>": 2, "<unk>": 3}
    vocab.update({f"w{i}": i for i in range(4, shape["vocab"])})
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.save(os.path.join(folder, "tokenizer.json"))
    _write_json(os.path.join(folder, "tokenizer_config.json"), tokenizer_config(shape))


def build(spec: dict[str, Any]) -> dict[str, Any]:
    import torch
    from safetensors.torch import save_file

    shape = spec["shape"]
    device = "cuda" if torch.cuda.is_available() else "cpu"
    gen = torch.Generator(device=device).manual_seed(int(spec.get("seed", 0)))
    v, h = shape["vocab"], shape["hidden"]
    bf16 = torch.bfloat16

    def rnd(*dims: int, scale: float = 0.02) -> torch.Tensor:
        return (torch.randn(*dims, generator=gen, device=device) * scale).to(bf16).cpu()

    u = torch.randn(h, generator=gen, device=device)
    u = u / u.norm()
    embed = (u.unsqueeze(0) + torch.randn(v, h, generator=gen, device=device) * 0.02).to(bf16).cpu()
    head = torch.randn(v, h, generator=gen, device=device) * 0.02
    head[CANDIDATE] = u * 8.0
    head = head.to(bf16).cpu()
    fc = torch.zeros(h, 3 * h)
    fc[:, :h] = torch.eye(h)

    def make(kind: str, dims: tuple[int, ...]) -> torch.Tensor:
        if kind == "rnd":
            return rnd(*dims)
        if kind == "zeros":
            return torch.zeros(*dims, dtype=bf16)
        if kind == "ones":
            return torch.ones(*dims, dtype=bf16)
        if kind == "d2t":
            return torch.zeros(*dims, dtype=torch.int64)
        if kind == "t2d":
            return torch.ones(*dims, dtype=torch.bool)
        return {"embed": embed, "head": head, "fc": fc.to(bf16)}[kind]

    written = {}
    for role, oracle in (("target", None), ("oracle", True), ("random", False)):
        folder = spec["out"][role]
        os.makedirs(folder, exist_ok=True)
        tensors = {name: make(kind, dims).contiguous() for name, dims, kind in tensor_plan(shape, oracle)}
        save_file(tensors, os.path.join(folder, "model.safetensors"), metadata={"format": "pt"})
        _write_json(os.path.join(folder, "config.json"), model_config(shape, draft=oracle is not None))
        _write_tokenizer(folder, shape)
        if oracle is None:
            _write_json(
                os.path.join(folder, "generation_config.json"), {"bos_token_id": 1, "eos_token_id": 2}
            )
        _write_json(os.path.join(folder, "k25-tiny-spec.json"), spec)
        written[role] = folder
    return {"written": written, "device": device, "torch": torch.__version__}


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: tiny_models.py SPEC.json", file=sys.stderr)
        return 2
    with open(argv[1], encoding="utf-8") as fh:
        spec = json.load(fh)
    started = time.monotonic()
    result = build(spec)
    result["seconds"] = round(time.monotonic() - started, 1)
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
