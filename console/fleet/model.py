"""The Fleet screen's numbers: one row per host, the fleet's total, the order (the router's view
beside them is ``console.fleet.routing``).

Plain Python over each host's ``ConsoleModel`` (nvitop's split: the model computes, the screen
draws). A host whose link is down keeps its last values, marked stale, so the row says what the
host was last heard doing and since when, never a guess; a host never heard from has no values.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from agent.wire import Finding
from console.model import ConsoleModel

SortKey = Literal["name", "tok_s", "running", "queued", "kv", "worst"]
SORT_KEYS: tuple[SortKey, ...] = ("name", "tok_s", "running", "queued", "kv", "worst")
SORT_WORDS: dict[SortKey, str] = {
    "name": "host",
    "tok_s": "tok/s",
    "running": "running",
    "queued": "queued",
    "kv": "KV use",
    "worst": "worst finding",
}
SEVERITY_RANK = {"critical": 3, "warning": 2, "info": 1}


@dataclass(frozen=True)
class FleetRow:
    name: str
    link: str
    """connected, connecting, reconnecting, failed or ended (the link's own word)."""
    link_detail: str
    stale: bool
    age_s: float | None
    """Seconds since this host's last item arrived (None: never heard from)."""
    profile: str | None
    engine: str | None
    output_tok_s: float | None
    running: int | None
    queued: int | None
    speculating: bool | None
    steps: int | None
    pinned_steps: int | None
    threshold: int | None
    accept_length: float | None
    kv_used: float | None
    """Used share of the KV pool, 0..1."""
    worst: Finding | None
    findings: int
    codes: tuple[str, ...] = ()
    """The codes of the agent's findings (the router's view is compared with some)."""
    spec_configured: bool | None = None
    """The profile has a drafter (None: never heard from)."""

    @property
    def severity(self) -> int:
        return SEVERITY_RANK.get(self.worst.severity, 0) if self.worst is not None else 0


def worst_finding(findings: Sequence[Finding]) -> Finding | None:
    return max(findings, key=lambda f: SEVERITY_RANK.get(f.severity, 0), default=None)


def row_of(name: str, model: ConsoleModel) -> FleetRow:
    latest = model.latest
    link = model.link
    if latest is None:
        return FleetRow(name, link.state, link.message, model.stale, model.data_age_s(),
                        None, None, None, None, None, None, None, None, None, None, None, None, 0)  # fmt: skip
    spec, kv = latest.speculation, latest.kv
    used = kv.used_tokens / kv.pool_tokens if kv.used_tokens is not None and kv.pool_tokens else None
    return FleetRow(
        name=name,
        link=link.state,
        link_detail=link.message,
        stale=model.stale,
        age_s=model.data_age_s(),
        profile=latest.profile_name,
        engine=latest.engine_state,
        output_tok_s=latest.throughput.output_tok_s,
        running=latest.load.running,
        queued=latest.load.queued,
        speculating=spec.on if spec.configured else False,
        steps=spec.steps,
        pinned_steps=spec.pinned_steps,
        threshold=spec.threshold if spec.threshold_available else None,
        accept_length=spec.accept_length if spec.on else None,
        kv_used=used,
        worst=worst_finding(latest.findings),
        findings=len(latest.findings),
        codes=tuple(f.code for f in latest.findings),
        spec_configured=spec.configured,
    )


def sort_rows(rows: Sequence[FleetRow], key: SortKey, descending: bool) -> list[FleetRow]:
    """Hosts without the value go last whichever way; ties keep the hosts' order by name."""
    by_name = sorted(rows, key=lambda r: r.name)
    if key == "name":
        return list(reversed(by_name)) if descending else by_name

    def value(row: FleetRow) -> float | None:
        match key:
            case "tok_s":
                return row.output_tok_s
            case "running":
                return row.running
            case "queued":
                return row.queued
            case "kv":
                return row.kv_used
            case _:
                return row.severity if row.worst is not None else None

    known = [r for r in by_name if value(r) is not None]
    unknown = [r for r in by_name if value(r) is None]
    known.sort(key=lambda r: value(r) or 0.0, reverse=descending)
    return known + unknown


@dataclass(frozen=True)
class FleetTotal:
    hosts: int
    live: int
    output_tok_s: float | None
    running: int | None
    queued: int | None
    speculating: int
    reporting: int
    """Hosts whose link is up and whose engine sends readings: what the sums cover."""


def total_of(rows: Sequence[FleetRow]) -> FleetTotal:
    """Sums over the hosts whose link is up: a stale host's last values are not today's load."""
    live = [r for r in rows if not r.stale]
    reporting = [r for r in live if r.engine is not None]

    def total(values: list[float | int | None]) -> float | None:
        known = [v for v in values if v is not None]
        return float(sum(known)) if known else None

    tok = total([r.output_tok_s for r in reporting])
    running = total([r.running for r in reporting])
    queued = total([r.queued for r in reporting])
    return FleetTotal(
        hosts=len(rows),
        live=len(live),
        output_tok_s=tok,
        running=int(running) if running is not None else None,
        queued=int(queued) if queued is not None else None,
        speculating=sum(1 for r in reporting if r.speculating),
        reporting=len(reporting),
    )
