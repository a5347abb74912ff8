"""``agent sim``: serve the simulated SGLang 0.5.23 engine for a profile.

The API keys come from files (``--api-key-file``/``--admin-api-key-file``, else the profile's
``server.api_key_file``/``server.admin_api_key_file``), never from the command line, where other
users could read them.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys

from agent.profile.store import ProfileError, load_profile
from agent.sglang.launch import LaunchError, read_key_file


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "sim",
        help="serve a simulated SGLang 0.5.23 engine (no GPU) for a profile",
        description="Serve SGLang 0.5.23's HTTP surface from a calibrated model of the profile's deployment.",
    )
    parser.add_argument("--profile", required=True, help="profile TOML file")
    parser.add_argument("--port", type=int, required=True, help="TCP port (0 = any free port)")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument(
        "--speedup", type=float, default=1.0, help="modelled seconds per real second (default 1)"
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the acceptance and length draws")
    parser.add_argument(
        "--api-key-file", help="file holding the API key (default: profile server.api_key_file)"
    )
    parser.add_argument("--admin-api-key-file", help="file holding the admin API key")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from agent.sim.server import run_sim

    if not 0 <= args.port <= 65535:
        print(f"agent sim: --port must be between 0 and 65535, got {args.port}", file=sys.stderr)
        return 2
    if not args.speedup > 0:
        print(f"agent sim: --speedup must be positive, got {args.speedup}", file=sys.stderr)
        return 2
    try:
        profile = load_profile(args.profile)
    except ProfileError as exc:
        print(f"agent sim: {exc}", file=sys.stderr)
        return 2
    try:
        key_file = args.api_key_file or profile.server.api_key_file
        admin_file = args.admin_api_key_file or profile.server.admin_api_key_file
        api_key = read_key_file(key_file) if key_file else None
        admin_key = read_key_file(admin_file) if admin_file else None
    except LaunchError as exc:
        print(f"agent sim: {exc}", file=sys.stderr)
        return 2

    async def serve() -> int:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        try:
            async with run_sim(
                profile,
                host=args.host,
                port=args.port,
                speedup=args.speedup,
                seed=args.seed,
                api_key=api_key,
                admin_api_key=admin_key,
            ) as sim:
                cfg = sim.server.config
                print(
                    f"agent sim: {profile.identity.name} on {sim.url} (speedup {args.speedup:g}, "
                    f"speculation {cfg.mode}, KV pool {cfg.pool_tokens} tokens, "
                    f"max running {cfg.max_running_requests})",
                    flush=True,
                )
                for note in cfg.notes:
                    print(f"agent sim: {note}", flush=True)
                await stop.wait()
        except OSError as exc:
            print(
                f"agent sim: cannot listen on {args.host}:{args.port}: {exc.strerror or exc}", file=sys.stderr
            )
            return 1
        return 0

    return asyncio.run(serve())
