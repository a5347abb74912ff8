"""The console's own account of every fleet change: one line per step, kept after the console closes.

Each host's audit holds its part of a change (its ``change_id`` on both lines), but only a host the
change reached: a host not connected, or whose link went down before its turn, has no line of it,
and the console's panel was the only account of the whole change, gone when the console closed.
So every step of a change (its plans asked, its cancel, its end) appends the whole account here:
what was asked, by whom, and for every host it was meant for, reached or not, its plan or why
there is none, and its outcome. ``k25console --fleet-changes`` shows the last ones again.

The file is ``$XDG_STATE_HOME/k25console/fleet-changes.jsonl`` (``~/.local/state/...``), 0600,
append-only, one JSON line per write, fsynced; a torn last line is skipped when read.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from agent.profile.words import printable_words
from console.fleet.change import FleetChange

LINE_MAX = 256 * 1024
"""The most one account line may hold (a change to many hosts with long reasons stays well below)."""
TEXT_MAX = 500
"""The most of one host's reason or outcome an account keeps."""


def default_changes_file() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "k25console" / "fleet-changes.jsonl"


def _cut(text: str | None) -> str | None:
    return None if text is None else text[:TEXT_MAX]


def account_of(change: FleetChange, step: str) -> dict[str, Any]:
    """The whole change as it stands at ``step`` ("planned", "cancelled", "ended")."""
    plans = {hp.host: hp for hp in change.plans}
    outcomes = {o.host: o for o in change.outcomes}
    hosts = []
    for host in change.hosts:
        hp, done = plans.get(host), outcomes.get(host)
        plan = hp.plan if hp is not None else None
        hosts.append(
            {
                "host": host,
                "plan": None
                if plan is None
                else {"action_id": plan.action_id, "mode": plan.mode, "reason": _cut(plan.reason)},
                "error": _cut(hp.error) if hp is not None else "no plan asked",
                "outcome": done.outcome if done is not None else None,
                "message": _cut(done.message) if done is not None else None,
            }
        )
    return {
        "time": time.time(),
        "change_id": change.change_id,
        "step": step,
        "operator": change.operator,
        "kind": change.kind,
        "value": change.value,
        "hosts": hosts,
    }


class ChangesFile:
    def __init__(self, path: Path) -> None:
        self.path = path

    def write(self, account: dict[str, Any]) -> str | None:
        """Append one account; None when kept, else why it could not be (the caller says so)."""
        data = (json.dumps(account, sort_keys=True) + "\n").encode("utf-8")
        if len(data) > LINE_MAX:
            return f"the account of {account['change_id']} is over {LINE_MAX} bytes; not kept"
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            try:
                os.write(fd, data)
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as exc:
            return f"{self.path} cannot be written ({exc.strerror or exc})"
        return None

    def changes(self, limit: int = 20) -> list[dict[str, Any]]:
        """The newest ``limit`` changes, oldest first, each as its last step left it."""
        try:
            raw = self.path.read_bytes()
        except OSError:
            return []
        latest: dict[str, dict[str, Any]] = {}
        for line in raw.splitlines():
            try:
                account = json.loads(line)
            except ValueError:
                continue  # a line torn by a crash mid-write
            if isinstance(account, dict) and isinstance(account.get("change_id"), str):
                latest.pop(account["change_id"], None)
                latest[account["change_id"]] = account
        return list(latest.values())[-limit:]


def account_words(account: dict[str, Any]) -> list[str]:
    """An account in lines for a terminal: the change, then one line per host it was meant for."""
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(float(account.get("time") or 0)))
    hosts = account.get("hosts") or []
    lines = [
        f"{account.get('change_id')}  {when}  {account.get('operator') or 'unnamed operator'}: "
        f"{account.get('kind')} {account.get('value')} on {len(hosts)} host(s), {account.get('step')}"
    ]
    for h in hosts:
        plan = h.get("plan")
        if h.get("outcome"):
            said = f"{h['outcome']}: {h.get('message') or ''}"
        elif plan is not None:
            said = f"planned ({plan.get('mode')}): {plan.get('reason') or ''}, not applied"
        else:
            said = f"not reached: {h.get('error') or 'no plan'}"
        lines.append(f"  {h.get('host')}: {said}")
    return [printable_words(line, 2000) for line in lines]
