"""The one client of a running SGLang: telemetry, live control and the benchmark all go through it.

``server_info()`` gives the typed view (``info_view.ServerInfo``), ``metrics()`` the one reader's
reading (``reading.MetricsReading``), ``set_live()`` applies k25console's live keys through
``/set_internal_state`` and returns the live state *read back* from ``/server_info`` (SGLang
answers ``[true]`` per DP rank on success and ``[false]`` with HTTP 200 when a rank refuses: the
answer is checked, then the read-back), ``flush_cache()`` resets the radix cache and the
accept-length totals.

GETs go through ``fetch`` when given (the telemetry loop passes its kept-alive connection, which
halves the CPU of a tick), else through the caller's ``httpx`` client. Control calls (POST) always
use the ``httpx`` client, with the admin key when there is one.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import httpx

from agent.sglang import server_info as si
from agent.sglang.info_view import LiveSpec, ServerInfo, parse_server_info
from agent.sglang.live_control import (
    LIVE_KEYS,
    READBACK_FIELD,
    ROUND_TIMING_FIELD,
    ROUND_TIMING_KEY,
    ZERO_STEP_KEY,
    ZERO_STEP_PATHS,
    ZERO_STEP_VALUE,
)
from agent.sglang.paths import (
    FLUSH_CACHE,
    HEALTH,
    METRICS,
    MODEL_INFO,
    MODELS,
    SERVER_INFO,
    SET_INTERNAL_STATE,
    START_PROFILE,
)
from agent.sglang.reading import MetricsParser, MetricsReading
from agent.sglang.zero_step_view import ZeroStepState

Fetch = Callable[[str], Awaitable[tuple[int, bytes]]]
"""``fetch(path) -> (status, body)``: a GET on the engine."""


class EngineError(RuntimeError):
    """The engine answered in a way the caller cannot continue from (the message says how)."""


class EngineRefused(EngineError):
    """The engine refused a change (``[false]``, or HTTP 400 from SGLang's own validation)."""


def bearer(key: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"} if key else {}


class EngineClient:
    def __init__(
        self,
        url: str,
        http: httpx.AsyncClient,
        *,
        api_key: str | None = None,
        admin_key: str | None = None,
        fetch: Fetch | None = None,
        timeout_s: float = 30.0,
        headers: Mapping[str, str] | None = None,
        admin_headers: Mapping[str, str] | None = None,
    ) -> None:
        self.url = url.rstrip("/")
        self.http = http
        self.headers = dict(headers) if headers is not None else bearer(api_key)
        admin = dict(admin_headers) if admin_headers else bearer(admin_key)
        self.admin_headers = admin or self.headers
        self.timeout_s = timeout_s
        self._fetch = fetch
        self._parser = MetricsParser()

    # -- reads --------------------------------------------------------------------------------------

    async def get(self, path: str) -> tuple[int, bytes]:
        """GET ``path``: ``(status, body)``; EngineError when the engine does not answer."""
        try:
            if self._fetch is not None:
                return await self._fetch(path)
            response = await self.http.get(self.url + path, headers=self.headers, timeout=self.timeout_s)
        except httpx.HTTPError as exc:
            raise EngineError(f"GET {path}: {type(exc).__name__}: {exc}") from exc
        return response.status_code, response.content

    async def server_info_raw(self) -> dict[str, Any]:
        """The raw answer (it holds the API keys: redact before keeping it, ``agent.sglang.redact``)."""
        status, body = await self.get(SERVER_INFO)
        return decode_server_info(status, body)

    async def server_info(self) -> ServerInfo:
        return parse_server_info(await self.server_info_raw())

    async def live_state(self) -> LiveSpec | None:
        """The patch's live read-back; None on a server without the patch."""
        return (await self.server_info()).live

    async def metrics(self) -> MetricsReading | None:
        """The reading of ``/metrics``; None when the server exports none (404: no ``--enable-metrics``)
        or did not answer 200. Successive pages go through one parser, which skips the families that
        did not change since the last page."""
        status, body = await self.get(METRICS)
        if status != 200:
            return None
        return self._parser.parse(body)

    async def healthy(self) -> bool:
        try:
            response = await self.http.get(self.url + HEALTH, timeout=10.0)
        except httpx.HTTPError:
            return False
        return response.status_code == 200

    async def served_model(self) -> str:
        """The model name requests must name (``/v1/models``, else ``/model_info``)."""
        status, body = await self.get(MODELS)
        if status == 200:
            models = _json(body, MODELS).get("data") or []
            if models and isinstance(models[0], Mapping) and models[0].get("id"):
                return str(models[0]["id"])
        status, body = await self.get(MODEL_INFO)
        if status != 200:
            raise EngineError(f"{MODEL_INFO} answered HTTP {status}")
        info = _json(body, MODEL_INFO)
        return str(info.get("served_model_name") or info.get("model_path"))

    # -- control ------------------------------------------------------------------------------------

    async def _post(self, path: str, **kwargs: Any) -> httpx.Response:
        try:
            return await self.http.post(
                self.url + path, headers=self.admin_headers, timeout=self.timeout_s, **kwargs
            )
        except httpx.HTTPError as exc:
            raise EngineError(f"the engine did not answer {path}: {type(exc).__name__}: {exc}") from exc

    async def set_internal_state(self, values: Mapping[str, int | float]) -> None:
        """POST ``/set_internal_state``; EngineRefused unless every DP rank answers true."""
        response = await self._post(SET_INTERNAL_STATE, json={si.SET_INTERNAL_STATE_BODY_FIELD: dict(values)})
        if response.status_code == 400:
            raise EngineRefused(
                f"{SET_INTERNAL_STATE} refused {_shown(values)}: HTTP 400 {response.text[:200]}"
            )
        if response.status_code != 200:
            raise EngineError(
                f"{SET_INTERNAL_STATE} answered HTTP {response.status_code}: {response.text[:200]}"
            )
        try:
            answer = response.json()
        except ValueError:
            raise EngineError(f"{SET_INTERNAL_STATE} answered something that is not JSON") from None
        if not (isinstance(answer, list) and answer and all(a is True for a in answer)):
            raise EngineRefused(
                f"{SET_INTERNAL_STATE} refused {_shown(values)} (answer {json.dumps(answer)}); nothing changed"
            )

    async def set_live(self, **values: int) -> LiveSpec:
        """Apply live keys of the patch, read the live state back and check it took.

        Returns the read-back; EngineRefused when the engine says no, EngineError when the read-back
        is missing or does not show the values asked for.
        """
        unknown = [k for k in values if k not in LIVE_KEYS]
        if unknown:
            raise ValueError(f"not a live key of k25console's patch: {unknown} (known: {list(LIVE_KEYS)})")
        await self.set_internal_state(values)
        try:
            live = await self.live_state()
        except (EngineError, ValueError) as exc:
            raise EngineError(f"applied, but {SERVER_INFO} could not be read back: {exc}") from exc
        if live is None:
            raise EngineError(f"applied, but {SERVER_INFO} has no {READBACK_FIELD} to read back")
        wrong = {k: live.value_of(k) for k, v in values.items() if live.value_of(k) != v}
        if wrong:
            raise EngineError(f"after setting {_shown(values)}, {SERVER_INFO} reads back {_shown(wrong)}")
        return live

    async def set_zero_step_path(self, path: str) -> ZeroStepState:
        """Patch 03: run 0-step rounds by ``path`` (``plain`` or ``verify``), read back and checked."""
        if path not in ZERO_STEP_PATHS:
            raise ValueError(f"the 0-step path must be one of {list(ZERO_STEP_PATHS)}, got {path!r}")
        await self.set_internal_state({ZERO_STEP_KEY: ZERO_STEP_VALUE[path]})
        live = await self.live_state()
        state = live.zero_step if live is not None else None
        if state is None or state.path != path:
            shown = "nothing" if state is None else repr(state.path)
            raise EngineError(f"applied {ZERO_STEP_KEY}={path!r}, but {SERVER_INFO} reads back {shown}")
        return state

    async def time_rounds(self, rounds: int) -> None:
        """Patch 03: time the next ``rounds`` rounds part by part (0 clears the table)."""
        await self.set_internal_state({ROUND_TIMING_KEY: rounds})

    async def round_timing(self) -> dict[str, Any] | None:
        """Patch 03's timing table (``internal_states[0].k25_round_timing``), or None before any."""
        raw = await self.server_info_raw()
        states = raw.get(si.INTERNAL_STATES)
        first = states[0] if isinstance(states, list) and states and isinstance(states[0], Mapping) else {}
        table = first.get(ROUND_TIMING_FIELD)
        return dict(table) if isinstance(table, Mapping) else None

    async def start_profile(
        self, output_dir: str, num_steps: int, prefix: str, with_stack: bool = False
    ) -> None:
        """Ask SGLang's profiler for a trace of the next ``num_steps`` forward steps (CPU and GPU, no
        shapes); the engine writes ``<prefix>-<id>-TP-0.trace.json.gz`` into ``output_dir`` itself."""
        body = {
            "output_dir": output_dir,
            "num_steps": num_steps,
            "activities": ["CPU", "GPU"],
            "with_stack": with_stack,
            "record_shapes": False,
            "profile_prefix": prefix,
        }
        response = await self._post(START_PROFILE, json=body)
        if response.status_code != 200:
            raise EngineError(f"{START_PROFILE} answered HTTP {response.status_code}: {response.text[:300]}")

    async def flush_cache(self, attempts: int = 20) -> str | None:
        """Reset the radix cache and the accept-length totals; the reason when it could not.

        SGLang flushes only when idle: a refusal is retried (``timeout`` lets it wait for idleness).
        """
        last = ""
        for _ in range(attempts):
            response = await self._post(FLUSH_CACHE, params={"timeout": 5})
            if response.status_code == 200:
                return None
            last = f"HTTP {response.status_code}: {response.text[:200]}"
            if response.status_code in (401, 403, 404):
                break
        return f"{FLUSH_CACHE} refused ({last})"


def _shown(values: Mapping[str, Any]) -> str:
    """``key=value, ...``: in an error an operator reads, not a Python dict."""
    return ", ".join(f"{k}={'unset' if v is None else v}" for k, v in values.items())


def _json(body: bytes, what: str) -> dict[str, Any]:
    try:
        data = json.loads(body)
    except ValueError:
        raise EngineError(f"{what} answered something that is not JSON") from None
    if not isinstance(data, dict):
        raise EngineError(f"{what} answered JSON that is not an object")
    return data


def decode_server_info(status: int, body: bytes) -> dict[str, Any]:
    """The raw ``/server_info`` object from an answer; EngineError for anything else."""
    if status != 200:
        raise EngineError(f"GET {SERVER_INFO}: HTTP {status}")
    return _json(body, SERVER_INFO)
