"""``agent control threshold N | steps N | steps release``: the console's plan → confirm → apply, headless.

The same path as Controls: the agent plans the request (live, a restart with drain, or refused with
the reason), this command prints the plan, asks to confirm on a terminal (``--yes`` for scripts;
a restart of a production profile wants its name, ``--confirm-production NAME``), and the agent
applies and audits it; a cancelled plan is audited as cancelled. Nothing changes without a confirm.
"""

from __future__ import annotations

import argparse
import getpass
import json
import secrets
import sys
import time
from typing import Any

from agent.cli.status import add_connection_args

# Start-up cost: `agent` imports every command module to build its parser, so what only this
# command needs (FastAPI, uvicorn, httpx, the simulator, the daemon) is imported inside the
# function that runs it; `agent --help` and the other commands do not load it.

RELEASE = "release"
TERMINAL = {"applied", "failed", "cancelled", "expired", "rejected"}
FOLLOW_TIMEOUT_S = 1800.0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "control",
        help="change the live speculation threshold or step count through the agent (plan, confirm, audit)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("setting", choices=("threshold", "steps"), help="what to change")
    p.add_argument(
        "value",
        help="threshold: running requests at or above which the server stops drafting (0 = none); "
        f"steps: a step count built at start-up to pin, or '{RELEASE}' to give the choice back to SGLang's policy",
    )
    add_connection_args(p)
    p.add_argument("--yes", "-y", action="store_true", help="confirm without asking (scripts)")
    p.add_argument("--dry-run", action="store_true", help="print the plan and cancel it; nothing changes")
    p.add_argument("--confirm-production", metavar="NAME", help="a restart on a production profile: its name")
    p.add_argument("--operator", default=None, help="who asks, for the audit (default: this user)")
    p.set_defaults(handler=run)


def request_value(setting: str, text: str) -> int:
    """The request's value; ValueError names what is allowed."""
    if setting == "steps" and text == RELEASE:
        return -1
    try:
        value = int(text)
    except ValueError:
        allowed = (
            f"a whole number or '{RELEASE}'" if setting == "steps" else "a whole number (0 = no threshold)"
        )
        raise ValueError(f"{setting}: {text!r} is not {allowed}") from None
    if setting == "steps" and value < 1:
        raise ValueError(f"steps: {value}: pin a step count of 1 or more, or '{RELEASE}' the pin")
    if setting == "threshold" and value < 0:
        raise ValueError(f"threshold: {value}: must be 0 (none) or more")
    return value


def words(value: object, key: str = "") -> str:
    if key.endswith("pinned_steps") and value is None:
        return "none (SGLang's policy chooses)"
    if key.endswith("threshold") and value in (None, 0):
        return "none (speculate at every batch size)"
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, list):
        return ", ".join(map(str, value)) or "none"
    return str(value)


def plan_lines(plan: dict[str, Any]) -> list[str]:
    mode = plan["mode"]
    head = {
        "live": "LIVE: applied without a restart",
        "restart": "RESTART: the engine drains, stops and starts again",
        "noop": "nothing to do",
        "rejected": "REJECTED: nothing was changed",
    }[mode]
    out = [f"plan: {head}"]
    if plan.get("reason"):
        out.append(f"  why: {plan['reason']}")
    if mode == "restart":
        drain = plan.get("drain_timeout_s")
        down = plan.get("expected_downtime_s")
        out.append(f"  drain: {'until idle' if drain is None else f'{drain:.0f} s at most'}")
        out.append(f"  downtime: {'unknown' if down is None else f'about {down:.0f} s'}")
    for change in plan.get("changes", []):
        key = change["key"]
        out.append(f"  {key}: {words(change.get('old'), key)} → {words(change.get('new'), key)}")
    return out


def _ask(prompt: str) -> str:
    try:
        return input(prompt)
    except EOFError:
        return ""


def run(args: argparse.Namespace) -> int:
    from agent.api.client import AgentUnreachable, call, connect
    from agent.serve.paths import default_state_dir

    try:
        value = request_value(args.setting, args.value)
    except ValueError as exc:
        print(f"agent control: {exc}", file=sys.stderr)
        return 2
    state_dir = (args.state_dir or default_state_dir()).expanduser()
    operator = args.operator or getpass.getuser()
    body = {"request_id": secrets.token_hex(8), "kind": args.setting, "value": value, "operator": operator}
    try:
        with connect(state_dir=state_dir, socket_path=args.socket, listen=args.listen) as client:
            running = call(client, "GET", "/v1/profile")
            plan = call(client, "POST", "/v1/actions", json=body)
            for line in plan_lines(plan):
                print(line)
            if plan["mode"] == "rejected":
                return 1
            if plan["mode"] == "noop":
                return 0
            action_id = plan["action_id"]
            refused = _refusal(args, plan, running)
            if refused is not None:
                call(client, "POST", f"/v1/actions/{action_id}/cancel", json={"operator": operator})
                print(refused, file=sys.stderr)
                return 0 if args.dry_run else 2
            result = call(client, "POST", f"/v1/actions/{action_id}/confirm")
            result = _follow(client, call, result)
    except AgentUnreachable as exc:
        print(f"agent control: the agent is not reachable ({exc})", file=sys.stderr)
        return 1
    except Exception as exc:  # an HTTP error: the agent's own words
        detail = getattr(getattr(exc, "response", None), "text", "") or str(exc)
        print(f"agent control: the agent refused the request: {_detail(detail)}", file=sys.stderr)
        return 1
    print(f"{result['status']}: {result.get('message', '')}".rstrip(": "))
    return 0 if result["status"] == "applied" else 1


def _refusal(args: argparse.Namespace, plan: dict[str, Any], running: dict[str, Any]) -> str | None:
    """Why the plan is not confirmed (then it is cancelled), or None to confirm it."""
    if args.dry_run:
        return "dry run: the plan was cancelled; nothing changed"
    identity = running.get("profile", {}).get("identity", {})
    name = identity.get("name")
    if plan["mode"] == "restart" and identity.get("production") and args.confirm_production != name:
        return f"{name} is a production profile: a restart needs --confirm-production {name}; cancelled"
    if args.yes:
        return None
    if not sys.stdin.isatty():
        return "not a terminal: pass --yes to confirm; the plan was cancelled"
    answer = _ask(f"apply this to {name}? [y/N] ").strip().lower()
    return None if answer in ("y", "yes") else "cancelled; nothing changed"


def _follow(client: Any, call: Any, result: dict[str, Any]) -> dict[str, Any]:
    """A restart answers "applying" at once: follow the action until the agent says it ended."""
    deadline = time.monotonic() + FOLLOW_TIMEOUT_S
    shown = False
    while result["status"] not in TERMINAL and time.monotonic() < deadline:
        if not shown:
            print(f"applying: {result.get('message', '')}; waiting for the agent to say it ended")
            shown = True
        time.sleep(1.0)
        result = call(client, "GET", f"/v1/actions/{result['action_id']}")
    return result


def _detail(text: str) -> str:
    try:
        detail = json.loads(text).get("detail", text)
    except (ValueError, AttributeError):
        return text
    return detail if isinstance(detail, str) else json.dumps(detail)
