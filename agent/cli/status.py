"""``agent status``: what a running agent and its engine are doing, asked through the agent's socket."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from agent.wire.actions import CATALOGUE

# Start-up cost: `agent` imports every command module to build its parser, so what only this
# command needs (FastAPI, uvicorn, httpx, the simulator, the daemon) is imported inside the
# function that runs it; `agent --help` and the other commands do not load it.


def add_connection_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--state-dir", type=Path, help="default $XDG_STATE_HOME/k25console")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--socket", type=Path, help="the agent's socket (default <state-dir>/run/agent.sock)")
    where.add_argument("--listen", metavar="HOST:PORT", help="the agent's loopback address, if it uses one")


def connect_or_demo(args: argparse.Namespace) -> tuple[Any, Path, str | None]:
    """The client of the agent the arguments name: the default state directory's when none is given,
    and, when no agent answers there, a running demo's (``./dev demo`` keeps its agent in a temp
    directory). Returns the client, the state directory it reads and, for a demo, the line that says
    so; raises ``AgentUnreachable`` with the default's reason when neither answers."""
    from agent.api.client import AgentUnreachable, call, connect
    from agent.serve.paths import default_state_dir, demo_state_dirs

    state_dir = (args.state_dir or default_state_dir()).expanduser()
    given = args.state_dir is not None or args.socket is not None or args.listen is not None
    try:
        client = connect(state_dir=state_dir, socket_path=args.socket, listen=args.listen)
        if given:
            return client, state_dir, None
        try:
            call(client, "GET", "/v1/version")
        except AgentUnreachable:
            client.close()
            raise
        return client, state_dir, None
    except AgentUnreachable as first:
        if given:
            raise
        for demo in demo_state_dirs():
            try:
                client = connect(state_dir=demo, socket_path=None, listen=None)
                call(client, "GET", "/v1/version")
            except AgentUnreachable:
                continue
            note = (
                f"no agent at {state_dir}; the demo's agent answers at {demo} "
                f"(--state-dir {demo} reaches it from any agent command)"
            )
            return client, demo, note
        raise first


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser("status", help="ask the running agent how it and its engine are")
    add_connection_args(p)
    p.add_argument("--json", action="store_true", help="print the status as JSON")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from agent.api.client import AgentUnreachable, call

    try:
        client, state_dir, note = connect_or_demo(args)
        try:
            status = call(client, "GET", "/v1/status")
        finally:
            client.close()
    except AgentUnreachable as exc:
        if args.json:
            print(json.dumps({"running": False, "detail": str(exc)}))
        else:
            print(f"agent: not running ({exc})", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps({"running": True, "state_dir": str(state_dir), **status}, indent=1))
        return 0
    if note is not None:
        print(note)
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
    print(telemetry_line(status))
    for line in speculation_lines(status.get("speculation")):
        print(line)
    findings = status.get("findings") or []
    print(f"findings: {len(findings) or 'none'}")
    for f in findings:
        print(f"  {f.get('severity')}: {f.get('title')}")
        if f.get("action"):
            print(f"    what to do: {f['action']}")
    print(bench_line(status.get("bench")))
    return 0


def telemetry_line(status: dict[str, Any]) -> str:
    at = status.get("latest_snapshot_at")
    when = "no snapshot yet" if at is None else f"newest snapshot {max(0.0, time.time() - at):.0f} s ago"
    return f"telemetry: every {status['tick_interval_s']:g} s, {when}"


def speculation_lines(spec: dict[str, Any] | None) -> list[str]:
    if spec is None:
        return ["speculation: unknown (no snapshot yet)"]
    if not spec.get("configured"):
        return ["speculation: none (the profile has no drafter)"]
    threshold = spec.get("threshold")
    where = (
        ("no threshold" if not threshold else f"threshold {threshold}")
        if spec.get("threshold_available")
        else "no live threshold"
    )
    pinned = spec.get("pinned_steps")
    # the catalogue's words (agent.wire.actions), as Controls, the dialogs and the audit say it
    who = f"pinned at {pinned}" if isinstance(pinned, int) and pinned >= 0 else CATALOGUE["steps"].words(None)
    if spec.get("on") is None:
        return [f"speculation: unknown now; {where}, steps {who}"]
    if spec["on"]:
        return [f"speculation: on, {spec.get('steps')} steps ({who}), topk {spec.get('topk')}; {where}"]
    lines = [
        f"speculation: off ({(spec.get('off_reason') or 'unknown').replace('_', ' ')}); {where}, steps {who}"
    ]
    if spec.get("off_detail"):
        lines.append(f"  {spec['off_detail']}")
    return lines


def bench_line(run: dict[str, Any] | None) -> str:
    if run is None:
        return "bench: none has run on this agent"
    state = run.get("state")
    head = f"bench: {run.get('bench_id')} ({run.get('mode')}) {state}"
    if state == "finished" and run.get("recommended_threshold") is not None:
        return f"{head}, recommended threshold {run['recommended_threshold']}"
    if state in ("failed", "cancelled") and run.get("error"):
        return f"{head}: {run['error']}"
    return head
