"""``agent audit``: the audit log of a running agent, read through its socket, newest last.

What changed, who asked, from where and what came of it, one line each, in an operator's words: a
change is written ahead (an intent, then its outcome), and an intent whose outcome is there is not
shown again; one without (in flight, or the agent was killed between the two) says so. Damaged
lines the agent skipped are counted. With ``--json`` every record as the agent keeps them. Filters: ``--since`` (a time, or how long ago: "30m",
"2h", "1d") and ``--kind`` (an action's kind: threshold, steps, bench_cancel, ...).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from agent.cli.status import add_connection_args
from agent.profile.words import count_words, value_words

AGO = re.compile(r"^(\d+(?:\.\d+)?)\s*(s|m|h|d)$")
UNIT_S = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
MOST_LINES = 10_000
"""The agent answers at most this many lines at once (its /v1/audit limit)."""


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "audit", help="show the agent's audit log: what changed, who asked, what came of it"
    )
    add_connection_args(p)
    p.add_argument(
        "--since", help='only lines from this time on: "2026-12-03T14:00", or ago: "30m", "2h", "1d"'
    )
    p.add_argument("--kind", help="only actions of this kind (threshold, steps, topk, bench_cancel, ...)")
    p.add_argument("--limit", type=int, default=200, help="at most this many lines, newest (default 200)")
    p.add_argument("--json", action="store_true", help="print the lines as JSON, one per line")
    p.set_defaults(handler=run)


def since_epoch(text: str, now: float) -> float:
    """``--since``: an ISO time (UTC unless it says otherwise) or a span before ``now``."""
    ago = AGO.match(text.strip())
    if ago:
        return now - float(ago.group(1)) * UNIT_S[ago.group(2)]
    try:
        when = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(
            f'--since: "{text}" is neither a time (2026-12-03T14:00) nor a span ago (30m, 2h, 1d)'
        ) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.timestamp()


def action_key(line: Mapping[str, Any]) -> str | None:
    """What pairs an intent with its outcome: the operator action's id, or the operation's."""
    action = line.get("action")
    if not isinstance(action, Mapping):
        return None
    key = action.get("action_id") or action.get("op_id")
    return str(key) if key else None


def shown(lines: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Every record but the intents whose outcome is among ``lines``."""
    lines = list(lines)
    settled = {action_key(x) for x in lines if x.get("phase") == "outcome"} - {None}
    return [x for x in lines if not (x.get("phase") == "intent" and action_key(x) in settled)]


def kind_of(line: Mapping[str, Any]) -> str:
    action = line.get("action")
    return str(action.get("kind", "")) if isinstance(action, Mapping) else ""


def selected(
    lines: Iterable[Mapping[str, Any]], since: float | None, kind: str | None
) -> list[Mapping[str, Any]]:
    out = []
    for line in lines:
        at = line.get("time")
        if since is not None and not (isinstance(at, int | float) and at >= since):
            continue
        if kind is not None and kind_of(line) != kind:
            continue
        out.append(line)
    return out


def change_words(before: Any, after: Any) -> str:
    """ "threshold 143 → 40" for each key that a line's before and after name."""
    if isinstance(before, Mapping) and isinstance(after, Mapping):
        keys = list(dict.fromkeys([*before, *after]))
        return "; ".join(f"{k} {value_words(before.get(k))} → {value_words(after.get(k))}" for k in keys)
    if before is None and after is None:
        return ""
    return f"{value_words(before)} → {value_words(after)}"


def line_words(line: Mapping[str, Any]) -> str:
    at = line.get("time")
    when = (
        datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
        if isinstance(at, int | float)
        else "unknown time"
    )
    who = line.get("operator") or "unknown operator"
    result = line.get("result")
    outcome: Mapping[str, Any] = result if isinstance(result, Mapping) else {}
    status = outcome.get("status") or "no outcome"
    message = outcome.get("message")
    if line.get("phase") == "intent":
        status, message = "intent", "no outcome yet (in flight, or the agent stopped before it)"
    change = change_words(line.get("before"), line.get("after"))
    parts = [when, str(who), kind_of(line) or "unknown action", change, str(status)]
    text = "  ".join(p for p in parts if p)
    return f"{text}: {message}" if message else text


def run(args: argparse.Namespace) -> int:
    from agent.api.client import AgentUnreachable, call, connect
    from agent.serve.paths import default_state_dir

    try:
        since = None if args.since is None else since_epoch(args.since, time.time())
    except ValueError as exc:
        print(f"agent audit: {exc}", file=sys.stderr)
        return 2
    if not 1 <= args.limit <= MOST_LINES:
        print(f"agent audit: --limit must be between 1 and {MOST_LINES}, not {args.limit}", file=sys.stderr)
        return 2
    state_dir = (args.state_dir or default_state_dir()).expanduser()
    # The filters cut after the read: ask for the most lines when a filter may drop some.
    ask = MOST_LINES if since is not None or args.kind else args.limit
    try:
        with connect(state_dir=state_dir, socket_path=args.socket, listen=args.listen) as client:
            params: dict[str, Any] = {"limit": ask}
            if since is not None:
                params["since"] = max(0.0, since)
            answer = call(client, "GET", "/v1/audit", params=params)
    except AgentUnreachable as exc:
        print(f"agent: not running ({exc})", file=sys.stderr)
        return 1
    records = selected(answer.get("lines") or [], since, args.kind)
    if args.json:
        for line in records[-args.limit :]:
            print(json.dumps(line, sort_keys=True))
        return 0
    lines = shown(records)[-args.limit :]
    damaged = answer.get("corrupt") or []
    if damaged:
        print(f"{count_words(len(damaged), 'damaged line')} in the audit log skipped (torn or not JSON)",
              file=sys.stderr)  # fmt: skip
    if not lines:
        print("no audit lines" + (" match" if since is not None or args.kind else " yet"))
        return 0
    for line in lines:
        print(line_words(line))
    return 0
