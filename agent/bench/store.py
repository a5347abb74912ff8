"""Benchmark results under the agent's state directory: one JSON file per run, written atomically.

A run's file is written when it starts (state "running"), after each window it completes (the levels
so far, marked ``partial``) and when it ends, so the listing shows runs in progress too; a file left
"running" by an agent that died is reported as failed, with the windows it kept.
"""

from __future__ import annotations

import builtins
import json
import re
import secrets
import time
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from agent.profile.atomic import write_atomic
from agent.profile.regular_file import read_regular_file
from agent.wire.bench_result import BenchResult

BENCH_ID = re.compile(r"^\d{8}-\d{6}-[0-9a-f]{6}$")


class UnknownBench(KeyError):
    """No stored run has this id (or the id is malformed)."""


class UnreadableBench(ValueError):
    """A stored run's file is not a benchmark result; the message names the file and what is wrong."""


def new_bench_id(now: float | None = None) -> str:
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(time.time() if now is None else now))
    return f"{stamp}-{secrets.token_hex(3)}"


def atomic_write_json(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, json.dumps(data, indent=1, sort_keys=False, default=str) + "\n")


class BenchStore:
    """``<state_dir>/bench/<bench_id>.json``."""

    def __init__(self, state_dir: Path) -> None:
        self.root = Path(state_dir) / "bench"

    def path(self, bench_id: str) -> Path:
        if not BENCH_ID.match(bench_id):
            raise UnknownBench(bench_id)
        return self.root / f"{bench_id}.json"

    def save(self, record: BenchResult) -> None:
        atomic_write_json(self.path(record.bench_id), record.stored())

    def get(self, bench_id: str) -> BenchResult:
        path = self.path(bench_id)
        try:
            return read_result(path)
        except FileNotFoundError:
            raise UnknownBench(bench_id) from None

    def list(self) -> builtins.list[BenchResult]:
        """Every stored run, newest first (read whole: a listing shows only ``summary()`` of each);
        an unreadable file is listed as a failed run that says why."""
        if not self.root.is_dir():
            return []
        runs: list[BenchResult] = []
        for path in self.root.glob("*.json"):
            try:
                record = read_result(path)
            except (OSError, UnreadableBench) as exc:
                record = BenchResult(
                    bench_id=path.stem, state="failed", error=f"unreadable result file: {exc}"
                )
            runs.append(record)
        runs.sort(key=lambda r: r.bench_id, reverse=True)
        return runs

    def mark_abandoned(self, reason: str) -> builtins.list[str]:
        """Runs still "running" from an earlier agent process are failed now; returns their ids."""
        abandoned = []
        for record in self.list():
            if record.state == "running" and record.bench_id:
                update = {"state": "failed", "error": reason, "finished_at": time.time()}
                self.save(BenchResult.model_validate(record.stored() | update))
                abandoned.append(record.bench_id)
        return abandoned


def read_result(path: Path) -> BenchResult:
    """A stored (or ``--json``-written) result; UnreadableBench names the file and the field."""
    try:
        text = read_regular_file(path).decode("utf-8")  # a link, a directory, a FIFO: NotAFile (OSError)
    except UnicodeDecodeError as exc:
        raise UnreadableBench(f"{path}: not UTF-8 text (byte offset {exc.start})") from None
    try:
        return BenchResult.model_validate_json(text)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "the top level"
        raise UnreadableBench(f"{path}: {where}: {first['msg']}") from None
