"""Same greedy tokens from every way of decoding: the plain 0-step path changes speed, not output.

Sends the same prompts (greedy, ``--output-len`` tokens) to a server without a drafter and to a
speculative server at live threshold 1 on patch 03's plain path, at threshold 1 on SGLang's verify
path, and at threshold 0 (drafting); prints whether every answer is the same token sequence, and
puts the speculative server's threshold and path back.

    python -m bench.real.same_tokens --url SPEC_URL --baseline-url BASE_URL [--prompts 4]
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import sys
from typing import Any

import httpx

from agent.bench.stream import make_prompt
from agent.sglang.client import EngineClient
from agent.sglang.live_control import NO_THRESHOLD, ZERO_STEP_PLAIN, ZERO_STEP_VERIFY

NEVER_SPECULATE = 1


async def tokens_of(client: httpx.AsyncClient, url: str, ids: list[int], output_len: int) -> list[int]:
    body: dict[str, Any] = {
        "input_ids": ids,
        "sampling_params": {"max_new_tokens": output_len, "ignore_eos": True, "temperature": 0.0},
    }
    answer = await client.post(f"{url}/generate", json=body, timeout=120)
    answer.raise_for_status()
    data = answer.json()
    out = data.get("output_ids") or (data.get("meta_info") or {}).get("output_ids")
    if out is None:
        raise SystemExit(f"{url} answered no output_ids: {json.dumps(data)[:300]}")
    return [int(x) for x in out]


async def run(args: argparse.Namespace) -> int:
    prompts = [make_prompt(args.input_len, 7000 + i).input_ids for i in range(args.prompts)]
    async with httpx.AsyncClient() as client:
        spec = EngineClient(args.url, client)
        live = await spec.live_state()
        if live is None or live.zero_step is None:
            raise SystemExit("the speculative server reads back no zero_step state (patch 03)")
        original = (live.threshold, live.zero_step.path)
        answers: dict[str, list[list[int]]] = {}
        answers["baseline"] = [
            await tokens_of(client, args.baseline_url, p, args.output_len) for p in prompts
        ]
        try:
            for name, threshold, path in (
                ("zero_plain", NEVER_SPECULATE, ZERO_STEP_PLAIN),
                ("zero_verify", NEVER_SPECULATE, ZERO_STEP_VERIFY),
                ("spec", NO_THRESHOLD, ZERO_STEP_PLAIN),
            ):
                await spec.set_live(adaptive_spec_threshold=threshold)
                await spec.set_zero_step_path(path)
                answers[name] = [await tokens_of(client, args.url, p, args.output_len) for p in prompts]
        finally:
            await spec.set_live(adaptive_spec_threshold=int(original[0] or 0))
            if original[1] is not None:
                await spec.set_zero_step_path(original[1])
        after = await spec.live_state()
    same = all(answers[name] == answers["baseline"] for name in answers)
    for name, outs in answers.items():
        print(f"{name:12s} {'same' if outs == answers['baseline'] else 'DIFFERENT'}  first: {outs[0][:12]}")
    if after is not None and after.zero_step is not None:
        print("zero_step read-back:", json.dumps(dataclasses.asdict(after.zero_step)))
    print("ALL SAME" if same else "OUTPUTS DIFFER")
    return 0 if same else 1


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--url", required=True)
    parser.add_argument("--baseline-url", required=True)
    parser.add_argument("--prompts", type=int, default=4)
    parser.add_argument("--input-len", type=int, default=64)
    parser.add_argument("--output-len", type=int, default=48)
    return asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    sys.exit(main())
