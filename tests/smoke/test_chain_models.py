"""The chain set: a target that walks a cycle and EAGLE-3 heads that get a chosen share of drafts right.

Written for real by a Python with torch (the CPU venv of ``test_tiny_models``), then checked by
running the arithmetic SGLang 0.5.23 runs for these architectures (``models/llama.py`` and
``models/llama_eagle3.py``: RMSNorm, the EAGLE-3 midlayer's attention over the draft's own KV cache
with RoPE, the residual the draft carries from step to step, the LM heads) on the written weights:
greedy decoding walks the cycle, every draft step is right exactly where the head knows the token,
and the accept length the writer stores is what a round-by-round replay of that drafting gives.
"""

from __future__ import annotations

import json
import subprocess
import textwrap
from dataclasses import replace
from pathlib import Path

import pytest
from test_tiny_models import torch_python  # noqa: F401  (the fixture)

from agent.smoke.shapes import PRESETS, TINY_MODELS_SCRIPT, ChainSpec, ModelSet, head_name

pytestmark = pytest.mark.slow

SHAPE = replace(
    PRESETS["tiny"], vocab=600, hidden=256, layers=4, heads=4, kv_heads=2, head_dim=32, intermediate=96
)

PROBE = textwrap.dedent(
    """
    import json, sys, torch
    from safetensors.torch import load_file
    folder, heads = sys.argv[1], sys.argv[2].split(",")
    spec = json.load(open(f"{folder}/tiny-llama/k25-tiny-spec.json"))
    shape = spec["shape"]
    h, nh, kv, hd = shape["hidden"], shape["heads"], shape["kv_heads"], shape["head_dim"]
    cycle = json.load(open(f"{folder}/tiny-llama/k25-chain-cycle.json"))["cycle"]
    nxt = {cycle[i]: cycle[(i + 1) % len(cycle)] for i in range(len(cycle))}
    t = {k: v.float() for k, v in load_file(f"{folder}/tiny-llama/model.safetensors").items()}

    def rms(x):
        return x / x.pow(2).mean(-1, keepdim=True).add(1e-5).sqrt()

    def rope(x, pos):  # Llama's rotate-half RoPE, theta 10000, over each head's dims
        d = x.shape[-1]
        inv = 1.0 / (10000 ** (torch.arange(0, d, 2).float() / d))
        ang = pos * inv
        cos, sin = torch.cat([ang.cos(), ang.cos()]), torch.cat([ang.sin(), ang.sin()])
        x1, x2 = x[..., : d // 2], x[..., d // 2 :]
        return x * cos + torch.cat([-x2, x1], -1) * sin

    def target_next(y):
        return int((t["lm_head.weight"] @ rms(t["model.embed_tokens.weight"][y])).argmax())

    facts = {"walks_cycle": all(target_next(y) == nxt[y] for y in cycle)}
    outside = [y for y in range(4, shape["vocab"]) if y not in nxt][:50]
    facts["enters_cycle"] = all(target_next(y) in nxt for y in outside)

    class Draft:
        def __init__(self, name):
            w = {k: v.float() for k, v in load_file(f"{folder}/tiny-eagle3-{name}/model.safetensors").items()}
            self.w = w
            self.embed = t["model.embed_tokens.weight"]  # SGLang gives the head the target's embedding
            self.keys, self.values = [], []  # the draft's KV cache, one entry per position

        def step(self, token, hidden_in, pos):
            w = self.w
            x = torch.cat([rms(self.embed[token]), rms(hidden_in) if hidden_in.abs().sum() else hidden_in])
            q = (w["midlayer.self_attn.q_proj.weight"] @ x).view(nh, hd)
            k = (w["midlayer.self_attn.k_proj.weight"] @ x).view(kv, hd)
            v = (w["midlayer.self_attn.v_proj.weight"] @ x).view(kv, hd)
            q, k = rope(q, pos), rope(k, pos)
            self.keys.append(k); self.values.append(v)
            K, V = torch.stack(self.keys), torch.stack(self.values)  # [ctx, kv, hd]
            outs = []
            for j in range(nh):
                g = j // (nh // kv)
                att = torch.softmax(K[:, g] @ q[j] / hd**0.5, 0)
                outs.append(att @ V[:, g])
            attn = w["midlayer.self_attn.o_proj.weight"] @ torch.cat(outs)
            summed = attn + hidden_in  # post_attention_layernorm(attn, residual); the MLP adds 0
            logits = w["lm_head.weight"] @ rms(summed)
            return int(logits.argmax()), summed

    for name in heads:
        info = json.load(open(f"{folder}/tiny-eagle3-{name}/k25-chain.json"))
        rounds = tokens = 0
        for r in range(6):  # six requests, each entering the cycle where its prompt leads
            d = Draft(name)
            zero = torch.zeros(h)
            prompt = outside[r * 7 : r * 7 + 7]
            seq = list(prompt) + [target_next(prompt[-1])]
            for pos in range(len(seq) - 1):  # the prefill's draft extend: (token p+1, hidden p)
                d.step(seq[pos + 1], zero, pos)
            while len(seq) < len(prompt) + 120:
                s = len(seq) - 1  # positions 0..s-1 committed; the bonus token sits at s
                bonus = seq[s]
                d.keys, d.values = d.keys[: s - 1], d.values[: s - 1]
                tok, hidden = d.step(bonus, zero, s - 1)  # the extend's output at the last position
                drafts = [tok]
                for i in range(2):  # two more draft steps, at positions s and s+1
                    tok, hidden = d.step(tok, hidden, s + i)
                    drafts.append(tok)
                chain, y = [], bonus
                for dr in drafts:
                    if dr != nxt[y]:
                        break
                    chain.append(dr)
                    y = dr
                seq += chain + [nxt[y]]
                d.keys, d.values = d.keys[:s], d.values[:s]
                for pos in range(s, s + len(chain)):  # the draft extend over the accepted tokens
                    d.step(seq[pos + 1], zero, pos)
                rounds += 1
                tokens += len(chain) + 1
        facts[name] = {"replayed": tokens / rounds, "stored": info["expected_accept_length"]["3"],
                       "formula": info["formula_accept_length"]["3"], "q": info["q"],
                       "cycle": info["cycle_tokens"]}
    print(json.dumps(facts))
    """
)


