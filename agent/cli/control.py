"""agent control SETTING VALUE: the console's plan, confirm and apply, headless.

SETTING is any operator action of the action catalogue (agent/wire/actions.py): threshold N or
none, steps N or release, topk N, adaptive on or off, profile NAME (load a saved profile),
autopilot on or off, and undo (no value: put back the value from before the last applied change,
as the audit records it; the plan names that change). The same path as Controls: the agent plans the request (live, a restart with
drain, or refused with the reason), this command prints the plan, asks to confirm on a terminal
(--yes for scripts; a restart of a production profile wants its name, --confirm-production NAME),
and the agent applies and audits it; a cancelled plan is audited as cancelled. Nothing changes
without a confirm.
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
from agent.profile.words import value_words
from agent.wire import ActionResult, Plan
from agent.wire.actions import CATALOGUE, ActionSpec, setting_name, setting_words

# Start-up cost: `agent` imports every command module to build its parser, so what only this
# command needs (FastAPI, uvicorn, httpx, the simulator, the daemon) is imported inside the
# function that runs it; `agent --help` and the other commands do not load it.

TERMINAL = {"applied", "failed", "cancelled", "expired", "rejected"}
FOLLOW_TIMEOUT_S = 1800.0
BY_NAME: dict[str, ActionSpec] = {spec.name: spec for spec in CATALOGUE.values()}
"""The CLI's settings: the catalogue's names ("profile" loads a saved profile)."""


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "control",
        help="change a live setting or load a profile through the agent (plan, confirm, audit)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("setting", choices=tuple(BY_NAME), help="what to change")
    p.add_argument(
        "value",
        nargs="?",
        default="",
        help="; ".join(f"{spec.name}: {spec.allowed}" for spec in CATALOGUE.values()),
    )
    add_connection_args(p)
    p.add_argument("--yes", "-y", action="store_true", help="confirm without asking (scripts)")
    p.add_argument("--dry-run", action="store_true", help="print the plan and cancel it; nothing changes")
    p.add_argument("--confirm-production", metavar="NAME", help="a restart on a production profile: its name")
    p.add_argument("--operator", default=None, help="who asks, for the audit (default: this user)")
    p.set_defaults(handler=run)


def request_value(setting: str, text: str) -> int | bool | str | None:
    """The request's value as the catalogue parses it ("release" is the step pin's release);
    ValueError names what is allowed."""
    return BY_NAME[setting].parse(text)


def words(value: object, key: str = "") -> str:
    """A change's value: the catalogue's words for its settings, plain words for any other key."""
    said = setting_words(key, value, long=True)
    return said if said is not None else value_words(value)


def plan_lines(plan: Plan) -> list[str]:
    head = {
        "live": "LIVE: applied without a restart",
        "restart": "RESTART: the engine drains, stops and starts again",
        "noop": "nothing to do",
        "rejected": "REJECTED: nothing was changed",
    }[plan.mode]
    out = [f"plan: {head}"]
    if plan.reason:
        out.append(f"  why: {plan.reason}")
    if plan.mode == "restart":
        drain, down = plan.drain_timeout_s, plan.expected_downtime_s
        out.append(f"  drain: {'until idle' if drain is None else f'{drain:.0f} s at most'}")
        out.append(f"  downtime: {'unknown' if down is None else f'about {down:.0f} s'}")
    for change in plan.changes:
        out.append(
            f"  {setting_name(change.key)}: {words(change.old, change.key)} → {words(change.new, change.key)}"
        )
    return out


def _ask(prompt: str) -> str:
    try:
        return input(prompt)
    except EOFError:
        return ""


def run(args: argparse.Namespace) -> int:
    from agent.api.client import AgentUnreachable, call, connect
    from agent.serve.paths import default_state_dir

    spec = BY_NAME[args.setting]
    try:
        value = request_value(args.setting, args.value)
    except ValueError as exc:
        print(f"agent control: {exc}", file=sys.stderr)
        return 2
    state_dir = (args.state_dir or default_state_dir()).expanduser()
    operator = args.operator or getpass.getuser()
    body = {"request_id": secrets.token_hex(8), "kind": spec.kind, "value": value, "operator": operator}
    try:
        with connect(state_dir=state_dir, socket_path=args.socket, listen=args.listen) as client:
            running = call(client, "GET", "/v1/profile")
            plan = Plan.model_validate(call(client, "POST", "/v1/actions", json=body))
            for line in plan_lines(plan):
                print(line)
            if plan.mode == "rejected":
                return 1
            if plan.mode == "noop":
                return 0
            refused = _refusal(args, plan, running)
            if refused is not None:
                call(client, "POST", f"/v1/actions/{plan.action_id}/cancel", json={"operator": operator})
                print(refused, file=sys.stderr)
                return 0 if args.dry_run else 2
            result = ActionResult.model_validate(
                call(client, "POST", f"/v1/actions/{plan.action_id}/confirm")
            )
            result = _follow(client, call, result)
    except AgentUnreachable as exc:
        print(f"agent control: the agent is not reachable ({exc})", file=sys.stderr)
        return 1
    except Exception as exc:  # an HTTP error: the agent's own words
        detail = getattr(getattr(exc, "response", None), "text", "") or str(exc)
        print(f"agent control: the agent refused the request: {_detail(detail)}", file=sys.stderr)
        return 1
    print(f"{result.status}: {result.message}".rstrip(": "))
    return 0 if result.status == "applied" else 1


def _refusal(args: argparse.Namespace, plan: Plan, running: dict[str, Any]) -> str | None:
    """Why the plan is not confirmed (then it is cancelled), or None to confirm it."""
    if args.dry_run:
        return "dry run: the plan was cancelled; nothing changed"
    identity = running.get("profile", {}).get("identity", {})
    name = identity.get("name")
    if plan.mode == "restart" and identity.get("production") and args.confirm_production != name:
        return f"{name} is a production profile: a restart needs --confirm-production {name}; cancelled"
    if args.yes:
        return None
    if not sys.stdin.isatty():
        return "not a terminal: pass --yes to confirm; the plan was cancelled"
    answer = _ask(f"apply this to {name}? [y/N] ").strip().lower()
    return None if answer in ("y", "yes") else "cancelled; nothing changed"


def _follow(client: Any, call: Any, result: ActionResult) -> ActionResult:
    """A restart answers "applying" at once: follow the action until the agent says it ended."""
    deadline = time.monotonic() + FOLLOW_TIMEOUT_S
    shown = False
    while result.status not in TERMINAL and time.monotonic() < deadline:
        if not shown:
            print(f"applying: {result.message}; waiting for the agent to say it ended")
            shown = True
        time.sleep(1.0)
        result = ActionResult.model_validate(call(client, "GET", f"/v1/actions/{result.action_id}"))
    return result


def _detail(text: str) -> str:
    """The agent's refusal in words: FastAPI's detail, a 422's messages joined with their field."""
    try:
        detail = json.loads(text).get("detail", text)
    except (ValueError, AttributeError):
        return text
    if isinstance(detail, list):
        return "; ".join(
            f"{'.'.join(str(p) for p in item.get('loc', [])[1:])}: {item.get('msg', '')}"
            if isinstance(item, dict)
            else str(item)
            for item in detail
        )
    return detail if isinstance(detail, str) else json.dumps(detail)
