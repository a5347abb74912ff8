"""What the Fleet screen shows, held apart from Textual: the hosts' models, the operator's picks and
order, the router's view and the last change asked of the fleet."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from agent.wire import Finding
from agent.wire.router import RouterView
from console.fleet.change import FleetChange
from console.fleet.model import (
    SORT_KEYS,
    FleetRow,
    FleetTotal,
    SortKey,
    row_of,
    sort_rows,
    total_of,
)
from console.fleet.routing import RouterRow, SplitEntry, disagreements, router_rows, split
from console.model import ConsoleModel


@dataclass
class FleetState:
    models: Mapping[str, ConsoleModel]
    """Host name → its model, in the hosts' own order."""
    engine_urls: dict[str, str] = field(default_factory=dict)
    """Host name → its engine's URL as the router names it (the agent's, or the hosts file's)."""
    sort: SortKey = "name"
    descending: bool = False
    picked: set[str] = field(default_factory=set)
    router: RouterView | None = None
    router_via: str | None = None
    """The host whose agent read the router."""
    router_received_at: float | None = None
    """When the router's view arrived here, by ``clock``: its age on screen."""
    clock: Callable[[], float] = time.monotonic
    change: FleetChange | None = None
    change_note: str = ""
    """Where the change is now ("planning…", "applying gpu-b (2 of 3)…"), or empty when it ended."""
    version: int = 0
    """Grows when anything here changes (the hosts' own models count their own)."""

    def rows(self) -> list[FleetRow]:
        return sort_rows([row_of(n, m) for n, m in self.models.items()], self.sort, self.descending)

    def total(self, rows: list[FleetRow]) -> FleetTotal:
        return total_of(rows)

    def take_router(self, view: RouterView, via: str) -> None:
        self.router, self.router_via, self.router_received_at = view, via, self.clock()
        self.version += 1

    def router_age_s(self) -> float | None:
        """Seconds since the router's view arrived (the agent reads the router when asked)."""
        if self.router_received_at is None:
            return None
        return max(0.0, self.clock() - self.router_received_at)

    def router_rows(self) -> list[RouterRow]:
        if self.router is None:
            return []
        hosts = [row_of(n, m) for n, m in self.models.items()]
        return router_rows(self.router, self.engine_urls, hosts)

    def router_findings(self) -> list[Finding]:
        """Where the router's view and the agents' disagree (none from a view older than routing.FRESH_S)."""
        hosts = [row_of(n, m) for n, m in self.models.items()]
        rows = router_rows(self.router, self.engine_urls, hosts) if self.router is not None else []
        return disagreements(self.router, rows, hosts, self.router_age_s(), self.engine_urls)

    def router_split(self) -> list[SplitEntry]:
        return split(self.router_rows())

    def cycle_sort(self) -> None:
        """host → tok/s ↓ → running ↓ → queued ↓ → KV use ↓ → worst finding ↓ → host again."""
        index = (SORT_KEYS.index(self.sort) + 1) % len(SORT_KEYS)
        self.sort = SORT_KEYS[index]
        self.descending = self.sort != "name"
        self.version += 1

    def reverse(self) -> None:
        self.descending = not self.descending
        self.version += 1

    def toggle_pick(self, host: str) -> None:
        self.picked.symmetric_difference_update({host})
        self.version += 1

    def pick_all(self) -> None:
        """All hosts, or none when all are picked already."""
        self.picked = set() if self.picked >= set(self.models) else set(self.models)
        self.version += 1

    def targets(self, cursor: str | None) -> list[str]:
        """The hosts a change goes to, in the order shown: the picked ones, else the one under the cursor."""
        order = [r.name for r in self.rows()]
        chosen = self.picked or ({cursor} if cursor else set())
        return [name for name in order if name in chosen]

    def data_version(self) -> int:
        return self.version + sum(m.version for m in self.models.values())
