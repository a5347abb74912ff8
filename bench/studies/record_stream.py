"""Record a running agent's snapshot stream, headless, in the console's ``--record`` format.

Usage: python -m bench.studies.record_stream --socket S [--token-file T] --out FILE --seconds N
                                     [--thresholds 2,0,8,32 --every 15] [--traffic C]
                                     [--engine-key-file F]

For the GPU host: the real engine's stream while the threshold is moved, for the console's replay
and SVG tests (``k25console --replay FILE`` plays it). It connects to ``agent serve``'s UNIX socket
with its bearer token (``--token-file``, default ``<state-dir>/token`` beside the socket's ``run/``),
records every stream item (snapshots and events) and the GET answers it asked for (``/v1/status``,
``/v1/profiles``) through the console's own ``RecordingLink``, so the file is exactly what
``k25console --record`` writes. Optionally:

* ``--thresholds`` applies each value through the agent API (plan, then confirm when the plan is
  live: the operator's path, audited), one every ``--every`` seconds, the first after ``--every``;
* ``--traffic C`` keeps C greedy ``/generate`` requests of 64 tokens running against the engine
  (its URL from ``/v1/status``), so the recording shows load, throughput and accept length.

It stops by itself after ``--seconds``, or earlier on SIGINT/SIGTERM (every HTTP call has a timeout),
and prints what it recorded.
Exit 0 when every threshold was applied and at least one snapshot was recorded.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import secrets
import signal
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from console.link.local import LocalLink
from console.link.recording import RecordingLink

REQUEST_TIMEOUT_S = 60.0


def _parse_thresholds(text: str | None) -> list[int]:
    if not text:
        return []
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise SystemExit(
            f"record_stream: --thresholds must be comma-separated integers, got {text!r}"
        ) from None
    if any(v < 0 for v in values):
        raise SystemExit("record_stream: --thresholds must be >= 0 (0 = no threshold)")
    return values


async def apply_threshold(link: RecordingLink, value: int) -> tuple[bool, str]:
    """Plan, then confirm a live plan: (applied, what the agent said)."""
    request = {"request_id": f"record-{secrets.token_hex(6)}", "kind": "threshold", "value": value}
    plan: dict[str, Any] = await link.request("POST", "/v1/actions", body=request)
    if plan.get("mode") != "live":
        return False, f"plan is {plan.get('mode')}: {plan.get('reason')}"
    result: dict[str, Any] = await link.request("POST", f"/v1/actions/{plan['action_id']}/confirm")
    return result.get("status") == "applied", str(result.get("message") or result.get("status"))


async def traffic(url: str, key: str | None, stop: asyncio.Event, counter: list[int]) -> None:
    body = {
        "text": "w10 w11 w12 w13",
        "sampling_params": {"max_new_tokens": 64, "temperature": 0, "ignore_eos": True},
    }
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    async with httpx.AsyncClient(timeout=REQUEST_TIMEOUT_S, trust_env=False, headers=headers) as http:
        while not stop.is_set():
            try:
                response = await http.post(url + "/generate", json=body)
            except httpx.HTTPError as exc:
                print(f"record_stream: traffic: {type(exc).__name__}: {exc}", flush=True)
                await asyncio.sleep(0.5)
                continue
            if response.status_code == 200:
                counter[0] += 1
            else:
                counter[1] += 1
                if counter[1] == 1:
                    print(
                        f"record_stream: traffic: HTTP {response.status_code}: {response.text[:200]}",
                        flush=True,
                    )
                await asyncio.sleep(0.5)


async def record(args: argparse.Namespace) -> int:
    thresholds = _parse_thresholds(args.thresholds)
    link = RecordingLink(LocalLink(args.socket, args.token_file), args.out)
    await link.connect()
    status: dict[str, Any] = await link.request("GET", "/v1/status")
    await link.request("GET", "/v1/profiles")
    print(f"record_stream: agent {status.get('agent_version')}, engine {status.get('engine_kind')} "
          f"{status.get('engine_state')} at {status.get('engine_url')}; recording {args.seconds:.0f} s into {args.out}",
          flush=True)  # fmt: skip
    counts = {"snapshot": 0, "event": 0}
    stop = asyncio.Event()
    started = time.monotonic()

    async def read() -> None:
        async for item in link.stream(since=None):
            counts[item.kind] += 1
            if item.kind == "event":
                print(
                    f"  {time.monotonic() - started:6.1f} s  event {item.data.get('name')}: {item.data.get('message')}",
                    flush=True,
                )

    async def move() -> list[bool]:
        done = []
        for value in thresholds:
            await asyncio.sleep(args.every)
            ok, message = await apply_threshold(link, value)
            print(
                f"  {time.monotonic() - started:6.1f} s  threshold {value}: {'applied' if ok else 'NOT applied'} ({message})",
                flush=True,
            )
            done.append(ok)
        return done

    served = [0, 0]
    reader = asyncio.create_task(read())
    key = args.engine_key_file.read_text().strip() if args.engine_key_file else None
    url = status.get("engine_url")
    loads = (
        [asyncio.create_task(traffic(str(url), key, stop, served)) for _ in range(args.traffic)]
        if url
        else []
    )
    applied: list[bool] = []
    try:
        mover = asyncio.create_task(move())
        ended = asyncio.Event()  # SIGINT/SIGTERM end the recording early, as cleanly as --seconds
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, ended.set)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(args.seconds):  # not wait_for: it can swallow a cancel on 3.11
                await ended.wait()
        if not mover.done():
            print("record_stream: --seconds ended before every threshold was applied", flush=True)
            mover.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            applied = await mover
    finally:
        stop.set()
        for task in (reader, *loads):
            task.cancel()
        await asyncio.gather(reader, *loads, return_exceptions=True)
        await link.close()
    print(f"record_stream: {counts['snapshot']} snapshots, {counts['event']} events, {served[0]} requests served, "
          f"{sum(applied)} of {len(thresholds)} thresholds applied -> {args.out}", flush=True)  # fmt: skip
    return 0 if counts["snapshot"] and len(applied) == len(thresholds) and all(applied) else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--socket", required=True, type=Path, help="the agent's UNIX socket")
    parser.add_argument("--token-file", type=Path, help="default: <state-dir>/token")
    parser.add_argument("--out", required=True, type=Path, help="the recording (JSON lines, appended)")
    parser.add_argument("--seconds", type=float, required=True, help="how long to record")
    parser.add_argument("--thresholds", help="comma-separated thresholds to apply, e.g. 2,0,8,32")
    parser.add_argument("--every", type=float, default=10.0, help="seconds between threshold changes")
    parser.add_argument(
        "--traffic", type=int, default=0, help="concurrent /generate requests to keep running"
    )
    parser.add_argument(
        "--engine-key-file", type=Path, help="the engine's API key file, if it has one (for --traffic)"
    )
    args = parser.parse_args(argv)
    if args.seconds <= 0 or args.every <= 0 or args.traffic < 0:
        parser.error("--seconds and --every must be positive, --traffic >= 0")
    return asyncio.run(record(args))


if __name__ == "__main__":
    sys.exit(main())
