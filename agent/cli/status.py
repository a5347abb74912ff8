"""``agent status``: what a running agent and its engine are doing, asked through the agent's socket."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def add_connection_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--state-dir", type=Path, help="default $XDG_STATE_HOME/k25console")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--socket", type=Path, help="the agent's socket (default <state-dir>/run/agent.sock)")
    where.add_argument("--listen", metavar="HOST:PORT", help="the agent's loopback address, if it uses one")


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser("status", help="ask the running agent how it and its engine are")
    add_connection_args(p)
    p.add_argument("--json", action="store_true", help="print the status as JSON")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from agent.api.client import AgentUnreachable, call, connect
    from agent.serve.paths import default_state_dir

    state_dir = (args.state_dir or default_state_dir()).expanduser()
    try:
        with connect(state_dir=state_dir, socket_path=args.socket, listen=args.listen) as client:
            status = call(client, "GET", "/v1/status")
    except AgentUnreachable as exc:
        if args.json:
            print(json.dumps({"running": False, "detail": str(exc)}))
        else:
            print(f"agent: not running ({exc})", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps({"running": True, **status}, indent=1))
        return 0
    print(f"agent {status['agent_version']} (pid {status['agent_pid']}), profile {status['profile']}")
    pid = status.get("engine_pid")
    print(
        f"engine: {status['engine_kind']} {status['engine_state']}"
        + (f", pid {pid}, {status['engine_url']}" if pid else "")
        + f"; restarts {status['engine_restarts']}, consecutive failures {status['engine_failures']}"
    )
    error = status.get("engine_last_error")
    if error:
        print(f"last start failed: {error['summary']}")
        if error.get("frame"):
            print(f"  raised at {error['frame']}")
        for line in error.get("lines") or []:
            print(f"  | {line}")
        if error.get("log"):
            print(f"  (engine log: {error['log']})")
    print(f"telemetry: every {status['tick_interval_s']} s, last seq {status['last_seq']}")
    return 0