def test_chain_heads_accept_the_share_they_were_built_for(torch_python: Path, tmp_path: Path) -> None:  # noqa: F811
    chain = ChainSpec(tokens=64, shares=(1.0, 0.8, 0.5))
    assert chain.problems() == []
    models = ModelSet(tmp_path, SHAPE, "tiny", chain=chain)
    assert models.drafts == ("q100", "q080", "q050") and models.folder.name.startswith("tiny-chain-")
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(models.spec()))
    done = subprocess.run(
        [str(torch_python), str(TINY_MODELS_SCRIPT), str(spec)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert models.complete()
    probe = subprocess.run(
        [str(torch_python), "-c", PROBE, str(models.folder), ",".join(models.drafts)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert probe.returncode == 0, probe.stderr[-3000:]
    facts = json.loads(probe.stdout.strip().splitlines()[-1])
    assert facts["walks_cycle"], "greedy decoding follows the cycle"
    assert facts["enters_cycle"], "a prompt outside the cycle enters it in one step"
    for q in chain.shares:
        head = facts[head_name(q)]
        assert head["replayed"] == pytest.approx(head["stored"], rel=0.05), head
        assert head["formula"] == pytest.approx(1 + q + q**2 + q**3, abs=1e-3)
    assert facts["q100"]["replayed"] == pytest.approx(4.0), "every draft of the full head is right"
    assert 2.0 < facts["q080"]["replayed"] < 3.6
    assert facts["q050"]["replayed"] < facts["q080"]["replayed"]


def test_chain_spec_refuses_what_cannot_be_built() -> None:
    assert ChainSpec(tokens=4).problems() == ["the cycle needs at least 8 tokens, got 4"]
    assert ChainSpec(shares=(1.2,)).problems() == ["every accepted share must be between 0 and 1, got 1.2"]
    assert ChainSpec(shares=(0.8, 0.801)).problems() == ["accepted shares must differ by at least 0.01"]
