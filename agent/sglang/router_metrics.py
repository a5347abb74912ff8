"""SGLang's router's metrics port (``smg`` 1.13, ``--prometheus-port``): the per-worker series the agent reads.

smg writes one series per worker, labelled ``worker="<url>"``, for its circuit breaker
(``smg_worker_cb_state``: 0 closed, 1 open, 2 half-open; ``smg_worker_cb_consecutive_failures``) and
its health mark (``smg_worker_health``: 1 healthy, 0 not). The circuit breaker is on this page only:
``/workers`` says ``is_healthy`` and nothing of the breaker.

Its ``smg_engine_*`` gauges (running, waiting, token usage, throughput, cache hit rate) are not read:
they keep a gone worker's last values (after a kill -9 of one engine, smg 1.13.0 still wrote its 10
running requests while ``/workers`` had dropped its load), so the figures come from ``/workers``,
whose ``engine_load`` is there only while the router holds a poll of it, with the poll's time.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from agent.wire.router import CircuitState

CB_STATE: Final = "smg_worker_cb_state"
CB_FAILURES: Final = "smg_worker_cb_consecutive_failures"
HEALTH: Final = "smg_worker_health"
WORKER_LABEL: Final = "worker"
CIRCUIT_OF: Final[dict[float, CircuitState]] = {0.0: "closed", 1.0: "open", 2.0: "half_open"}
MAX_WORKERS: Final = 4096
"""Workers read from one page; a page naming more is read for the first this many."""

_LINE = re.compile(
    r"^(" + "|".join(re.escape(n) for n in (CB_STATE, CB_FAILURES, HEALTH)) + r")\{([^}\n]*)\}[ \t]+(\S+)",
    re.MULTILINE,
)
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\.)*)"')


@dataclass
class WorkerSeries:
    """What the metrics page says of one worker; None: the page has no such series for it."""

    circuit: CircuitState | None = None
    circuit_failures: int | None = None
    healthy: bool | None = None


def _value(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if value == value else None  # NaN: unknown


def parse_metrics(page: str) -> dict[str, WorkerSeries]:
    """Worker URL → its series. Lines of other families, or without a worker label, are skipped."""
    by_worker: dict[str, WorkerSeries] = {}
    for match in _LINE.finditer(page):
        name, labels, raw = match.groups()
        worker = dict(_LABEL.findall(labels)).get(WORKER_LABEL)
        value = _value(raw)
        if worker is None or value is None:
            continue
        series = by_worker.get(worker)
        if series is None:
            if len(by_worker) >= MAX_WORKERS:
                continue
            series = by_worker[worker] = WorkerSeries()
        if name == CB_STATE:
            series.circuit = CIRCUIT_OF.get(value)
        elif name == CB_FAILURES:
            series.circuit_failures = int(value) if value >= 0 else None
        else:
            series.healthy = value >= 1.0
    return by_worker
