"""SGLang's router (``smg`` 1.13, the successor of ``sglang-router``): the one place that knows its surface.

``GET /workers`` answers the router's own view of every worker: its URL, ``is_healthy`` (false once the
router's health checks or circuit breaker took it out), ``status``, ``load`` (the requests the router
has in flight on it) and ``engine_load`` (the worker's ``/v1/loads`` as the router last polled it, for
its load-aware policies). Read with its own client: the engine's API key never goes to the router.
"""

from __future__ import annotations

import time
from typing import Any, Final

import httpx
from pydantic import BaseModel, ConfigDict, ValidationError

from agent.wire.router import RouterView, RouterWorker

WORKERS: Final = "/workers"
READ_TIMEOUT_S: Final = 3.0
MAX_ANSWER_BYTES: Final = 4 * 1024 * 1024
"""A router's worker list is kilobytes; anything larger is not read."""


class _Loose(BaseModel):
    model_config = ConfigDict(extra="ignore")


class _RankLoad(_Loose):
    num_running_reqs: int | None = None
    num_waiting_reqs: int | None = None
    token_usage: float | None = None
    gen_throughput: float | None = None


class _EngineLoad(_Loose):
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


def worker_view(worker: _Worker) -> RouterWorker:
    """One worker; the polled load summed over its data-parallel ranks (a mean for KV use)."""
    ranks = worker.engine_load.loads if worker.engine_load is not None else []
    usage = [r.token_usage for r in ranks if r.token_usage is not None]
    tok_s = [r.gen_throughput for r in ranks if r.gen_throughput is not None]
    return RouterWorker(
        url=worker.url,
        healthy=worker.is_healthy,
        status=worker.status,
        in_flight=worker.load if worker.load is None or worker.load >= 0 else None,  # -1: unknown
        running=_sum([r.num_running_reqs for r in ranks]),
        queued=_sum([r.num_waiting_reqs for r in ranks]),
        token_usage=sum(usage) / len(usage) if usage else None,
        gen_throughput=sum(tok_s) if tok_s else None,
    )


def parse_workers(url: str, data: Any, read_at: float) -> RouterView:
    try:
        workers = _Workers.model_validate(data)
    except ValidationError as exc:
        where = ".".join(str(p) for p in exc.errors()[0]["loc"])
        return RouterView(
            configured=True,
            url=url,
            error=f"the router's {WORKERS} answer is not a worker list ({where}: {exc.errors()[0]['msg']})",
            read_at=read_at,
        )
    return RouterView(
        configured=True,
        url=url,
        reachable=True,
        workers=[worker_view(w) for w in workers.workers],
        read_at=read_at,
    )


async def read_router(url: str, timeout_s: float = READ_TIMEOUT_S) -> RouterView:
    """The router's view now, or a view that says why it could not be read (never raises)."""
    read_at = time.time()
    try:
        async with httpx.AsyncClient(timeout=timeout_s) as client:
            response = await client.get(url.rstrip("/") + WORKERS)
    except httpx.HTTPError as exc:
        why = str(exc) or type(exc).__name__
        return RouterView(configured=True, url=url, error=f"cannot reach the router: {why}", read_at=read_at)
    if response.status_code != 200:
        error = f"the router answered {response.status_code} to {WORKERS}"
        return RouterView(configured=True, url=url, error=error, read_at=read_at)
    if len(response.content) > MAX_ANSWER_BYTES:
        error = f"the router's {WORKERS} answer is over {MAX_ANSWER_BYTES} bytes"
        return RouterView(configured=True, url=url, error=error, read_at=read_at)
    try:
        data = response.json()
    except ValueError:
        error = f"the router's {WORKERS} answer is not JSON"
        return RouterView(configured=True, url=url, error=error, read_at=read_at)
    return parse_workers(url, data, read_at)
