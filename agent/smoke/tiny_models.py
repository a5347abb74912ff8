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

With ``"chain"`` in the spec (``agent.smoke.shapes.ChainSpec``) it writes a *chain* set instead,
whose heads accept a chosen share of drafts (``build_chain``):

* target: the same identity layers, but the LM head maps each token to a fixed next token: a single
  cycle over a set T of tokens (any token outside T goes to a token in T), so greedy decoding walks
  the cycle;
* head ``qNNN``: an EAGLE-3 head whose draft of the next token is right for a chosen share q of T
  (the set S) and wrong elsewhere, for every draft step: its attention picks the positions holding
  the current token and its output layer maps that token to its draft. The draft chain after a bonus
  token b is accepted while b, next(b), ... stay in S, so the accept length at k steps is about
  1 + q + ... + q^k; the exact value for the cycle written is computed and stored
  (``k25-chain.json``).

A WordLevel tokenizer (``w4`` ... ``w<vocab-1>``) makes chat and text requests work.
Proven on the real engine (SGLang 0.5.23, one H200, 2026-12-01) with the ``tiny`` shape.
"""

from __future__ import annotations

import json
import os
import random
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
    # Here, not at the top: this runs in the stack's python (torch, tokenizers), which the agent lacks.
    from tokenizers import Tokenizer, models, pre_tokenizers

    vocab = {"<pad>": 0, "<s>": 1, "</s>": 2, "<unk>": 3}
    vocab.update({f"w{i}": i for i in range(4, shape["vocab"])})
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.save(os.path.join(folder, "tokenizer.json"))
    _write_json(os.path.join(folder, "tokenizer_config.json"), tokenizer_config(shape))


def build(spec: dict[str, Any]) -> dict[str, Any]:
    # Here, not at the top: torch is the stack's (this file runs in the stack's python).
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


ROUTE_DIMS = 64
"""Embedding dims kept for the tokens outside the cycle (``build_chain``)."""


def chain_tokens(shape: dict[str, Any], wanted: int) -> int:
    """How many tokens the cycle can hold: each needs its own orthonormal value direction among the
    embedding dims (after the key code and the dims kept for the other tokens) and the value dims."""
    room = int(shape["hidden"]) - int(shape["head_dim"]) - ROUTE_DIMS
    return max(2, min(wanted, room, int(shape["kv_heads"]) * int(shape["head_dim"])))


def expected_accept(cycle: list[int], known: set[int], steps: int) -> float:
    """Mean tokens per verify of greedy decoding along ``cycle`` with drafts right exactly at ``known``.

    A round starts at the bonus token b; draft i is accepted while b, next(b), ... next^(i-1)(b) are
    all known; the round commits the accepted drafts and a new bonus. Averaged over rounds of long
    runs from every starting point (the renewal process the engine runs).
    """
    n = len(cycle)
    tokens = rounds = 0
    for start in range(n):
        i = start
        for _ in range(64):
            accepted = 0
            while accepted < steps and cycle[(i + accepted) % n] in known:
                accepted += 1
            tokens += accepted + 1
            rounds += 1
            i = (i + accepted + 1) % n
    return tokens / rounds


def build_chain(spec: dict[str, Any]) -> dict[str, Any]:
    """The chain set: a cycling target and one EAGLE-3 head per accept share (module docstring)."""
    # Here, not at the top: torch is the stack's (this file runs in the stack's python).
    import torch
    from safetensors.torch import save_file

    shape, chain = spec["shape"], spec["chain"]
    device = "cuda" if torch.cuda.is_available() else "cpu"
    rng = random.Random(int(spec.get("seed", 0)))
    gen = torch.Generator(device=device).manual_seed(int(spec.get("seed", 0)))
    v, h, nh, kv, hd = (shape[k] for k in ("vocab", "hidden", "heads", "kv_heads", "head_dim"))
    bf16 = torch.bfloat16
    n = chain_tokens(shape, int(chain["tokens"]))
    cycle = rng.sample(range(4, v), n)
    nxt = {cycle[i]: cycle[(i + 1) % n] for i in range(n)}

    def unit_rows(rows: int, dims: int) -> torch.Tensor:
        m = torch.randn(rows, dims, generator=gen, device=device)
        return m / m.norm(dim=-1, keepdim=True)

    def orthonormal(rows: int, dims: int) -> torch.Tensor:
        q, _ = torch.linalg.qr(torch.randn(dims, rows, generator=gen, device=device))
        return q.T.contiguous()  # rows orthonormal vectors of length dims

    def rnd(*dims: int) -> torch.Tensor:
        return (torch.randn(*dims, generator=gen, device=device) * 0.02).to(bf16).cpu()

    # One embedding serves both (SGLang gives an EAGLE-3 head of the target's hidden size the
    # target's embedding): a token y of T is [key code (head_dim) | value code | 0], any other token
    # [0 | 0 | a random route direction].
    cycle_ids = torch.tensor(cycle, device=device)
    key_code = unit_rows(n, hd)
    vdims = min(h - hd - ROUTE_DIMS, kv * hd)
    value_code = orthonormal(n, vdims)
    rest = h - hd - vdims
    embed = torch.zeros(v, h, device=device)
    embed[:, hd + vdims :] = unit_rows(v, rest)
    embed[cycle_ids] = 0.0
    embed[cycle_ids, :hd] = key_code
    embed[cycle_ids, hd : hd + vdims] = value_code
    # Target: hidden state = the token's embedding (its layers add nothing). The LM head row of
    # next(y) is y's direction, so greedy picks next(y) on T. Each row of T also holds a random
    # route direction: a token outside T (a prompt's) goes to the row its route is nearest to, a
    # different entry point of the cycle for different prompts.
    head = torch.zeros(v, h, device=device)
    next_ids = torch.tensor([nxt[y] for y in cycle], device=device)
    head[next_ids] = embed[cycle_ids] / 2**0.5
    head[cycle_ids, hd + vdims :] = unit_rows(n, rest) * 0.5
    head *= 10.0 / h**0.5
    draft_embed = embed
    scale = (h / 2) ** 0.5  # RMSNorm of [unit | unit | 0]: every entry times sqrt(h / 2)
    beta = (40.0 * hd**0.5) ** 0.5 / scale  # the current token's score: 40 after the 1/sqrt(hd)
    q_w = torch.zeros(nh * hd, 2 * h, device=device)
    k_w = torch.zeros(kv * hd, 2 * h, device=device)
    v_w = torch.zeros(kv * hd, 2 * h, device=device)
    eye = torch.eye(hd, device=device)
    for j in range(nh):
        q_w[j * hd : (j + 1) * hd, :hd] = eye * beta
    for g in range(kv):
        k_w[g * hd : (g + 1) * hd, :hd] = eye * beta
    v_w[torch.arange(vdims), hd + torch.arange(vdims)] = 1.0 / scale
    out_dirs = orthonormal(n, h)  # the LM head's direction of each token of T
    lm_head = torch.zeros(v, h, device=device)
    lm_head[cycle_ids] = out_dirs * (10.0 / h**0.5)
    index = {y: i for i, y in enumerate(cycle)}

    written: dict[str, Any] = {}
    for name, q in sorted(chain["heads"].items()):
        known = set(rng.sample(cycle, round(float(q) * n)))
        # draft(y) = next(y) for y in S, another token of T elsewhere (never next(y))
        draft_of = {
            y: nxt[y] if y in known else cycle[(index[y] + 2 + rng.randrange(n - 2)) % n] for y in cycle
        }
        # value code of y -> out_dir(draft(y)) - out_dir(y): the residual stream telescopes across
        # draft steps (each step adds its token's term, the previous token's cancels).
        target_dirs = out_dirs[torch.tensor([index[draft_of[y]] for y in cycle], device=device)]
        mapping = (target_dirs - out_dirs).T @ value_code  # h x vdims
        per_head = kv / nh
        o_w = torch.zeros(h, nh * hd, device=device)
        padded = torch.zeros(h, kv * hd, device=device)
        padded[:, :vdims] = mapping
        for j in range(nh):
            g = j // (nh // kv)
            o_w[:, j * hd : (j + 1) * hd] = padded[:, g * hd : (g + 1) * hd] * per_head
        tensors = {
            "fc.weight": torch.zeros(h, 3 * h, dtype=bf16),
            "norm.weight": torch.ones(h, dtype=bf16),
            "lm_head.weight": lm_head.to(bf16).cpu(),
            "embed_tokens.weight": draft_embed.to(bf16).cpu(),
            "d2t": torch.zeros(v, dtype=torch.int64),
            "t2d": torch.ones(v, dtype=torch.bool),
            "midlayer.self_attn.q_proj.weight": q_w.to(bf16).cpu(),
            "midlayer.self_attn.k_proj.weight": k_w.to(bf16).cpu(),
            "midlayer.self_attn.v_proj.weight": v_w.to(bf16).cpu(),
            "midlayer.self_attn.o_proj.weight": o_w.to(bf16).cpu(),
            "midlayer.mlp.gate_proj.weight": rnd(shape["intermediate"], h),
            "midlayer.mlp.up_proj.weight": rnd(shape["intermediate"], h),
            "midlayer.mlp.down_proj.weight": torch.zeros(h, shape["intermediate"], dtype=bf16),
            "midlayer.input_layernorm.weight": torch.ones(h, dtype=bf16),
            "midlayer.hidden_norm.weight": torch.ones(h, dtype=bf16),
            "midlayer.post_attention_layernorm.weight": torch.ones(h, dtype=bf16),
        }
        folder = spec["out"][name]
        os.makedirs(folder, exist_ok=True)
        save_file(
            {k: t.contiguous() for k, t in tensors.items()},
            os.path.join(folder, "model.safetensors"),
            metadata={"format": "pt"},
        )
        _write_json(os.path.join(folder, "config.json"), model_config(shape, draft=True))
        _write_tokenizer(folder, shape)
        facts = {
            "q": float(q),
            "cycle_tokens": n,
            "known_tokens": len(known),
            "expected_accept_length": {
                str(k): round(expected_accept(cycle, known, k), 4) for k in range(1, 5)
            },
            "formula_accept_length": {
                str(k): round(sum(float(q) ** i for i in range(k + 1)), 4) for k in range(1, 5)
            },
        }
        _write_json(os.path.join(folder, "k25-chain.json"), facts)
        _write_json(os.path.join(folder, "k25-tiny-spec.json"), spec)
        written[name] = {"folder": folder, **facts}
    target = {
        "model.embed_tokens.weight": embed.to(bf16).cpu(),
        "model.norm.weight": torch.ones(h, dtype=bf16),
        "lm_head.weight": head.to(bf16).cpu(),
    }
    for name, dims, kind in tensor_plan(shape, None):
        if name not in target:
            target[name] = (
                rnd(*dims)
                if kind == "rnd"
                else (torch.zeros(*dims, dtype=bf16) if kind == "zeros" else torch.ones(*dims, dtype=bf16))
            )
    folder = spec["out"]["target"]
    os.makedirs(folder, exist_ok=True)
    save_file(
        {k: t.contiguous() for k, t in target.items()},
        os.path.join(folder, "model.safetensors"),
        metadata={"format": "pt"},
    )
    _write_json(os.path.join(folder, "config.json"), model_config(shape, draft=False))
    _write_tokenizer(folder, shape)
    _write_json(os.path.join(folder, "generation_config.json"), {"bos_token_id": 1, "eos_token_id": 2})
    _write_json(os.path.join(folder, "k25-chain-cycle.json"), {"cycle": cycle})
    _write_json(os.path.join(folder, "k25-tiny-spec.json"), spec)
    written["target"] = folder
    return {"written": written, "device": device, "torch": torch.__version__}


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: tiny_models.py SPEC.json", file=sys.stderr)
        return 2
    with open(argv[1], encoding="utf-8") as fh:
        spec = json.load(fh)
    started = time.monotonic()
    result = build_chain(spec) if spec.get("chain") else build(spec)
    result["seconds"] = round(time.monotonic() - started, 1)
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
