"""The engine-reading room of telemetry: every HTTP request a tick makes to SGLang, and nothing else.

``/metrics`` is read every tick; ``/server_info`` is large and goes through the scheduler, so it is
read every few ticks (``telemetry.server_info_every_ticks``), at once after a live change
(``refresh_server_info``), and every tick while ``/metrics`` is off (a server started without
``--enable-metrics`` answers 404; /metrics is then asked again every ``METRICS_RETRY_TICKS``).

Both go through ``agent.sglang.client.EngineClient``, on kept-alive connections of the reader's own
(one per path, so the two can be in flight together; ``keepalive.KeptAliveGet``) for an ``http``
engine, through the caller's ``httpx`` client for ``https``. A ``/server_info`` answer is parsed into
the typed view and redacted once; an unchanged answer (an idle server) is neither parsed nor
redacted again, and only a digest of the raw answer is kept (it holds the API key).
"""

from __future__ import annotations

import asyncio
import hashlib
from dataclasses import dataclass
from typing import Any, Final

import httpx

from agent.sglang.client import EngineClient, EngineError, decode_server_info
from agent.sglang.info_view import ServerInfo, parse_server_info
from agent.sglang.paths import METRICS, SERVER_INFO
from agent.sglang.reading import MetricsParser, MetricsReading, reading_from_server_info
from agent.sglang.redact import redact_mapping
from agent.telemetry.keepalive import KeptAliveGet

METRICS_RETRY_TICKS: Final = 30
"""After a 404 from /metrics (server started without --enable-metrics), look again this often."""


@dataclass(frozen=True)
class EngineRead:
    """What one tick read from the engine."""

    reading: MetricsReading | None
    """This tick's reading (``/metrics``, or ``/server_info`` standing in); None when neither answered."""
    info: ServerInfo | None
    """The last ``/server_info`` view (it may be a few ticks old: it is not read every tick)."""
    error: str | None = None
    """Why a read failed, in words."""


