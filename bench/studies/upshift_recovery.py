"""Accept length round by round after the server steps back up from 0 steps: the cost of the zero-step skip.

With ``speculation.skip_zero_step_draft_extend`` SGLang does not extend the draft over tokens decoded
at 0 steps, so after an upshift the draft starts cold and has no KV for those positions. This
measures it on a live server with k25console's live threshold:

1. threshold 1: every batch decodes at 0 steps; ``--concurrency`` long streaming ``/generate``
   requests run for ``--zero-s`` seconds;
2. threshold 0: the server speculates at every batch size; the same requests go on;
3. when they have finished, as many fresh requests (no 0-step history) run as a control;
4. the original threshold is written back.

``--arrivals N`` starts N more requests halfway through the 0-step phase: they prefill while the
batch decodes at 0 steps (patch 03 makes no draft state for them then; the catch-up on the first
drafting round does), and their accept length after the upshift is reported on its own, with
whether it is within 2 % of the fresh requests' mean by the third round (issue 36's goal).
``--unique-prompts`` sends token-id prompts drawn per request, as ``agent bench compare`` does, so
that every prefill is a whole prompt (the default text prompt is one repeated ``<unk>`` under the
tiny models' tokenizer, which the prefix cache holds after the first request).

Each streamed chunk of a request is one verify round (its new tokens are that round's accept
length, bonus included), checked against the request's final ``meta_info.spec_verify_ct``: chunks
the server coalesced are counted and reported. Printed: the mean accept length of rounds 1, 2, …
after the upshift across the requests that lived through the 0-step phase, their steady state (the
second half of their rounds), the fresh requests' mean, and the first round from which a five-round
mean reaches 90 % of the fresh mean. Run it against a server launched with the skip on and one with
it off; the difference is the skip's cost.

    .venv/bin/python -m bench.studies.upshift_recovery --url http://127.0.0.1:30000 [--concurrency 8]
        [--zero-s 20] [--output-len 2048] [--input-len 1024] [--arrivals 8 --unique-prompts]
        [--admin-key-file F] [--json OUT]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from agent.bench.engine import EngineProbe
from agent.bench.stream import generate_body, make_prompt
from agent.sglang.live_control import NO_THRESHOLD

NEVER_SPECULATE = 1
RECOVERED = 0.9
WINDOW = 5
SHOWN_ROUNDS = 20
BACK_BY_ROUND = 3  # issue 36: within 2 % of fresh by the third round after a resume
BACK_WITHIN = 0.02


@dataclass
class Stream:
    """One request's chunks: (arrival time, cumulative completion tokens), and its final verify count."""

    chunks: list[tuple[float, int]] = field(default_factory=list)
    verify_ct: int | None = None
    error: str | None = None

    def rounds_after(self, t: float) -> list[int]:
        """New tokens per chunk for the chunks that arrived after ``t`` (each one verify round)."""
        out, last = [], 0
        for at, count in self.chunks:
            if at > t:
                out.append(count - last)
            last = count
        return out

    def coalesced(self) -> int:
        """Chunks the server merged: verify rounds it ran (+1 for the prefill token) minus chunks seen."""
        return 0 if self.verify_ct is None else max(0, self.verify_ct + 1 - len(self.chunks))


async def stream_one(
    client: httpx.AsyncClient, url: str, headers: dict[str, str], body: dict[str, Any]
) -> Stream:
    out = Stream()
    async with client.stream("POST", f"{url}/generate", json=body, headers=headers, timeout=None) as response:
        if response.status_code != 200:
            out.error = f"HTTP {response.status_code}"
            return out
        async for line in response.aiter_lines():
            if not line.startswith("data:") or line.strip() == "data: [DONE]":
                continue
            data = json.loads(line[5:])
            if "error" in data:
                out.error = str(data["error"])
                return out
            meta = data.get("meta_info") or {}
            count = int(meta.get("completion_tokens", 0))
            if not out.chunks or count > out.chunks[-1][1]:
                out.chunks.append((time.monotonic(), count))
            if meta.get("spec_verify_ct") is not None:
                out.verify_ct = int(meta["spec_verify_ct"])
    return out


def _body(input_len: int, output_len: int, seed: int) -> dict[str, Any]:
    return {
        "text": make_prompt(input_len, seed).text,
        "sampling_params": {"max_new_tokens": output_len, "ignore_eos": True, "temperature": 0.0},
        "stream": True,
    }


def _unique_body(input_len: int, output_len: int, seed: int) -> dict[str, Any]:
    """A token-id prompt drawn for this request (the compare's): its prefill is the whole prompt."""
    return generate_body(make_prompt(input_len, seed), output_len)


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _per_round(streams: list[Stream], switch_at: float) -> list[float | None]:
    series = [s.rounds_after(switch_at) for s in streams]
    longest = max((len(r) for r in series), default=0)
    return [_mean([float(r[k]) for r in series if len(r) > k]) for k in range(longest)]


def back_by(
    per_round: list[float | None], fresh_mean: float | None, by_round: int = BACK_BY_ROUND
) -> bool | None:
    """Whether the mean accept length of round ``by_round`` after the upshift is within
    ``BACK_WITHIN`` of the fresh requests' mean (None: not measurable)."""
    if not fresh_mean or len(per_round) < by_round or per_round[by_round - 1] is None:
        return None
    value = per_round[by_round - 1]
    assert value is not None
    return value >= (1 - BACK_WITHIN) * fresh_mean


