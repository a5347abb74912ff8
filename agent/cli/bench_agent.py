"""``agent bench``'s talk with the agent on this host: a run's start and end announced (so its
consoles draw it, and the agent writes ahead what a compare forces), and ``agent bench cancel``."""

from __future__ import annotations

import argparse
import getpass
import os
import sys
from typing import Any

import httpx

from agent.bench.store import new_bench_id
from agent.profile.words import printable_words


class Announcer:
    """Tells the agent that serves ``url`` on this host when this run starts and ends, so every console
    draws the run's band (``POST /v1/bench/external``), with this process's pid: a compare's start is
    the agent's intent of what it forces, and should this process die without its end, the agent puts
    the operator's values back. Without such an agent it does nothing."""

    def __init__(self, client: Any, bench_id: str, mode: str, url: str) -> None:
        self.client, self.bench_id, self.mode, self.url = client, bench_id, mode, url

    @classmethod
    def for_engine(cls, args: argparse.Namespace, url: str) -> Announcer:
        from agent.api.client import AgentUnreachable, call, connect
        from agent.serve.paths import default_state_dir

        state_dir = (args.state_dir or default_state_dir()).expanduser()
        try:
            client = connect(state_dir=state_dir, socket_path=args.socket, listen=args.listen, timeout_s=3.0)
            served = call(client, "GET", "/v1/status").get("engine_url")
        except (AgentUnreachable, OSError, ValueError, httpx.HTTPError):
            return cls(None, "", args.bench_mode, url)
        if not served or served.rstrip("/") != url.rstrip("/"):
            client.close()
            return cls(None, "", args.bench_mode, url)
        announcer = cls(client, new_bench_id(), args.bench_mode, url)
        print(f"the agent on this host serves {url}: its consoles show this run as {announcer.bench_id}")
        return announcer

    def __call__(self, state: str, error: str | None = None) -> None:
        if self.client is None:
            return
        error = printable_words(error, 2000) if error else None  # the agent takes one line, escaped
        body = {"bench_id": self.bench_id, "state": state, "mode": self.mode, "url": self.url, "error": error,
                "operator": getpass.getuser(), "pid": os.getpid()}  # fmt: skip
        try:
            self.client.post("/v1/bench/external", json=body).raise_for_status()
        except httpx.HTTPError as exc:
            print(f"agent bench: could not tell the agent the run is {state}: {exc}", file=sys.stderr)
        if state != "running":
            self.client.close()


def cancel_run(args: argparse.Namespace) -> int:
    """``agent bench cancel``: the agent's running benchmark, after a confirm on a terminal."""
    from agent.api.client import AgentUnreachable, call, connect
    from agent.serve.paths import default_state_dir

    state_dir = (args.state_dir or default_state_dir()).expanduser()
    try:
        with connect(state_dir=state_dir, socket_path=args.socket, listen=args.listen) as client:
            runs = call(client, "GET", "/v1/bench")["runs"]
            bench_id = args.bench_id or next(
                (r["bench_id"] for r in runs if r.get("state") == "running"), None
            )
            if bench_id is None:
                print("agent bench cancel: no benchmark is running; nothing to cancel")
                return 0
            run = next((r for r in runs if r.get("bench_id") == bench_id), None)
            if run is None:
                print(f"agent bench cancel: no benchmark {bench_id} on this agent", file=sys.stderr)
                return 1
            print(f"benchmark {bench_id} ({run.get('mode')}) is {run.get('state')} on {run.get('profile')}")
            if run.get("state") == "running" and not args.yes:
                if not sys.stdin.isatty():
                    print("not a terminal: pass --yes to cancel it", file=sys.stderr)
                    return 2
                try:
                    answer = input("cancel it? its requests in flight are cut [y/N] ")
                except EOFError:
                    answer = ""
                if answer.strip().lower() not in ("y", "yes"):
                    print("not cancelled; it keeps running")
                    return 0
            operator = args.operator or getpass.getuser()
            answer = call(client, "POST", f"/v1/bench/{bench_id}/cancel", json={"operator": operator})
    except AgentUnreachable as exc:
        print(f"agent bench cancel: the agent is not reachable ({exc})", file=sys.stderr)
        return 1
    except httpx.HTTPError as exc:
        print(f"agent bench cancel: the agent refused: {exc}", file=sys.stderr)
        return 1
    print(answer.get("message") or ("cancelled" if answer.get("cancelled") else "nothing to cancel"))
    return 0 if answer.get("cancelled") or run.get("state") != "running" else 1
