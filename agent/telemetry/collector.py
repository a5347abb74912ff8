"""One telemetry tick: scrape SGLang and sample the GPUs, and turn both into a ``wire.Snapshot``.

The collector keeps a few seconds of counter and histogram history, because the numbers an operator
needs are rates and recent percentiles, not SGLang's lifetime totals: output tokens/s comes from the
token counters over a short window (SGLang's own ``gen_throughput`` gauge is refreshed only every 40
decode batches and reads 0 when idle), and TTFT/ITL percentiles from the histogram buckets that
filled up within the window. ``/server_info`` is large and goes through the scheduler, so it is read
every few ticks (and redacted before it is kept); when ``/metrics`` is off, it is the only source.
"""

from __future__ import annotations

import asyncio
import bisect
import hashlib
import json
import math
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal, TypeVar

import httpx
from pydantic import BaseModel

from agent.profile.schema import Profile
from agent.sglang import kv
from agent.sglang import server_info as si
from agent.sglang.live_control import NO_THRESHOLD, READBACK_FIELD
from agent.sglang.rules import adaptive_unsupported_reason
from agent.telemetry.findings import HealthInputs, evaluate
from agent.telemetry.gpu_worker import SampleThread
from agent.telemetry.keepalive import KeptAliveGet
from agent.telemetry.nvml import GpuSampler
from agent.telemetry.scrape import (
    Histogram,
    MetricsParser,
    MetricsReading,
    internal_state,
    reading_from_server_info,
    redact_server_info,
)
from agent.wire import Gpus, KvView, Latency, Load, Snapshot, Speculation, Throughput
from agent.wire.snapshot import EngineState, SpecOffReason

SCRAPED_STATES: Final = frozenset({"ready", "draining", "unknown", "starting", "restarting"})
"""Engine states in which SGLang may answer; in the others the collector does not try."""
METRICS_RETRY_TICKS: Final = 30
"""After a 404 from /metrics (server started without --enable-metrics), look again this often."""
ACCEPT_HISTORY: Final = 30

_M = TypeVar("_M", bound=BaseModel)


@dataclass(frozen=True)
class _Point:
    """One tick's cumulative values, kept to compute rates and recent percentiles."""

    time: float
    counters: Mapping[str, float]
    histograms: Mapping[str, Histogram]


def _api_key_from(profile: Profile) -> str | None:
    path = profile.server.api_key_file
    if not path:
        return None
    try:
        return Path(path).expanduser().read_text().strip() or None
    except OSError:
        return None


