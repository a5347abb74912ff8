"""Health findings with the time each began, and the worst severity for the header.

The agent stamps each finding with the time since which it has held (``Finding.since``); for an
agent that does not, a finding that is still there on the next snapshot is the same finding and its
"since" is the time of the first snapshot in the unbroken run that carried it (the agent's clock too).
A finding that clears and comes back starts a new run.
"""

from __future__ import annotations

from dataclasses import dataclass

from agent.wire import Finding, Snapshot

SEVERITY_ORDER = {"critical": 0, "warning": 1, "info": 2}


@dataclass(frozen=True)
class HealthItem:
    finding: Finding
    since: float


class HealthTracker:
    def __init__(self) -> None:
        self._since: dict[str, float] = {}
        self.items: tuple[HealthItem, ...] = ()

    def update(self, snap: Snapshot) -> None:
        codes = {f.code for f in snap.findings}
        self._since = {code: t for code, t in self._since.items() if code in codes}
        for finding in snap.findings:
            self._since.setdefault(finding.code, snap.time)
        ordered = sorted(snap.findings, key=lambda f: SEVERITY_ORDER.get(f.severity, 9))
        self.items = tuple(
            HealthItem(f, f.since if f.since is not None else self._since[f.code]) for f in ordered
        )

    @property
    def worst(self) -> str | None:
        return self.items[0].finding.severity if self.items else None