def summarize(
    lived: list[Stream], fresh: list[Stream], switch_at: float, arrived: list[Stream] | None = None
) -> dict[str, Any]:
    series = [s.rounds_after(switch_at) for s in lived]
    per_round = _per_round(lived, switch_at)
    steady = _mean([float(x) for r in series for x in r[len(r) // 2 :]])
    fresh_rounds = [s.rounds_after(0.0)[1:] for s in fresh]  # the first chunk is the prefill's token
    fresh_mean = _mean([float(x) for r in fresh_rounds for x in r])
    recovered_at = None
    if fresh_mean:
        for k in range(len(per_round)):
            window = [v for v in per_round[k : k + WINDOW] if v is not None]
            if window and sum(window) / len(window) >= RECOVERED * fresh_mean:
                recovered_at = k + 1
                break
    arrived_rounds = _per_round(arrived or [], switch_at)
    return {
        "accept_length_by_round_after_upshift": per_round,
        "accept_length_by_round_after_upshift_arrived_at_zero_steps": arrived_rounds if arrived else None,
        "lived_back_by_round_3": back_by(per_round, fresh_mean),
        "arrived_back_by_round_3": back_by(arrived_rounds, fresh_mean) if arrived else None,
        "steady_accept_length_lived_through_zero_steps": steady,
        "fresh_accept_length": fresh_mean,
        "rounds_to_recover": recovered_at,
        "recovered_means": f"a {WINDOW}-round mean at {RECOVERED:.0%} of the fresh requests' mean",
        "coalesced_chunks": sum(s.coalesced() for s in [*lived, *fresh, *(arrived or [])]),
        "errors": [s.error for s in [*lived, *fresh, *(arrived or [])] if s.error],
    }


async def measure(args: argparse.Namespace) -> dict[str, Any]:
    key = Path(args.api_key_file).read_text().strip() if args.api_key_file else None
    admin = Path(args.admin_key_file).read_text().strip() if args.admin_key_file else None
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    admin_headers = {"Authorization": f"Bearer {admin}"} if admin else headers
    async with httpx.AsyncClient() as client:
        probe = EngineProbe(client, args.url, headers, admin_headers)
        state = await probe.live_state()
        if state is None:
            raise SystemExit(
                "the server has no live threshold (k25console's patch, adaptive with a threshold)"
            )
        original = int(state.threshold if state.threshold is not None else NO_THRESHOLD)
        try:
            await probe.set_threshold(NEVER_SPECULATE)
            body = _unique_body if args.unique_prompts else _body
            tasks = [
                asyncio.create_task(
                    stream_one(client, args.url, headers, body(args.input_len, args.output_len, i))
                )
                for i in range(args.concurrency)
            ]
            # the 0-step phase lasts this long on the wall clock; arrivals come halfway through it
            await asyncio.sleep(args.zero_s / 2 if args.arrivals else args.zero_s)
            arriving = [
                asyncio.create_task(
                    stream_one(client, args.url, headers, body(args.input_len, args.output_len, 20_000 + i))
                )
                for i in range(args.arrivals)
            ]
            if args.arrivals:
                await asyncio.sleep(args.zero_s / 2)
            await probe.set_threshold(NO_THRESHOLD)
            switch_at = time.monotonic()
            lived = await asyncio.gather(*tasks)
            arrived = await asyncio.gather(*arriving)
            fresh = await asyncio.gather(
                *(
                    stream_one(client, args.url, headers, body(args.input_len, args.output_len, 10_000 + i))
                    for i in range(args.concurrency)
                )
            )
        finally:
            await probe.set_threshold(original)
        info = await probe.server_info()
    result = summarize(list(lived), list(fresh), switch_at, list(arrived))
    result["server"] = {
        "model_path": info.model_path,
        "speculative_num_steps": info.speculative_num_steps,
        "speculative_algorithm": info.speculative_algorithm,
    }
    result["options"] = {
        k: getattr(args, k)
        for k in ("concurrency", "zero_s", "input_len", "output_len", "arrivals", "unique_prompts")
    }
    return result


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--url", required=True)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--zero-s", type=float, default=20.0, help="seconds at 0 steps before the upshift")
    parser.add_argument("--input-len", type=int, default=1024)
    parser.add_argument("--output-len", type=int, default=2048)
    parser.add_argument(
        "--arrivals", type=int, default=0, help="requests started halfway through the 0-step phase"
    )
    parser.add_argument(
        "--unique-prompts",
        action="store_true",
        help="token-id prompts drawn per request (every prefill whole)",
    )
    parser.add_argument("--api-key-file")
    parser.add_argument("--admin-key-file")
    parser.add_argument("--json", type=Path, help="write the result here as well")
    args = parser.parse_args()
    result = asyncio.run(measure(args))
    per_round = result["accept_length_by_round_after_upshift"]
    print("round after the upshift   mean accept length (lived through 0 steps)")
    for k, value in enumerate(per_round[:SHOWN_ROUNDS], start=1):
        print(f"{k:>23}   {'' if value is None else f'{value:.2f}'}")
    arrived = result["accept_length_by_round_after_upshift_arrived_at_zero_steps"]
    if arrived:
        print("round after the upshift   mean accept length (arrived at 0 steps)")
        for k, value in enumerate(arrived[:SHOWN_ROUNDS], start=1):
            print(f"{k:>23}   {'' if value is None else f'{value:.2f}'}")
    for key in (
        "steady_accept_length_lived_through_zero_steps",
        "fresh_accept_length",
        "rounds_to_recover",
        "lived_back_by_round_3",
        "arrived_back_by_round_3",
    ):
        value = result[key]
        print(f"{key}: {value:.3f}" if isinstance(value, float) else f"{key}: {value}")
    print(f"coalesced chunks: {result['coalesced_chunks']}; errors: {len(result['errors'])}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
