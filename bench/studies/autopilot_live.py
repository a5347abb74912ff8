"""The speculation autopilot on a running agent, real engine or simulated: on, loaded, moves, off.

Usage: python -m bench.studies.autopilot_live --state-dir DIR [--streams 16] [--seconds 240] [--max-new-tokens 4096]
                                      [--expect never-pays|always-pays]

For the GPU host, with ``agent smoke``'s tiny models: ``agent smoke --profile P --draft random
--work-dir W`` leaves ``W/runs/<stamp>-random/profile.toml``, the one-GPU profile of the random head;
serve it (``agent serve --profile .../profile.toml --state-dir DIR``) and run this script against it.
It connects to the agent's socket (``DIR/run/agent.sock``, token ``DIR/token``), keeps ``--streams``
greedy ``/generate`` requests running against the engine (its URL from ``/v1/status``), turns the
autopilot on through the operator's path (plan, confirm: audited), prints every autopilot event as it
comes, and after ``--seconds`` turns it off and checks that the engine's live threshold is the
operator's again, read back in one step. ``--expect never-pays`` (the random head) wants the threshold
at 2 or below within two minutes of load; ``always-pays`` (the oracle head) wants drafting never
switched off outside a probe. Exit 0 when what was expected happened.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from bench.kit.agent_api import agent_client, plan_and_confirm, stream_items

TIMEOUT_S = 60.0


async def act(c: httpx.AsyncClient, value: bool) -> dict[str, Any]:
    plan, done = await plan_and_confirm(c, "autopilot", value)
    if done is None:
        raise SystemExit(f"autopilot_live: the agent refused: {plan.get('reason')}")
    print(f"{'on' if value else 'off'}: {done.get('status')}: {done.get('message')}", flush=True)
    return done


async def thresholds_after_off(c: httpx.AsyncClient, since: int, operator: int | None) -> list[int | None]:
    """The live thresholds the snapshots after ``since`` show once the autopilot reads off, up to the
    first that shows the operator's (bounded): a snapshot's read of the engine can predate the restore
    that its autopilot state already shows, so the first "off" snapshot may still carry the old value."""
    seen: list[int | None] = []
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(TIMEOUT_S):
            async for kind, item in stream_items(c, since):
                if kind != "snapshot" or (item.get("autopilot") or {}).get("enabled", True):
                    continue
                seen.append((item.get("speculation") or {}).get("threshold"))
                if seen[-1] == operator:
                    break
    return seen


async def traffic(url: str, streams: int, max_new: int, headers: dict[str, str]) -> None:
    body = {"text": "Write a long story about a lighthouse.", "stream": True,
            "sampling_params": {"max_new_tokens": max_new, "temperature": 0}}  # fmt: skip

    async def one(client: httpx.AsyncClient) -> None:
        while True:
            with contextlib.suppress(httpx.HTTPError):
                async with client.stream("POST", f"{url}/generate", json=body, headers=headers) as r:
                    async for _ in r.aiter_raw():
                        pass

    async with httpx.AsyncClient(timeout=httpx.Timeout(TIMEOUT_S, read=None)) as client:
        await asyncio.gather(*(one(client) for _ in range(streams)))


async def run(args: argparse.Namespace) -> int:
    async with agent_client(args.state_dir, TIMEOUT_S) as c:
        status = (await c.get("/v1/status")).json()
        if status.get("engine_state") != "ready":
            raise SystemExit(f"autopilot_live: the engine is {status.get('engine_state')}, not ready")
        since = status["last_seq"]
        load = asyncio.create_task(traffic(status["engine_url"], args.streams, args.max_new_tokens, {}))
        started = time.monotonic()
        await act(c, True)
        low_at: float | None = None
        off_outside_probe = 0
        probing = False
        operator: int | None = None
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(args.seconds):
                async for kind, item in stream_items(c, since):
                    if kind == "event" and str(item.get("name", "")).startswith("autopilot."):
                        probing = item["name"] == "autopilot.probe" or (
                            probing and item["name"] != "autopilot.probe_end"
                        )
                        print(
                            f"{time.monotonic() - started:6.1f} s  {item['name']}: {item['message']}",
                            flush=True,
                        )
                    elif kind == "snapshot":
                        spec, load_now, auto = (
                            item["speculation"],
                            item["load"],
                            item.get("autopilot") or {},
                        )
                        operator = auto.get("operator_threshold", operator)
                        threshold, running = spec.get("threshold"), load_now.get("running") or 0
                        if threshold is not None and 0 < threshold <= 2 and low_at is None:
                            low_at = time.monotonic() - started
                        if threshold and running >= threshold and not probing:
                            off_outside_probe += 1
        since = (await c.get("/v1/status")).json()["last_seq"]
        await act(c, False)
        load.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await load
        seen = await thresholds_after_off(c, since, operator)
    restored = bool(seen) and seen[-1] == operator
    # One step: the snapshots show the autopilot's last threshold, then the operator's, nothing between.
    one_step = restored and len(set(seen[:-1])) <= 1
    print(f"threshold <= 2 after {low_at:.0f} s" if low_at is not None else "threshold never at 2 or below")
    print(f"ticks with drafting off outside probes: {off_outside_probe}")
    print(
        f"off restored the operator's threshold {operator}: {'yes' if restored else 'no'}"
        f"{' in one step' if one_step else ''} (thresholds the snapshots showed after off: {seen})"
    )
    ok = restored and one_step
    if args.expect == "never-pays":
        ok = ok and low_at is not None and low_at <= 120.0
    elif args.expect == "always-pays":
        ok = ok and off_outside_probe == 0
    return 0 if ok else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--state-dir", type=Path, required=True, help="the agent's --state-dir")
    parser.add_argument("--streams", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=240.0)
    parser.add_argument("--max-new-tokens", type=int, default=4096)
    parser.add_argument("--expect", choices=("never-pays", "always-pays"))
    return asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    sys.exit(main())
