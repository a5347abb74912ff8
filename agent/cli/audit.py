"""``agent audit``: the audit log of a running agent, read through its socket, newest last.

What changed, who asked, from where and what came of it, one line each, in an operator's words: a
change is written ahead (an intent, then its outcome), and an intent whose outcome is there is not
shown again; one without (in flight, or the agent was killed between the two) says so. Damaged
lines the agent skipped are counted. With ``--json`` every record as the agent keeps them.
Filters: ``--since`` (a time, or how long ago: "30m", "2h", "1d"; the agent applies it) and
``--kind`` (an operator action of the catalogue, or one of the agent's own: ``KINDS``; applied here).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from agent.cli.status import add_connection_args, connect_or_demo
from agent.profile.words import change_words, count_words, printable_words
from agent.wire.actions import ACTION_KINDS, audit_kind_words, said
from agent.wire.audit import AGENT_KINDS, AuditPage, AuditRecord, change_or_subject, one_line_per_change

AGO = re.compile(r"^(\d+(?:\.\d+)?)\s*(s|m|h|d)$")
UNIT_S = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
MOST_LINES = 10_000
"""The agent answers at most this many lines at once (its /v1/audit limit)."""
KINDS = (*ACTION_KINDS, *AGENT_KINDS)
"""What ``--kind`` takes: the catalogue's operator actions, then the agent's own changes."""
SUMMARY = (
    "What changed on this host, who asked, from where and what came of it: one line per change "
    "(an operator's action, a benchmark, a profile save, the engine's start and stop, the autopilot's "
    "moves), applied or rejected, oldest first. Read from the running agent's audit log."
)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "audit",
        help="show the agent's audit log: what changed, who asked, what came of it",
        description=SUMMARY,
    )
    add_connection_args(p)
    p.add_argument(
        "--since", help='only lines from this time on: "2026-12-03T14:00", or ago: "30m", "2h", "1d"'
    )
    p.add_argument(
        "--kind",
        metavar="KIND",
        help=f"only changes of this kind: the operator's {', '.join(ACTION_KINDS)}; the agent's own "
        f"{', '.join(AGENT_KINDS)}",
    )
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


def of_kind(records: Iterable[AuditRecord], kind: str | None) -> list[AuditRecord]:
    return [r for r in records if kind is None or r.kind == kind]


def line_words(record: AuditRecord) -> str:
    """One line of the terminal's: every text the log holds is escaped (``printable_words``), so an
    ``operator`` with a line break cannot forge a line, nor an escape sequence reach the terminal."""
    when = (
        "unknown time"
        if record.time is None
        else datetime.fromtimestamp(record.time, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    )
    parts = [
        when,
        record.operator or "unknown operator",
        audit_kind_words(record.kind) if record.kind else "unknown action",
        change_or_subject(record, change_words(record.before, record.after, said)),
        record.status,
    ]
    text = "  ".join(printable_words(p) for p in parts if p)
    return f"{text}: {printable_words(record.message)}" if record.message else text


def run(args: argparse.Namespace) -> int:
    from agent.api.client import AgentUnreachable, call

    try:
        since = None if args.since is None else since_epoch(args.since, time.time())
    except ValueError as exc:
        print(f"agent audit: {exc}", file=sys.stderr)
        return 2
    if args.kind is not None and args.kind not in KINDS:
        print(f"agent audit: --kind {printable_words(args.kind, 64)} is no audit kind; it takes one of: "
              f"{', '.join(KINDS)}", file=sys.stderr)  # fmt: skip
        return 2
    if not 1 <= args.limit <= MOST_LINES:
        print(f"agent audit: --limit must be between 1 and {MOST_LINES}, not {args.limit}", file=sys.stderr)
        return 2
    # A change is two records (intent, outcome); --kind cuts after the read, so it asks for the most.
    ask = MOST_LINES if args.kind else min(MOST_LINES, 2 * args.limit)
    try:
        client, _, note = connect_or_demo(args)
        if note is not None:
            print(note, file=sys.stderr)
        params: dict[str, Any] = {"limit": ask}
        if since is not None:
            params["since"] = max(0.0, since)
        try:
            answer = call(client, "GET", "/v1/audit", params=params)
        finally:
            client.close()
    except AgentUnreachable as exc:
        print(f"agent: not running ({exc})", file=sys.stderr)
        return 1
    page = AuditPage.model_validate(answer)
    records = of_kind(page.lines, args.kind)
    if args.json:
        for record in records[-args.limit :]:
            print(json.dumps(record.model_dump(mode="json", exclude_unset=True), sort_keys=True))
        return 0
    lines = one_line_per_change(records)[-args.limit :]
    if page.corrupt:
        print(f"{count_words(len(page.corrupt), 'damaged line')} in the audit log skipped (torn or not JSON)",
              file=sys.stderr)  # fmt: skip
    if not lines:
        print("no audit lines" + (" match" if since is not None or args.kind else " yet"))
        return 0
    for line in lines:
        print(line_words(line))
    return 0
