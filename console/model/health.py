"""Health findings as the agent judged them, most severe first, and the worst severity for the header.

The agent stamps every finding with the time since which it has held without a break
(``Finding.since``, from ``agent.telemetry.health``); the console shows that time and infers none.
"""

from __future__ import annotations

from dataclasses import dataclass

from agent.wire import Finding, Snapshot

SEVERITY_ORDER = {"critical": 0, "warning": 1, "info": 2}


@dataclass(frozen=True)
class HealthItem:
    finding: Finding

    @property
    def since(self) -> float | None:
        """Agent time since which the finding holds; None from an agent that did not say."""
        return self.finding.since


class HealthTracker:
    def __init__(self) -> None:
        self.items: tuple[HealthItem, ...] = ()

    def update(self, snap: Snapshot) -> None:
        ordered = sorted(snap.findings, key=lambda f: SEVERITY_ORDER.get(f.severity, 9))
        self.items = tuple(HealthItem(f) for f in ordered)

    @property
    def offered(self) -> Finding | None:
        """The most severe finding that offers an action the operator can take from the console."""
        return next((i.finding for i in self.items if i.finding.offer is not None), None)

    @property
    def worst(self) -> str | None:
        return self.items[0].finding.severity if self.items else None
