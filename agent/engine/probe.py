"""Readiness and load probes against the engine's HTTP surface (SGLang 0.5.23 and the simulator)."""

from __future__ import annotations

import httpx

READY_PATHS = ("/health", "/model_info")
"""SGLang answers /health 503 while starting; /model_info proves the model is loaded."""


async def is_ready(http: httpx.AsyncClient, url: str, timeout_s: float = 5.0) -> bool:
    for path in READY_PATHS:
        try:
            response = await http.get(url + path, timeout=timeout_s)
        except httpx.HTTPError:
            return False
        if response.status_code != 200:
            return False
    return True
