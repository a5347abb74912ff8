"""Small wire objects for the console's unit tests."""

from __future__ import annotations

from agent.wire import Snapshot


def production_snapshot(production: bool) -> Snapshot:
    return Snapshot(seq=1, time=0.0, profile_name="kimi-k25-eagle3", production=production)