class Collector:
    """Builds one Snapshot per ``tick``; the caller (the daemon) owns the schedule and the ring buffer.

    ``/metrics`` (every tick) and ``/server_info`` (every few ticks) are read on kept-alive
    connections of the collector's own (see ``_get``; ``aclose()`` closes them), with the API key
    (``api_key``, or the profile's ``server.api_key_file``) that ``/server_info`` needs when the
    server has one; an ``https`` engine is read through the caller's ``http`` client instead.
    ``set_engine`` points the collector at a restarted engine or a new profile and forgets the old
    history.
    """

    def __init__(
        self,
        engine_url: str | None,
        profile: Profile,
        gpus: GpuSampler,
        http: httpx.AsyncClient,
        clock: Callable[[], float] = time.time,
        *,
        api_key: str | None = None,
        engine_kind: Literal["sglang", "sim"] | None = None,
        request_timeout_s: float | None = None,
        rate_window_s: float = 5.0,
        latency_window_s: float = 30.0,
        retraction_window_s: float = 60.0,
        sample_gpus_in_thread: bool = True,
        gpu_timeout_s: float = 2.0,
    ) -> None:
        self._gpus = gpus
        self._http = http
        self._getters: dict[str, KeptAliveGet] = {}
        self._clock = clock
        self._engine_kind = engine_kind
        self._rate_window = rate_window_s
        self._latency_window = latency_window_s
        self._retraction_window = retraction_window_s
        self._gpu_thread = sample_gpus_in_thread
        self._gpu_worker: SampleThread[Gpus] | None = None
        self._gpu_timeout = gpu_timeout_s
        self._gpu_pending: asyncio.Future[Gpus] | None = None
        self._explicit_key = api_key
        self._timeout = request_timeout_s
        self._ticks = 0
        self._engine_url: str | None = None
        self._profile = profile
        self._api_key: str | None = None
        self._server_info: dict[str, Any] | None = None
        self._info_due = True
        self._metrics_off_since: int | None = None
        self._history: deque[_Point] = deque()
        self._accept: deque[float] = deque(maxlen=ACCEPT_HISTORY)
        self._last_reading: MetricsReading | None = None
        self._last_error: str | None = None
        self._previous: dict[str, BaseModel] = {}
        self.set_engine(engine_url, profile)

    # -- configuration ------------------------------------------------------------------------
    def set_engine(self, engine_url: str | None, profile: Profile | None = None) -> None:
        """Point at a (re)started engine: history from the old process means nothing for the new one."""
        self._engine_url = engine_url.rstrip("/") if engine_url else None
        self._close_getters()
        self._parser = MetricsParser()
        if profile is not None:
            self._profile = profile
        self._api_key = self._explicit_key or _api_key_from(self._profile)
        self._shape = _shape_of(self._profile)
        self._adaptive_reason = (
            adaptive_unsupported_reason(self._profile) if self._profile.speculative else None
        )
        self._server_info = None
        self._server_info_digest = b""
        self._info_due = True
        self._metrics_off_since = None
        self._history.clear()
        self._accept.clear()

    def refresh_server_info(self) -> None:
        """Read ``/server_info`` on the next tick (after a live change, to show its read-back at once)."""
        self._info_due = True

    @property
    def server_info(self) -> dict[str, Any] | None:
        """The last ``/server_info``, already redacted."""
        return self._server_info

    @property
    def last_reading(self) -> MetricsReading | None:
        return self._last_reading

    @property
    def last_error(self) -> str | None:
        """Why the last scrape failed, in words (None when it worked)."""
        return self._last_error

    # -- the tick -----------------------------------------------------------------------------
    async def tick(
        self, engine_state: EngineState = "unknown", engine_pid: int | None = None, seq: int = 0
    ) -> Snapshot:
        now = self._clock()
        if self._gpu_thread and self._gpu_pending is None:
            if self._gpu_worker is None:
                self._gpu_worker = SampleThread(self._gpus.sample)
            self._gpu_pending = self._gpu_worker.submit()
        reading: MetricsReading | None = None
        if self._engine_url is not None and engine_state in SCRAPED_STATES:
            try:
                reading = await self._scrape()
            except Exception as exc:  # a page or answer we did not foresee must not cost the snapshot
                self._last_error = f"reading SGLang failed: {type(exc).__name__}: {exc}"
        else:
            self._history.clear()
            self._last_error = None
        self._ticks += 1
        gpus = await self._gpu_sample() if self._gpu_thread else self._gpus.sample()
        self._last_reading = reading
        if reading is not None:
            self._remember(now, reading)
        return self._snapshot(now, seq, engine_state, engine_pid, reading, gpus)

    async def _gpu_sample(self) -> Gpus:
        """The thread's sample; a driver call that hangs (it happens with a wedged GPU) costs one
        error state per tick instead of the whole telemetry loop, and no second thread is started
        while the first is stuck."""
        pending = self._gpu_pending
        assert pending is not None
        if not pending.done():  # usually done: it ran while the HTTP answers were on their way
            await asyncio.wait((pending,), timeout=self._gpu_timeout)
        if not pending.done():
            return Gpus(
                source="none",
                state="error",
                detail=f"the GPU driver did not answer within {self._gpu_timeout:g} s (NVML call hanging)",
            )
        self._gpu_pending = None
        exc = pending.exception()
        if exc is not None:
            return Gpus(source="none", state="error", detail=f"GPU sampling failed: {exc}")
        return pending.result()

    async def aclose(self) -> None:
        """Close the connections the collector keeps to the engine (the caller's client is the
        caller's), and let the GPU sampling thread end."""
        self._close_getters()
        if self._gpu_worker is not None and self._gpu_pending is None:
            self._gpu_worker.close()
            self._gpu_worker = None

    def _close_getters(self) -> None:
        for getter in self._getters.values():
            getter.close()
        self._getters.clear()

    def _getter(self, path: str) -> KeptAliveGet | None:
        """The kept-alive connection for ``path`` (one each for /metrics and /server_info, so that
        the two can be in flight together); None for an https engine, read through ``http``."""
        if self._engine_url is None or not self._engine_url.startswith("http://"):
            return None
        getter = self._getters.get(path)
        if getter is None:
            headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else None
            if path == "/metrics":
                timeout = self._timeout if self._timeout is not None else 5.0
            else:
                timeout = self._timeout if self._timeout is not None else (self._http.timeout.read or 10.0)
            getter = self._getters[path] = KeptAliveGet(self._engine_url, headers=headers, timeout_s=timeout)
        return getter

    async def _get(self, path: str) -> tuple[int, bytes] | None:
        """GET ``path`` from the engine: ``(status, body)``, or None with ``last_error`` set.

        These are the requests of every tick, so they skip the client layer (URL merging, cookies,
        auth hooks, anyio streams) and go over a connection of the collector's own
        (``keepalive.KeptAliveGet``): that halves the CPU of a tick (bench/agent_tick.py).
        """
        assert self._engine_url is not None
        try:
            getter = self._getter(path)
            if getter is not None:
                return await getter.get(path)
            headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else None
            if self._timeout is None:
                response = await self._http.get(self._engine_url + path, headers=headers)
            else:
                response = await self._http.get(
                    self._engine_url + path, headers=headers, timeout=self._timeout
                )
            return response.status_code, response.content
        except httpx.HTTPError as exc:
            self._last_error = f"GET {path}: {type(exc).__name__}: {exc}"
            return None

    async def _scrape(self) -> MetricsReading | None:
        profile_every = self._profile.telemetry.server_info_every_ticks
        metrics_off = self._metrics_off_since is not None
        want_metrics = (
            not metrics_off or (self._ticks - (self._metrics_off_since or 0)) % METRICS_RETRY_TICKS == 0
        )
        want_info = self._info_due or metrics_off or self._ticks % profile_every == 0
        self._last_error = None
        metrics_resp: tuple[int, bytes] | None = None
        info_resp: tuple[int, bytes] | None = None
        if want_metrics and want_info:
            metrics_resp, info_resp = await asyncio.gather(self._get("/metrics"), self._get("/server_info"))
        elif want_metrics:  # most ticks: no task set-up for one request
            metrics_resp = await self._get("/metrics")
        elif want_info:
            info_resp = await self._get("/server_info")
        if info_resp is not None:
            self._take_server_info(*info_resp)
        if metrics_resp is not None:
            status, body = metrics_resp
            if status == 200:
                self._metrics_off_since = None
                return self._parser.parse(body)
            if status == 404:
                if self._metrics_off_since is None:
                    self._metrics_off_since = self._ticks
            else:
                self._last_error = f"GET /metrics: HTTP {status}"
        if self._metrics_off_since is not None and info_resp is not None and info_resp[0] == 200:
            return reading_from_server_info(self._server_info or {})
        return None

    def _take_server_info(self, status: int, body: bytes) -> None:
        if status != 200:
            self._last_error = f"GET /server_info: HTTP {status}"
            return
        # The same answer as last time (an idle server) was read and redacted already. Only a digest
        # of it is kept: the raw answer holds the API key.
        digest = hashlib.blake2b(body, digest_size=16).digest()
        if digest == self._server_info_digest and self._server_info is not None:
            self._info_due = False
            return
        self._server_info_digest = digest
        try:
            data = json.loads(body)
        except ValueError:
            self._last_error = "GET /server_info: not JSON"
            return
        if isinstance(data, dict):
            self._server_info = redact_server_info(data, secrets=[self._api_key] if self._api_key else [])
            self._info_due = False

    # -- history ------------------------------------------------------------------------------
    def _remember(self, now: float, reading: MetricsReading) -> None:
        if self._history:
            last = self._history[-1]
            if any(reading.counters.get(k, math.inf) < v for k, v in last.counters.items()):
                self._history.clear()  # the server restarted: its counters began again
        self._history.append(_Point(now, dict(reading.counters), dict(reading.histograms)))
        keep = max(self._rate_window, self._latency_window, self._retraction_window) * 1.5
        while len(self._history) > 2 and now - self._history[0].time > keep:
            self._history.popleft()

    def _base(self, now: float, window: float, has: Callable[[_Point], bool] | None = None) -> _Point | None:
        """The oldest earlier point inside the window (that ``has`` what is asked for), else the
        newest earlier point that has it. SGLang creates a labelled series at its first use, so an
        older point may lack a counter that the current one has."""
        earlier = len(self._history) - 1
        if earlier < 1:
            return None
        at = min(bisect.bisect_left(self._history, now - window, hi=earlier, key=_time_of), earlier - 1)
        if has is None or has(self._history[at]):
            return self._history[at]
        for i in range(at + 1, earlier):
            if has(self._history[i]):
                return self._history[i]
        for i in range(at - 1, -1, -1):
            if has(self._history[i]):
                return self._history[i]
        return None

    def _counter_pair(self, now: float, name: str, window: float) -> tuple[_Point, _Point] | None:
        if not self._history or name not in self._history[-1].counters:
            return None
        base = self._base(now, window, lambda p: name in p.counters)
        return None if base is None else (base, self._history[-1])

    def _rate(self, now: float, name: str, window: float) -> float | None:
        pair = self._counter_pair(now, name, window)
        if pair is None:
            return None
        base, current = pair
        dt = current.time - base.time
        return (current.counters[name] - base.counters[name]) / dt if dt > 0 else None

    def _delta(self, now: float, name: str, window: float) -> float | None:
        pair = self._counter_pair(now, name, window)
        return None if pair is None else pair[1].counters[name] - pair[0].counters[name]

    def _recent(self, now: float, name: str) -> Histogram | None:
        if not self._history or name not in self._history[-1].histograms:
            return None
        base = self._base(now, self._latency_window, lambda p: name in p.histograms)
        return None if base is None else self._history[-1].histograms[name].minus(base.histograms[name])

    # -- building the snapshot ----------------------------------------------------------------
    def _snapshot(
        self,
        now: float,
        seq: int,
        engine_state: EngineState,
        engine_pid: int | None,
        reading: MetricsReading | None,
        gpus: Gpus,
    ) -> Snapshot:
        profile = self._profile
        info = self._server_info or {}
        state0 = internal_state(info)
        up = reading is not None

        load = self._load(reading, info, state0)
        throughput = self._throughput(now, reading)
        latency = self._latency(now) if up else Latency()
        spec = self._speculation(reading, info, state0, engine_state, load.running)
        kv_view = self._kv(reading, info, load.running, spec.configured)

        if spec.on and spec.accept_length is not None and (load.running or 0) > 0:
            self._accept.append(spec.accept_length)
        health = self._health(now, spec, load, kv_view, info, state0, gpus) if up else HealthInputs(gpus=gpus)
        findings = evaluate(health)

        return Snapshot(
            seq=seq,
            time=now,
            profile_name=profile.identity.name,
            production=profile.identity.production,
            engine_kind=self._engine_kind,
            engine_state=engine_state,
            engine_pid=engine_pid,
            metrics_source=reading.source if reading is not None else "none",
            throughput=self._same("throughput", throughput),
            load=self._same("load", load),
            latency=self._same("latency", latency),
            speculation=self._same("speculation", spec),
            kv=self._same("kv", kv_view),
            gpus=self._same("gpus", gpus),
            findings=[self._same(f"finding:{f.code}", f) for f in findings],
        )

    def _same(self, key: str, part: _M) -> _M:
        """The previous tick's part when it is equal to this one: the wire models are frozen, so
        consecutive snapshots in the ring buffer share what did not change (most of an idle tick)."""
        previous = self._previous.get(key)
        if previous is not None and type(previous) is type(part) and previous == part:
            return previous
        self._previous[key] = part
        return part

    def _throughput(self, now: float, r: MetricsReading | None) -> Throughput:
        if r is None:
            return Throughput()
        window = self._rate_window
        # SGLang's real-time counters when the page has them (0.5.23); the per-finished-request
        # tokenizer counters otherwise (older versions), which move in bursts as requests end.
        output = self._rate(
            now, "decode_tokens" if "decode_tokens" in r.counters else "generation_tokens", window
        )
        prompt = self._rate(
            now, "prefill_tokens" if "prefill_tokens" in r.counters else "prompt_tokens", window
        )
        return Throughput(
            output_tok_s=_round(output),
            gauge_tok_s=r.gauge("gen_throughput"),
            prompt_tok_s=_round(prompt),
            requests_per_s=_round(self._rate(now, "requests", window), 3),
        )

    def _load(self, r: MetricsReading | None, info: Mapping[str, Any], state0: Mapping[str, Any]) -> Load:
        states = info.get(si.INTERNAL_STATES)
        dp = len(states) if isinstance(states, list) and states else 1
        max_running = _int(state0.get(si.EFFECTIVE_MAX_RUNNING_REQUESTS))
        if max_running is not None:
            max_running *= dp
        else:
            max_running = _int(info.get("max_running_requests")) or self._profile.server.max_running_requests
        if r is None:
            return Load(max_running_requests=max_running)
        retracted = r.counter("retracted_requests")
        return Load(
            running=r.gauge_int("running"),
            queued=r.gauge_int("queued"),
            max_running_requests=max_running,
            retractions_total=None if retracted is None else int(retracted),
        )

    def _latency(self, now: float) -> Latency:
        ttft, itl, e2e = (self._recent(now, name) for name in ("ttft", "itl", "e2e"))
        return Latency(
            ttft_p50_s=_q(ttft, 0.5),
            ttft_p99_s=_q(ttft, 0.99),
            itl_p50_s=_q(itl, 0.5),
            itl_p99_s=_q(itl, 0.99),
            e2e_p50_s=_q(e2e, 0.5),
        )

    def _speculation(
        self,
        r: MetricsReading | None,
        info: Mapping[str, Any],
        state0: Mapping[str, Any],
        engine_state: EngineState,
        running: int | None,
    ) -> Speculation:
        profile = self._profile
        if info:
            algorithm = info.get("speculative_algorithm")
            configured = isinstance(algorithm, str) and algorithm.upper() not in ("", "NONE")
        else:
            algorithm = profile.speculation.algorithm if profile.speculative else None
            configured = profile.speculative
        if not configured:
            return Speculation(
                configured=False,
                on=False,
                off_reason="not_configured",
                off_detail="This deployment runs without a draft model (no speculative algorithm).",
            )
        live = state0.get(READBACK_FIELD)
        live = live if isinstance(live, Mapping) else {}
        topk = _int(info.get("speculative_eagle_topk")) or profile.speculation.eagle_topk
        base = {
            "configured": True,
            "algorithm": str(algorithm) if algorithm else None,
            "topk": topk,
            "threshold": _int(live.get("threshold")),
            "threshold_available": bool(live),
            "pinned_steps": _int(live.get("pinned_steps")),
            "prebuilt_steps": [int(s) for s in live.get("prebuilt_steps") or [] if isinstance(s, int)],
        }
        if r is None:
            down = engine_state not in SCRAPED_STATES or self._engine_url is None
            return Speculation(
                **base,
                on=None,
                off_reason="engine_down" if down else "unknown",
                off_detail=(
                    f"The engine is {engine_state}: nothing is decoding."
                    if down
                    else "SGLang did not answer this tick, so the speculation state is unknown."
                ),
            )
        steps = r.gauge_int("spec_num_steps") if r.source == "metrics" else None
        if steps is None:
            steps = _int(live.get("active_steps"))
        if steps is None:
            steps = r.gauge_int("spec_num_steps")
        draft_tokens = r.gauge_int("spec_num_draft_tokens") or _int(
            state0.get("speculative_num_draft_tokens")
        )
        accept = r.gauge("spec_accept_length")
        if accept is None or accept == 0:
            accept = self._accept_from_counters()
        on = None if steps is None else steps > 0
        reason, detail = (None, None) if on is not False else self._off_reason(live, running, info)
        return Speculation(
            **base,
            on=on,
            steps=steps,
            draft_tokens=draft_tokens,
            accept_length=_round(accept, 3) if accept else None,
            accept_rate=r.gauge("spec_accept_rate"),
            off_reason=reason,
            off_detail=detail,
        )

    def _accept_from_counters(self) -> float | None:
        """generated tokens / verify calls over the window (reference §5.5), when the gauge is absent."""
        if not self._history:
            return None
        now = self._history[-1].time
        tokens = self._delta(now, "generation_tokens", self._rate_window)
        verifies = self._delta(now, "spec_verify_calls", self._rate_window)
        if not tokens or not verifies or verifies <= 0:
            return None
        return tokens / verifies

    def _off_reason(
        self, live: Mapping[str, Any], running: int | None, info: Mapping[str, Any]
    ) -> tuple[SpecOffReason, str]:
        threshold = _int(live.get("threshold"))
        if threshold is None and self._profile.speculation.adaptive and self._adaptive_reason is None:
            # No live read-back (SGLang without our patch): the launch config's 0-step slot still
            # holds batches at or above the profile's threshold.
            threshold = self._profile.speculation.threshold
        if (
            threshold is not None
            and threshold != NO_THRESHOLD
            and running is not None
            and running >= threshold
        ):
            if threshold == 1:
                return "above_threshold", "The speculation threshold is 1: the server never speculates."
            return (
                "above_threshold",
                f"{running} requests are running, at or above the threshold of {threshold}: the server "
                "decodes without drafting until the batch is smaller than that.",
            )
        adaptive = info.get("speculative_adaptive")
        if adaptive is True or (adaptive is None and self._profile.speculation.adaptive):
            ema = live.get("ema_accept_len")
            said = f" (its recent accept length is {ema:.2f})" if isinstance(ema, int | float) else ""
            return (
                "adaptive_chose_zero",
                f"SGLang's adaptive policy chose 0 draft steps for this batch size{said}: drafting was "
                "not paying for itself.",
            )
        return "unknown", "The server reports 0 speculative steps without a threshold or adaptive policy."

    def _kv(
        self, r: MetricsReading | None, info: Mapping[str, Any], running: int | None, spec_on: bool
    ) -> KvView:
        profile = self._profile
        page = (
            (r.gauge_int("page_size") if r else None)
            or _int(info.get("page_size"))
            or profile.server.page_size
        )
        shape = self._shape if spec_on else None
        reserve_off = kv.reserve_per_decode(None, page)
        reserve_on = kv.reserve_per_decode(shape, page) if shape is not None else None
        pool = (r.gauge_int("max_total_num_tokens") if r else None) or _int(info.get(si.MAX_TOTAL_NUM_TOKENS))
        pool = pool or profile.server.max_total_tokens
        drafter = kv.view_fields(profile, page, pool)
        if r is None:
            return KvView(
                pool_tokens=pool,
                page_size=page,
                reserve_per_request_on=reserve_on,
                reserve_per_request_off=reserve_off,
                **drafter,
            )
        used = r.gauge_int("kv_used_tokens")
        if used is None:
            used = r.gauge_int("num_used_tokens")
        usage = r.gauge("token_usage")
        if used is None and usage is not None and pool:
            used = int(usage * pool)
        available, evictable = r.gauge_int("kv_available_tokens"), r.gauge_int("kv_evictable_tokens")
        if available is not None:
            free: int | None = available + (evictable or 0)
        else:
            free = pool - used if pool is not None and used is not None else None
        per_request = reserve_on if reserve_on is not None else reserve_off
        reserved = running * per_request if running is not None else None
        share = None
        if reserve_on is not None and running is not None and pool:
            share = round(running * (reserve_on - reserve_off) / pool, 4)
        return KvView(
            pool_tokens=pool,
            used_tokens=used,
            reserved_tokens=reserved,
            free_tokens=free,
            page_size=page,
            reserve_per_request_on=reserve_on,
            reserve_per_request_off=reserve_off,
            speculation_share=share,
            **drafter,
        )

    def _health(
        self,
        now: float,
        spec: Speculation,
        load: Load,
        kv_view: KvView,
        info: Mapping[str, Any],
        state0: Mapping[str, Any],
        gpus: Gpus,
    ) -> HealthInputs:
        profile = self._profile
        graph_sizes = [int(b) for b in state0.get(si.DECODE_CUDA_GRAPH_BS) or [] if isinstance(b, int)]
        graph_max = max(graph_sizes) if graph_sizes else None
        if graph_max is None:
            graph_max = _int(info.get("cuda_graph_max_bs_decode"))  # 0.5.23's ServerArgs field
        if graph_max is None:
            graph_max = profile.server.cuda_graph_max_bs
        adaptive_resolved = info.get("speculative_adaptive")
        return HealthInputs(
            speculating=bool(spec.on),
            algorithm=spec.algorithm,
            draft_path=profile.model.draft_path,
            accept_lengths=tuple(self._accept),
            topk=spec.topk,
            running=load.running,
            queued=load.queued,
            max_running_requests=load.max_running_requests,
            cuda_graph_max_bs=graph_max,
            decode_passes_no_graph_delta=self._delta(now, "decode_passes_no_graph", self._retraction_window),
            adaptive_requested=profile.speculative and profile.speculation.adaptive,
            adaptive_resolved=adaptive_resolved if isinstance(adaptive_resolved, bool) else None,
            adaptive_off_reason=self._adaptive_reason,
            speculation_share=kv_view.speculation_share,
            reserve_on=kv_view.reserve_per_request_on,
            reserve_off=kv_view.reserve_per_request_off,
            retractions_delta=self._delta(now, "retracted_requests", self._retraction_window),
            retraction_window_s=self._retraction_window,
            gpus=gpus,
        )


def _time_of(point: _Point) -> float:
    return point.time


def _shape_of(profile: Profile) -> kv.SpecShape | None:
    """The speculation shape SGLang reserves KV for (computed once per profile: it is not cheap)."""
    try:
        return kv.spec_shape_for_profile(profile)
    except ValueError:  # e.g. a threshold of 1, which check_profile reports on its own
        return None


def _int(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return int(value)


def _round(value: float | None, digits: int = 1) -> float | None:
    return None if value is None else round(value, digits)


def _q(hist: Histogram | None, q: float) -> float | None:
    if hist is None or hist.count <= 0:
        return None
    value = hist.quantile(q)
    return None if value is None else round(value, 4)
