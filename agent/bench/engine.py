"""What the benchmark reads from and sets on the engine, through SGLang 0.5.23's HTTP surface.

Accept length comes from the engine, never the client: the counter ratio
``generation_tokens_total / spec_verify_calls_total`` over the measured window (both tokenizer-side
counters, advanced when a request finishes, so the window holds exactly the measured requests), and
``/server_info`` → ``internal_states[0].avg_spec_accept_length`` after a ``/flush_cache`` taken just
before the level (bench_serving's way). Both are recorded, with which one ``accept_length`` is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx
from prometheus_client.parser import text_string_to_metric_families

from agent.sglang.live_control import LIVE_STEPS_KEY, LIVE_THRESHOLD_KEY, READBACK_FIELD, RELEASE_PINNED_STEPS

# Metric names SGLang 0.5.23 exports (sglang-0.5.23.md §5); both prefixes are seen in the wild.
GENERATION_TOKENS = "generation_tokens"  # counter family name without the _total suffix
SPEC_VERIFY_CALLS = "spec_verify_calls"
NUM_RUNNING_REQS = "num_running_reqs"
_PREFIXES = ("sglang:", "sglang_")


class EngineError(RuntimeError):
    """The engine answered in a way the benchmark cannot continue from (with the reason)."""


@dataclass(frozen=True)
class MetricsReading:
    generation_tokens: float | None
    spec_verify_calls: float | None
    num_running_reqs: float | None


def parse_metrics(text: str) -> MetricsReading:
    """Sum each metric over its label sets (tp/pp ranks, is_streaming) in SGLang's exposition text.

    None for a metric the server does not declare at all (e.g. no speculation counters)."""
    totals: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        name = family.name
        for prefix in _PREFIXES:
            if name.startswith(prefix):
                name = name[len(prefix) :]
                break
        else:
            continue
        # A declared labelled counter with no series yet (nothing counted so far) reads 0.
        totals.setdefault(name, 0.0)
        for sample in family.samples:
            if sample.name.endswith(("_created", "_bucket", "_count", "_sum")):
                continue
            totals[name] = totals.get(name, 0.0) + float(sample.value)
    return MetricsReading(
        generation_tokens=totals.get(GENERATION_TOKENS),
        spec_verify_calls=totals.get(SPEC_VERIFY_CALLS),
        num_running_reqs=totals.get(NUM_RUNNING_REQS),
    )


def live_unavailable_reason(server_info: dict[str, Any]) -> str | None:
    """Why the live threshold cannot be used on this server, in SGLang's own words where it has them.

    Mirrors ``adaptive_unsupported_reason`` (``srt/speculative/adaptive_spec_params.py``) on the
    resolved fields ``/server_info`` returns; the read-back field of our patch proves the live keys
    exist.
    """
    algorithm = server_info.get("speculative_algorithm")
    if algorithm in (None, "", "NONE", "none"):
        return "the server runs without speculative decoding (speculative_algorithm is not set)"
    state = (server_info.get("internal_states") or [{}])[0]
    if server_info.get("speculative_adaptive") is False or state.get("speculative_adaptive") is False:
        cause = _sglang_adaptive_reason(server_info)
        return f"speculative_adaptive disabled: {cause}" if cause else "speculative_adaptive is off"
    if server_info.get("speculative_adaptive") is None and state.get("speculative_adaptive") is None:
        return "the server does not report speculative_adaptive in /server_info"
    if READBACK_FIELD not in state:
        return (
            f"/server_info internal_states[0] has no {READBACK_FIELD!r}: the server runs an SGLang "
            f"without k25console's live-threshold patch"
        )
    return None


def _sglang_adaptive_reason(info: dict[str, Any]) -> str | None:
    algorithm = info.get("speculative_algorithm")
    topk = info.get("speculative_eagle_topk")
    if algorithm not in ("EAGLE", "EAGLE3", "NEXTN"):
        return f"speculative_algorithm={algorithm} (only EAGLE/EAGLE3 are supported)"
    if topk is not None and topk != 1:
        return f"speculative_eagle_topk={topk} (only topk=1 is supported)"
    if info.get("enable_dp_attention"):
        return "attention DP is not supported (adaptive tier decisions are not synchronized across DP ranks)"
    if info.get("enable_multi_layer_eagle"):
        return "enable_multi_layer_eagle=True is not supported (MultiLayerEagleWorkerV2 does not implement adaptive)"
    if info.get("enable_two_batch_overlap"):
        return "enable_two_batch_overlap=True is not supported (adaptive state swap would discard the TboAttnBackend wrapper)"
    if info.get("enable_pdmux"):
        return "enable_pdmux=True is not supported (adaptive state swap does not update decode_attn_backend_group)"
    return None


class EngineProbe:
    """The engine's control and telemetry endpoints, as the benchmark uses them."""

    def __init__(
        self,
        client: httpx.AsyncClient,
        base_url: str,
        headers: dict[str, str],
        admin_headers: dict[str, str] | None = None,
    ) -> None:
        self.client = client
        self.base_url = base_url.rstrip("/")
        self.headers = headers
        self.admin_headers = admin_headers if admin_headers else headers

    async def _get(self, path: str) -> httpx.Response:
        try:
            return await self.client.get(f"{self.base_url}{path}", headers=self.headers, timeout=30.0)
        except httpx.HTTPError as exc:
            raise EngineError(f"{self.base_url}{path}: {type(exc).__name__}: {exc}") from exc

    async def server_info(self) -> dict[str, Any]:
        response = await self._get("/server_info")
        if response.status_code != 200:
            raise EngineError(f"/server_info answered HTTP {response.status_code}: {response.text[:200]}")
        data: dict[str, Any] = response.json()
        return data

    async def served_model(self) -> str:
        response = await self._get("/v1/models")
        if response.status_code == 200:
            models = response.json().get("data") or []
            if models:
                return str(models[0]["id"])
        response = await self._get("/model_info")
        if response.status_code != 200:
            raise EngineError(f"/model_info answered HTTP {response.status_code}")
        info = response.json()
        return str(info.get("served_model_name") or info.get("model_path"))

    async def healthy(self) -> bool:
        try:
            response = await self.client.get(f"{self.base_url}/health", timeout=10.0)
        except httpx.HTTPError:
            return False
        return response.status_code == 200

    async def metrics(self) -> MetricsReading | None:
        """None when the server exports no metrics (launched without --enable-metrics)."""
        response = await self._get("/metrics")
        if response.status_code != 200:
            return None
        return parse_metrics(response.text)

    async def flush_cache(self, attempts: int = 20) -> str | None:
        """Reset the radix cache and the accept-length totals; the reason when it could not."""
        last = ""
        for _ in range(attempts):
            try:
                response = await self.client.post(
                    f"{self.base_url}/flush_cache",
                    params={"timeout": 5},
                    headers=self.admin_headers,
                    timeout=30.0,
                )
            except httpx.HTTPError as exc:
                raise EngineError(f"/flush_cache: {type(exc).__name__}: {exc}") from exc
            if response.status_code == 200:
                return None
            last = f"HTTP {response.status_code}: {response.text[:200]}"
            if response.status_code in (401, 403, 404):
                break
        return f"/flush_cache refused ({last})"

    async def live_state(self) -> dict[str, Any] | None:
        info = await self.server_info()
        state = (info.get("internal_states") or [{}])[0]
        live = state.get(READBACK_FIELD)
        return live if isinstance(live, dict) else None

    async def _set_live(self, key: str, value: int) -> dict[str, Any]:
        """Set one live key; EngineError with SGLang's answer if refused. Returns the read-back."""
        try:
            response = await self.client.post(
                f"{self.base_url}/set_internal_state",
                json={"server_args": {key: value}},
                headers=self.admin_headers,
                timeout=30.0,
            )
        except httpx.HTTPError as exc:
            raise EngineError(f"/set_internal_state: {type(exc).__name__}: {exc}") from exc
        if response.status_code != 200:
            raise EngineError(
                f"/set_internal_state answered HTTP {response.status_code}: {response.text[:200]}"
            )
        answer = response.json()
        if not (isinstance(answer, list) and answer and all(a is True for a in answer)):
            raise EngineError(f"/set_internal_state refused {key}={value}: {answer!r}")
        live = await self.live_state()
        if live is None:
            raise EngineError(f"after setting {key}={value}, /server_info has no {READBACK_FIELD}")
        return live

    async def set_threshold(self, threshold: int) -> None:
        """Set the live threshold and check the read-back; EngineError with SGLang's answer if refused."""
        live = await self._set_live(LIVE_THRESHOLD_KEY, threshold)
        if live.get("threshold") != threshold:
            raise EngineError(
                f"after setting {LIVE_THRESHOLD_KEY}={threshold}, /server_info reads back {live!r}"
            )

    async def reset_steps(self, steps: int) -> None:
        """Put the EMA step policy back at ``steps`` (pin them, then release the pin).

        SGLang's policy is history-dependent: at 2 steps a verify accepts at most 2 drafts, so its
        EMA rarely climbs past the 1.5 that moves it to 3, while at 3 steps it stays above the 1.25
        that moves it down. Which state a level meets depends on the arms before it, which made
        two arms with the same effective setting differ by 6-11% at c=250. Starting every live arm
        from the launch step count makes the arms differ only by their threshold.
        """
        await self._set_live(LIVE_STEPS_KEY, steps)
        await self.release_steps()

    async def release_steps(self) -> None:
        """Give the step choice back to the EMA policy (a pin left by an interrupted reset)."""
        live = await self._set_live(LIVE_STEPS_KEY, RELEASE_PINNED_STEPS)
        if live.get("pinned_steps") != RELEASE_PINNED_STEPS:
            raise EngineError(f"after releasing {LIVE_STEPS_KEY}, /server_info reads back {live!r}")