class EngineReader:
    def __init__(
        self,
        http: httpx.AsyncClient,
        *,
        request_timeout_s: float | None = None,
        server_info_every_ticks: int = 5,
    ) -> None:
        self._http = http
        self._timeout = request_timeout_s
        self._every = server_info_every_ticks
        self._url: str | None = None
        self._api_key: str | None = None
        self._getters: dict[str, KeptAliveGet] = {}
        self._client: EngineClient | None = None
        self._parser = MetricsParser()
        self._ticks = 0
        self._forget()

    def _forget(self) -> None:
        self._info: ServerInfo | None = None
        self._redacted: dict[str, Any] | None = None
        self._digest = b""
        self._info_due = True
        self._metrics_off_since: int | None = None
        self._parser = MetricsParser()
        self._drafting: bool | None = None
        """Whether the last /metrics page said the server drafts: a change is a switch."""

    def point_at(self, url: str | None, api_key: str | None, server_info_every_ticks: int) -> None:
        """A (re)started engine or a new profile: nothing of the old one is kept."""
        self.close()
        self._url = url.rstrip("/") if url else None
        self._api_key = api_key
        self._every = server_info_every_ticks
        self._client = None
        if self._url is not None:
            fetch = self._kept_alive if self._url.startswith("http://") else None
            timeout = self._timeout if self._timeout is not None else (self._http.timeout.read or 10.0)
            self._client = EngineClient(
                self._url, self._http, api_key=api_key, fetch=fetch, timeout_s=timeout
            )
        self._forget()

    @property
    def url(self) -> str | None:
        return self._url

    @property
    def redacted_server_info(self) -> dict[str, Any] | None:
        """The last ``/server_info`` answer with every secret redacted."""
        return self._redacted

    def refresh_server_info(self) -> None:
        """Read ``/server_info`` on the next tick (after a live change, to show its read-back at once)."""
        self._info_due = True

    def idle(self) -> None:
        """A tick in which the engine is not asked (it is down): count it, keep nothing new."""
        self._ticks += 1

    def close(self) -> None:
        for getter in self._getters.values():
            getter.close()
        self._getters.clear()

    async def _kept_alive(self, path: str) -> tuple[int, bytes]:
        getter = self._getters.get(path)
        if getter is None:
            assert self._url is not None
            headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else None
            default = 5.0 if path == METRICS else (self._http.timeout.read or 10.0)
            timeout = self._timeout if self._timeout is not None else default
            getter = self._getters[path] = KeptAliveGet(self._url, headers=headers, timeout_s=timeout)
        return await getter.get(path)

    async def _get(self, path: str) -> tuple[tuple[int, bytes] | None, str | None]:
        assert self._client is not None
        try:
            return await self._client.get(path), None
        except EngineError as exc:
            return None, str(exc)

    async def read(self) -> EngineRead:
        """One tick's reads (see the module docstring for which)."""
        tick = self._ticks
        self._ticks += 1
        if self._client is None:
            return EngineRead(None, None, None)
        metrics_off = self._metrics_off_since is not None
        want_metrics = not metrics_off or (tick - (self._metrics_off_since or 0)) % METRICS_RETRY_TICKS == 0
        want_info = self._info_due or metrics_off or tick % self._every == 0
        metrics: tuple[tuple[int, bytes] | None, str | None] = (None, None)
        info: tuple[tuple[int, bytes] | None, str | None] = (None, None)
        if want_metrics and want_info:
            metrics, info = await asyncio.gather(self._get(METRICS), self._get(SERVER_INFO))
        elif want_metrics:  # most ticks: no task set-up for one request
            metrics = await self._get(METRICS)
        elif want_info:
            info = await self._get(SERVER_INFO)
        error = info[1] or metrics[1]
        reading: MetricsReading | None = None
        metrics_error: str | None = None
        if metrics[0] is not None:
            status, body = metrics[0]
            if status == 200:
                self._metrics_off_since = None
                reading = self._parser.parse(body)
            elif status == 404:
                if self._metrics_off_since is None:
                    self._metrics_off_since = tick
            else:
                metrics_error = f"GET {METRICS}: HTTP {status}"
        if self._switched(reading) and info[0] is None:
            # A switch is when the operator reads why: the threshold that caused it must be the one
            # in force, not a read-back up to server_info_every_ticks old (on the real engine a
            # threshold moved outside the agent read as "the adaptive policy chose 0" for 4 ticks).
            info = await self._get(SERVER_INFO)
            error = error or info[1]
        info_ok = False
        if info[0] is not None:
            failure = self._take_server_info(*info[0])
            info_ok = failure is None
            error = error or failure
        error = error or metrics_error
        if reading is None and self._metrics_off_since is not None and info_ok and self._info is not None:
            reading = reading_from_server_info(self._info)
        return EngineRead(reading, self._info, error)

    def _switched(self, reading: MetricsReading | None) -> bool:
        """Whether this /metrics page shows the server started or stopped drafting since the last one."""
        if reading is None or reading.source != "metrics":
            return False
        drafting = _drafting(reading)
        if drafting is None:
            return False
        switched = self._drafting is not None and drafting != self._drafting
        self._drafting = drafting
        return switched

    def _take_server_info(self, status: int, body: bytes) -> str | None:
        digest = hashlib.blake2b(body, digest_size=16).digest()
        if status == 200 and digest == self._digest and self._info is not None:
            self._info_due = False  # the same answer as last time: read and redacted already
            return None
        try:
            raw = decode_server_info(status, body)
        except EngineError as exc:
            return str(exc)
        self._digest = digest
        self._info = parse_server_info(raw)
        self._redacted = redact_mapping(raw, [self._api_key] if self._api_key else [])
        self._info_due = False
        return None


def _drafting(reading: MetricsReading) -> bool | None:
    """Whether this page's step gauge says the server drafts (more than 0 steps); None without it."""
    steps = reading.gauge_int("spec_num_steps")
    return None if steps is None else steps > 0
