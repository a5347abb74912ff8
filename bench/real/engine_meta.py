"""Where a result ran: the hardware and software behind one engine, as JSON (bench/real/gpu.sh keeps one
file per engine beside the results).

GPU name and count and driver (``nvidia-smi``), the torch, CUDA and SGLang the engine's own stack
imports (its python, ``agent.install.stack_versions``: not the image's torch, which a stack built with
``--system-site-packages`` may shadow), the SGLang version and attention backend the engine reports
(its ``/server_info``), the model's shape (its ``config.json``), and the profile's name and SHA-256.

    python -m bench.real.engine_meta --url URL --profile P.toml [--stack-python PYTHON]

``--stack-python`` defaults to the profile's stack venv's python.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import hashlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx

from agent.install import stack_versions
from agent.profile.store import load_profile
from agent.sglang.client import EngineClient

SHAPE_KEYS = (
    "architectures",
    "vocab_size",
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "num_key_value_heads",
    "head_dim",
    "intermediate_size",
    "torch_dtype",
)


def run(argv: list[str]) -> str | None:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def shape_of(path: str | None) -> dict[str, Any] | None:
    if not path:
        return None
    try:
        config = json.loads((Path(path) / "config.json").read_text())
    except (OSError, ValueError):
        return None
    return {key: config.get(key) for key in SHAPE_KEYS if key in config}


async def meta(args: argparse.Namespace) -> dict[str, Any]:
    profile_bytes = args.profile.read_bytes()
    profile = load_profile(args.profile)
    async with httpx.AsyncClient() as http:
        raw = await EngineClient(args.url, http).server_info_raw()
    state0 = (raw.get("internal_states") or [{}])[0]
    gpus = run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"])
    python = args.stack_python or Path(profile.stack.venv).expanduser() / "bin" / "python"
    versions, why = stack_versions.probe(python)
    return {
        "gpus": gpus.splitlines() if gpus else None,
        "gpu_count": len(gpus.splitlines()) if gpus else None,
        "stack_python": str(python),
        "stack_versions": dataclasses.asdict(versions) if versions is not None else None,
        "stack_versions_unknown": why,
        "sglang_version": raw.get("version"),
        "attention_backend": state0.get("attention_backend") or raw.get("attention_backend"),
        "decode_attention_backend": state0.get("decode_attention_backend"),
        "speculative_algorithm": raw.get("speculative_algorithm"),
        "model_path": raw.get("model_path"),
        "model_shape": shape_of(raw.get("model_path")),
        "draft_model_path": raw.get("speculative_draft_model_path"),
        "draft_shape": shape_of(raw.get("speculative_draft_model_path")),
        "profile": profile.identity.name,
        "profile_sha256": hashlib.sha256(profile_bytes).hexdigest(),
        "zero_step": ((state0.get("adaptive_spec_live") or {}).get("zero_step")),
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--url", required=True)
    parser.add_argument("--profile", type=Path, required=True)
    parser.add_argument(
        "--stack-python", type=Path, default=None, help="default: the profile's stack venv's python"
    )
    print(json.dumps(asyncio.run(meta(parser.parse_args())), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
