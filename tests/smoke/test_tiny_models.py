"""The tiny model generator, run for real by a Python with torch, safetensors and tokenizers (as the
stack's python is): it writes loadable files whose target always picks token 777 and whose oracle
head always drafts it.

The torch interpreter is a venv made once in ``~/.cache/k25console`` (``K25_TORCH_VENV`` overrides)
with PyTorch 2.13.0 CPU (the machine's own wheel), safetensors and tokenizers; the agent's own
environment never gets torch. The shape is a small variant of ``tiny``, so this takes seconds.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from dataclasses import replace
from pathlib import Path

import pytest

from agent.smoke.shapes import DRAFTS, PRESETS, TINY_MODELS_SCRIPT, ModelSet, shape_for

pytestmark = pytest.mark.slow


@pytest.fixture(scope="session")
def torch_python() -> Path:
    root = Path(os.environ.get("K25_TORCH_VENV", "~/.cache/k25console/torch-venv")).expanduser()
    python = root / "bin" / "python"
    probe = [str(python), "-c", "import torch, safetensors, tokenizers"]
    if python.exists() and subprocess.run(probe, capture_output=True, check=False).returncode == 0:
        return python
    subprocess.run([sys.executable, "-m", "venv", str(root)], check=True)
    install = [
        str(python),
        "-m",
        "pip",
        "install",
        "-q",
        "torch==2.13.0",
        "safetensors",
        "tokenizers",
        "numpy",
    ]
    done = subprocess.run(install, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        pytest.fail(f"could not make a torch venv in {root}:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return python


def test_shapes_refuse_what_sglang_could_not_shard() -> None:
    assert PRESETS["heavy"].problems(tp_size=8) == []  # 16 heads; 4 KV heads replicated over 8 ranks
    assert shape_for("tiny", heads=12, kv_heads=4).problems(tp_size=8) == [
        "heads (12) must be divisible by the TP size 8"
    ]
    assert (
        shape_for("tiny", heads=8, kv_heads=3).problems()[0] == "heads (8) must be a multiple of kv_heads (3)"
    )
    assert replace(PRESETS["tiny"], layers=3).problems()[0].startswith("layers must be at least 4")
    with pytest.raises(ValueError, match="--preset must be one of tiny, heavy"):
        shape_for("huge")


def test_the_generator_writes_models_the_target_and_oracle_agree_on(
    torch_python: Path, tmp_path: Path
) -> None:
    shape = replace(
        PRESETS["tiny"], vocab=1200, hidden=64, layers=4, heads=4, kv_heads=2, head_dim=16, intermediate=96
    )
    models = ModelSet(tmp_path, shape, "tiny")
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(models.spec()))
    done = subprocess.run(
        [str(torch_python), str(TINY_MODELS_SCRIPT), str(spec)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["written"]["target"] == str(models.target) and result["device"] == "cpu"
    assert models.complete()

    check = textwrap.dedent(
        f"""
        import json, torch
        from safetensors.torch import load_file
        from tokenizers import Tokenizer
        t = load_file({str(models.target / "model.safetensors")!r})
        o = load_file({str(models.draft("oracle") / "model.safetensors")!r})
        r = load_file({str(models.draft("random") / "model.safetensors")!r})
        embed, head = t["model.embed_tokens.weight"].float(), t["lm_head.weight"].float()
        x = embed / embed.pow(2).mean(-1, keepdim=True).add(1e-5).sqrt()  # the final RMSNorm (weight 1)
        target_argmax = (x @ head.T).argmax(-1)
        h = embed.shape[1]
        fc = o["fc.weight"].float()
        passed = torch.cat([embed, embed, embed], -1) @ fc.T  # fc of the aux states = the low layer's
        xo = passed / passed.pow(2).mean(-1, keepdim=True).add(1e-5).sqrt()
        oracle_argmax = (xo @ o["lm_head.weight"].float().T).argmax(-1)
        random_argmax = (xo @ r["lm_head.weight"].float().T).argmax(-1)
        tok = Tokenizer.from_file({str(models.target / "tokenizer.json")!r})
        print(json.dumps({{
            "target_all_777": bool((target_argmax == 777).all()),
            "oracle_all_777": bool((oracle_argmax == 777).all()),
            "random_777_share": float((random_argmax == 777).float().mean()),
            "layers_add_nothing": all(float(v.abs().max()) == 0 for k, v in t.items() if k.endswith(("o_proj.weight", "down_proj.weight"))),
            "oracle_midlayer_adds_nothing": float(o["midlayer.self_attn.o_proj.weight"].abs().max()) == 0,
            "names": sorted(t)[:3], "n_target": len(t), "dtype": str(t["lm_head.weight"].dtype),
            "ids": tok.encode("w10 w11").ids,
        }}))
        """
    )
    probe = subprocess.run([str(torch_python), "-c", check], capture_output=True, text=True, check=False)
    assert probe.returncode == 0, probe.stderr
    facts = json.loads(probe.stdout.strip().splitlines()[-1])
    assert facts["target_all_777"] and facts["oracle_all_777"]
    assert facts["random_777_share"] < 0.01
    assert facts["layers_add_nothing"] and facts["oracle_midlayer_adds_nothing"]
    assert facts["n_target"] == 3 + 9 * shape.layers and facts["dtype"] == "torch.bfloat16"
    assert facts["ids"] == [10, 11]
    config = json.loads((models.target / "config.json").read_text())
    assert config["architectures"] == ["LlamaForCausalLM"] and config["num_hidden_layers"] == 4
    assert config["num_key_value_heads"] == 2 and config["head_dim"] == 16
    for draft in DRAFTS:
        head_config = json.loads((models.draft(draft) / "config.json").read_text())
        assert (
            head_config["architectures"] == ["LlamaForCausalLMEagle3"]
            and head_config["target_hidden_size"] == 64
        )
