"""SGLang's router as the agent reads it (``GET /v1/router``): its workers, their load, their health.

The router (``smg``, once published as ``sglang-router``) spreads requests over several SGLang
servers. Its own view of them is what tells an operator where requests go and which server it
stopped sending to; the console shows it beside the hosts. Unknown stays None, never 0.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

CircuitState = Literal["closed", "open", "half_open"]
"""The router's circuit breaker for one worker: ``open`` takes it out of routing after repeated
failures; ``half_open`` lets a few requests through to see whether it is back."""


class _Wire(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class RouterWorker(_Wire):
    url: str = Field(description="The worker's URL as the router reaches it")
    healthy: bool | None = Field(None, description="False: the router marked it unhealthy and skips it")
    status: str | None = Field(None, description="The router's word for it: ready, not_ready, failed, ...")
    circuit: CircuitState | None = Field(
        None, description="Its circuit breaker (from the router's metrics port); None: not read"
    )
    circuit_failures: int | None = Field(
        None, description="Consecutive failures the circuit breaker counts now (it opens at its threshold)"
    )
    in_flight: int | None = Field(None, description="Requests the router has in flight on it now")
    running: int | None = Field(
        None, description="Running requests, from the worker's load the router polled"
    )
    queued: int | None = Field(None, description="Waiting requests, from the same poll")
    token_usage: float | None = Field(None, description="KV use 0..1, from the same poll")
    cache_hit_rate: float | None = Field(None, description="Prefix cache hit rate 0..1, from the same poll")
    gen_throughput: float | None = Field(None, description="Tokens/s, from the same poll")
    load_polled_at: float | None = Field(
        None, description="Unix time of the router's poll those figures come from (None: no load on file)"
    )


class RouterView(_Wire):
    """``GET /v1/router``. ``configured`` False: this agent was started without ``--router-url``."""

    configured: bool = False
    url: str | None = None
    metrics_url: str | None = Field(None, description="The router's metrics port (`--router-metrics-url`)")
    reachable: bool = False
    error: str | None = Field(None, description="Why the router could not be read, in words")
    metrics_error: str | None = Field(
        None, description="Why its metrics port could not be read (the workers are still shown)"
    )
    workers: list[RouterWorker] = Field(default_factory=list)
    read_at: float | None = Field(None, description="Unix time of the read")
