"""SGLang's router (``smg`` 1.13, the successor of ``sglang-router``): the one place that knows its surface.

``GET /workers`` answers the router's own view of every worker: its URL, ``is_healthy`` (false once the
router's health checks or circuit breaker took it out), ``status``, ``load`` (the requests the router
has in flight on it) and ``engine_load`` (the worker's ``/v1/loads`` as the router last polled it, for
its load-aware policies, with the poll's ``timestamp``; absent while the worker is not ready). Its
metrics port (``--prometheus-port``, read when the agent is given ``--router-metrics-url``) adds each
worker's circuit breaker (``agent.sglang.router_metrics``). Read with a client of its own: the
engine's API key never goes to the router. Every answer is read up to a size limit, and no further.
"""

from __future__ import annotations

import json
import time
from datetime import datetime
from typing import Any, Final

import httpx
from pydantic import BaseModel, ConfigDict, ValidationError

from agent.sglang.router_metrics import WorkerSeries, parse_metrics
from agent.wire.router import RouterView, RouterWorker

WORKERS: Final = "/workers"
METRICS: Final = "/metrics"
READ_TIMEOUT_S: Final = 3.0
MAX_ANSWER_BYTES: Final = 4 * 1024 * 1024
"""A router's worker list is kilobytes (4 KB for three workers); anything larger is not read."""
MAX_METRICS_BYTES: Final = 8 * 1024 * 1024
"""smg 1.13.0's metrics page is 50 KB for three workers; past this it is not read."""


class TooLarge(Exception):
    pass


class _Loose(BaseModel):
    model_config = ConfigDict(extra="ignore")


class _RankLoad(_Loose):
    num_running_reqs: int | None = None
    num_waiting_reqs: int | None = None
    token_usage: float | None = None
    cache_hit_rate: float | None = None
    gen_throughput: float | None = None


class _EngineLoad(_Loose):
    timestamp: str | None = None
    loads: list[_RankLoad] = []


class _Worker(_Loose):
    url: str
    is_healthy: bool | None = None
    status: str | None = None
    load: int | None = None
    engine_load: _EngineLoad | None = None


class _Workers(_Loose):
    workers: list[_Worker]


def _sum(values: list[int | None]) -> int | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def _mean(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if known else None


def _unix(timestamp: str | None) -> float | None:
    if timestamp is None:
        return None
    try:
        return datetime.fromisoformat(timestamp).timestamp()
    except ValueError:
        return None


def worker_view(worker: _Worker, series: WorkerSeries | None = None) -> RouterWorker:
    """One worker; the polled load summed over its data-parallel ranks (a mean for the shares)."""
    ranks = worker.engine_load.loads if worker.engine_load is not None else []
    tok_s = [r.gen_throughput for r in ranks if r.gen_throughput is not None]
    healthy = worker.is_healthy if worker.is_healthy is not None else (series.healthy if series else None)
    return RouterWorker(
        url=worker.url,
        healthy=healthy,
        status=worker.status,
        circuit=series.circuit if series else None,
        circuit_failures=series.circuit_failures if series else None,
        in_flight=worker.load if worker.load is None or worker.load >= 0 else None,  # -1: unknown
        running=_sum([r.num_running_reqs for r in ranks]),
        queued=_sum([r.num_waiting_reqs for r in ranks]),
        token_usage=_mean([r.token_usage for r in ranks]),
        cache_hit_rate=_mean([r.cache_hit_rate for r in ranks]),
        gen_throughput=sum(tok_s) if tok_s else None,
        load_polled_at=_unix(worker.engine_load.timestamp) if ranks and worker.engine_load else None,
    )


def parse_workers(
    url: str,
    data: Any,
    read_at: float,
    metrics: dict[str, WorkerSeries] | None = None,
    *,
    metrics_url: str | None = None,
    metrics_error: str | None = None,
) -> RouterView:
    """The view from ``/workers``' answer and, when read, the metrics page's series by worker URL."""
    try:
        workers = _Workers.model_validate(data)
    except ValidationError as exc:
        where = ".".join(str(p) for p in exc.errors()[0]["loc"])
        return RouterView(
            configured=True,
            url=url,
            metrics_url=metrics_url,
            error=f"the router's {WORKERS} answer is not a worker list ({where}: {exc.errors()[0]['msg']})",
            read_at=read_at,
        )
    series = metrics or {}
    return RouterView(
        configured=True,
        url=url,
        metrics_url=metrics_url,
        reachable=True,
        metrics_error=metrics_error,
        workers=[worker_view(w, series.get(w.url)) for w in workers.workers],
        read_at=read_at,
    )


async def bounded_get(client: httpx.AsyncClient, url: str, limit: int) -> tuple[int, bytes]:
    """Status and body, read up to ``limit`` bytes: a longer answer raises ``TooLarge`` unread."""
    async with client.stream("GET", url) as response:
        declared = response.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            raise TooLarge
        body = bytearray()
        async for chunk in response.aiter_bytes():
            body += chunk
            if len(body) > limit:
                raise TooLarge
        return response.status_code, bytes(body)


async def _read(client: httpx.AsyncClient, base: str, path: str, what: str, limit: int) -> bytes | str:
    """The body, or why it could not be read in words."""
    try:
        status, body = await bounded_get(client, base.rstrip("/") + path, limit)
    except TooLarge:
        return f"the {what}'s {path} answer is over {limit} bytes"
    except httpx.HTTPError as exc:
        return f"cannot reach the {what}: {str(exc) or type(exc).__name__}"
    if status != 200:
        return f"the {what} answered {status} to {path}"
    return body


async def read_metrics(client: httpx.AsyncClient, metrics_url: str) -> dict[str, WorkerSeries] | str:
    body = await _read(client, metrics_url, METRICS, "router's metrics port", MAX_METRICS_BYTES)
    if isinstance(body, str):
        return body
    return parse_metrics(body.decode("utf-8", errors="replace"))


async def read_router(
    url: str, metrics_url: str | None = None, timeout_s: float = READ_TIMEOUT_S
) -> RouterView:
    """The router's view now, or a view that says why it could not be read (never raises)."""
    read_at = time.time()
    async with httpx.AsyncClient(timeout=timeout_s) as client:
        body = await _read(client, url, WORKERS, "router", MAX_ANSWER_BYTES)
        if isinstance(body, str):
            return RouterView(configured=True, url=url, metrics_url=metrics_url, error=body, read_at=read_at)
        try:
            data = json.loads(body)
        except ValueError:
            error = f"the router's {WORKERS} answer is not JSON"
            return RouterView(configured=True, url=url, metrics_url=metrics_url, error=error, read_at=read_at)
        series: dict[str, WorkerSeries] | None = None
        metrics_error: str | None = None
        if metrics_url is not None:
            read = await read_metrics(client, metrics_url)
            series, metrics_error = (None, read) if isinstance(read, str) else (read, None)
    return parse_workers(url, data, read_at, series, metrics_url=metrics_url, metrics_error=metrics_error)
