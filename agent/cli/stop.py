"""``agent stop``: ask the running agent to exit; the engine keeps running unless --engine-too."""

from __future__ import annotations

import argparse
import getpass
import sys
import time

from agent.cli.status import add_connection_args

# Start-up cost: `agent` imports every command module to build its parser, so what only this
# command needs (FastAPI, uvicorn, httpx, the simulator, the daemon) is imported inside the
# function that runs it; `agent --help` and the other commands do not load it.


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "stop",
        help="stop the running agent (the engine keeps serving unless --engine-too)",
        description="Stop the agent. An agent restart does not restart SGLang: the engine keeps serving "
        "and the next `agent serve` reattaches to it. --engine-too drains and stops the engine first.",
    )
    add_connection_args(p)
    p.add_argument("--engine-too", action="store_true", help="drain and stop the engine as well")
    p.add_argument("--operator", default=None, help="who asks, for the audit (default: this user)")
    p.add_argument(
        "--wait", type=float, default=120.0, metavar="S", help="how long to wait for the agent to exit"
    )
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import httpx

    from agent.api.client import AgentUnreachable, call, connect
    from agent.serve.paths import default_state_dir

    state_dir = (args.state_dir or default_state_dir()).expanduser()
    try:
        with connect(state_dir=state_dir, socket_path=args.socket, listen=args.listen) as client:
            status = call(client, "GET", "/v1/status")
            body = {"engine_too": args.engine_too, "operator": args.operator or getpass.getuser()}
            call(client, "POST", "/v1/agent/stop", json=body)
            deadline = time.monotonic() + args.wait
            while time.monotonic() < deadline:  # no event to wait on across processes: poll the socket
                try:
                    client.get("/v1/version", timeout=1.0)
                except httpx.TransportError:
                    break
                time.sleep(0.2)
            else:
                print(f"agent: still running after {args.wait:.0f} s", file=sys.stderr)
                return 1
    except AgentUnreachable as exc:
        print(f"agent: not running ({exc})", file=sys.stderr)
        return 1
    pid = status.get("engine_pid")
    engine = "stopped" if args.engine_too else f"still running (pid {pid})" if pid else "not running"
    print(f"agent (pid {status['agent_pid']}) stopped; engine {engine}")
    return 0
