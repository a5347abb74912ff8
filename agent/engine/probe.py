"""Readiness and load probes against the engine's HTTP surface (SGLang 0.5.23 and the simulator)."""

from __future__ import annotations

import httpx

from agent.sglang import paths
from agent.sglang.reading import read_page


async def is_ready(http: httpx.AsyncClient, url: str, timeout_s: float = 5.0) -> bool:
    for path in paths.READY_PATHS:
        try:
            response = await http.get(url + path, timeout=timeout_s)
        except httpx.HTTPError:
            return False
        if response.status_code != 200:
            return False
    return True


async def requests_in_flight(http: httpx.AsyncClient, url: str, timeout_s: float = 5.0) -> int | None:
    """Running plus queued requests, read fresh from /metrics (a drain must not trust a stale tick).

    None when the engine cannot say (no metrics, not answering): the drain then does not wait.
    """
    try:
        response = await http.get(url + paths.METRICS, timeout=timeout_s)
    except httpx.HTTPError:
        return None
    if response.status_code != 200:
        return None
    reading = read_page(response.content)
    running, queued = reading.gauge_int("running"), reading.gauge_int("queued")
    if running is None and queued is None:
        return None
    return (running or 0) + (queued or 0)
