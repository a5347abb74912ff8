"""Benchmark results under the agent's state directory: one JSON file per run, written atomically.

A run's file is written when it starts (state "running") and rewritten when it ends, so the listing
shows runs in progress too; a file left "running" by an agent that died is reported as failed.
"""

from __future__ import annotations

import builtins
import json
import re
import secrets
import time
from pathlib import Path
from typing import Any

from agent.profile.atomic import write_atomic

BENCH_ID = re.compile(r"^\d{8}-\d{6}-[0-9a-f]{6}$")
SUMMARY_KEYS = (
    "bench_id",
    "mode",
    "state",
    "url",
    "baseline_url",
    "profile",
    "created_at",
    "finished_at",
    "recommended_threshold",
    "error",
)


class UnknownBench(KeyError):
    """No stored run has this id (or the id is malformed)."""


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

    def save(self, record: dict[str, Any]) -> None:
        atomic_write_json(self.path(str(record["bench_id"])), record)

    def get(self, bench_id: str) -> dict[str, Any]:
        try:
            data: dict[str, Any] = json.loads(self.path(bench_id).read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise UnknownBench(bench_id) from None
        return data

    def list(self) -> builtins.list[dict[str, Any]]:
        """Summaries, newest first; unreadable files are listed as failed with the reason."""
        if not self.root.is_dir():
            return []
        runs: list[dict[str, Any]] = []
        for path in self.root.glob("*.json"):
            try:
                record = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                record = {"bench_id": path.stem, "state": "failed", "error": f"unreadable result file: {exc}"}
            runs.append({k: record.get(k) for k in SUMMARY_KEYS})
        runs.sort(key=lambda r: str(r.get("bench_id")), reverse=True)
        return runs

    def mark_abandoned(self, reason: str) -> builtins.list[str]:
        """Runs still "running" from an earlier agent process are failed now; returns their ids."""
        abandoned = []
        for summary in self.list():
            if summary.get("state") == "running" and summary.get("bench_id"):
                record = self.get(str(summary["bench_id"]))
                record |= {"state": "failed", "error": reason, "finished_at": time.time()}
                self.save(record)
                abandoned.append(str(summary["bench_id"]))
        return abandoned
