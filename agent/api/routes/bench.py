"""Benchmarks: start one (or ask what it would run), list and read results, cancel, and hear of a run
``agent bench`` drives straight at the engine.

Thin, like every route: each body is its wire model (``BenchRequest``, ``BenchAnnounce``,
``CancelBody``), bounded and checked before the route runs, so a refusal of a field names it and
what it allows and quotes nothing sent (``api.errors``); a path's id is bounded the same way. The
bench service (``agent.serve.bench``) does the rest: the refusals that need the engine or the
profile, the audit, the run."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi import Path as PathParam

from agent.api.routes.common import OPERATOR, Body, DaemonDep
from agent.bench.store import UnknownBench, UnreadableBench
from agent.serve.bench import BenchService, unknown_words, unreadable
from agent.serve.operations import source_of
from agent.wire.api import BenchAnnounce, BenchCancelled, BenchList, BenchPlan, BenchStarted
from agent.wire.bench_request import BenchRequest
from agent.wire.bench_result import BenchResult

router = APIRouter()

BENCH_ID_MAX = 64
"""A benchmark id's longest text in a path (ids are 22 characters); a longer one is refused unread."""


def bench_of(daemon: DaemonDep) -> BenchService:
    if daemon.bench is None:  # only before the daemon has started its parts
        raise HTTPException(503, "the agent is still starting; benchmarks are not open yet")
    return daemon.bench


BenchDep = Annotated[BenchService, Depends(bench_of)]
BenchId = Annotated[str, PathParam(max_length=BENCH_ID_MAX, description="A run's id, as the list gives it")]


class CancelBody(Body):
    operator: str | None = OPERATOR


@router.post("/bench", status_code=202, response_model=BenchStarted)
async def start_bench(bench: BenchDep, body: BenchRequest, http: Request) -> dict[str, Any]:
    return {"bench_id": await bench.start(body, source_of(http))}


@router.get("/bench", response_model=BenchList)
async def list_bench(bench: BenchDep) -> dict[str, Any]:
    return {"runs": [r.run_line() for r in bench.runs.list()]}


@router.get("/bench/{bench_id}", response_model=BenchResult, response_model_exclude_unset=True)
async def get_bench(bench: BenchDep, bench_id: BenchId) -> BenchResult:
    try:
        return bench.runs.get(bench_id)
    except UnknownBench:
        raise HTTPException(404, unknown_words()) from None
    except (UnreadableBench, OSError) as exc:  # torn or damaged: said, as the list says it
        return unreadable(bench_id, exc)


@router.post("/bench/plan", response_model=BenchPlan)
async def plan_bench(bench: BenchDep, body: BenchRequest) -> dict[str, Any]:
    return bench.plan(body)


@router.post("/bench/external", status_code=204)
async def announce_bench(bench: BenchDep, body: BenchAnnounce, http: Request) -> None:
    await bench.announce(body, source_of(http))


@router.post("/bench/{bench_id}/cancel", response_model=BenchCancelled)
async def cancel_bench(
    bench: BenchDep, bench_id: BenchId, http: Request, body: CancelBody | None = None
) -> dict[str, Any]:
    return bench.cancel(bench_id, body.operator if body else None, source_of(http))
