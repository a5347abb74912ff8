"""The checks ``agent smoke`` runs against one ready engine, each timed, each with what it expected.

Accept length is measured per request from ``/generate``'s ``meta_info``: ``completion_tokens /
spec_verify_ct`` (SGLang 0.5.23 counts a verify call for every decode round of a speculative server,
0-step rounds included; the first token comes from the prefill). With the oracle head every draft is
accepted, so a request of ``N`` tokens at ``k`` steps takes ``ceil((N-1)/(k+1))`` verify calls and the
accept length is exactly ``N / ceil((N-1)/(k+1))`` (the real engine: 48 tokens → 4.00 at 3 steps, 2.00
at 1, 48/47 = 1.02 without speculation). ``REQUEST_TOKENS`` = 129 makes ``N-1`` = 128 a multiple of
every k+1 up to 8 but 5 and 7. The tolerance is one verify call more or fewer than that count
(``expected² / N``) plus 0.02: what an overlap-scheduler round at the end could add, and no more. The
random head yields one token per verify whatever the step count: ``N/(N-1)``, as without speculation.
"""

from __future__ import annotations

import math
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

from agent.control.live import apply_live
from agent.engine.record import EngineKind
from agent.profile.schema import Profile
from agent.sglang import live_control, paths
from agent.sglang.client import EngineClient
from agent.telemetry.collector import Collector
from agent.telemetry.nvml import NoGpuSampler

REQUEST_TOKENS = 129
GENERATE_TIMEOUT_S = 120.0
CONTROL_TIMEOUT_S = 30.0
PROMPT = "w10 w11 w12 w13 w14 w15 w16 w17"


@dataclass
class CheckRow:
    engine: str
    check: str
    expected: str
    measured: str = ""
    ok: bool = False
    seconds: float = 0.0
    detail: str = ""


@dataclass
class Report:
    rows: list[CheckRow] = field(default_factory=list)
    on_row: Callable[[CheckRow], None] | None = None

    def add(self, row: CheckRow) -> CheckRow:
        self.rows.append(row)
        if self.on_row is not None:
            self.on_row(row)
        return row

    @property
    def ok(self) -> bool:
        return bool(self.rows) and all(r.ok for r in self.rows)


def oracle_accept(steps: int, tokens: int = REQUEST_TOKENS) -> float:
    """Accept length of a ``tokens``-token request when every draft of ``steps`` steps is accepted."""
    if steps <= 0:
        return tokens / (tokens - 1)
    return tokens / math.ceil((tokens - 1) / (steps + 1))


def tolerance(expected: float, tokens: int = REQUEST_TOKENS) -> float:
    return expected * expected / tokens + 0.02


def launch_steps(profile: Profile) -> int:
    """The step the adaptive policy starts at (and a release returns to): SGLang's rule per slot."""
    spec = profile.speculation
    candidates = sorted(set(spec.live_steps)) or [spec.num_steps or 0]
    initial = spec.num_steps or 0
    return initial if initial in candidates else candidates[len(candidates) // 2]


async def measure_accept(http: httpx.AsyncClient, url: str) -> tuple[float, int, int]:
    """(accept length, completion tokens, verify calls) of one greedy request."""
    body = {
        "text": PROMPT,
        "sampling_params": {"max_new_tokens": REQUEST_TOKENS, "temperature": 0, "ignore_eos": True},
    }
    response = await http.post(url + paths.GENERATE, json=body, timeout=GENERATE_TIMEOUT_S)
    response.raise_for_status()
    data = response.json()
    meta = (data[0] if isinstance(data, list) else data)["meta_info"]
    tokens, verify = int(meta["completion_tokens"]), int(meta.get("spec_verify_ct") or 0)
    if verify <= 0:
        raise ValueError(f"meta_info has no spec_verify_ct (completion_tokens {tokens}): not speculating")
    return tokens / verify, tokens, verify


class EngineChecks:
    """One engine's checks; every HTTP call has a timeout, every row its duration."""

    def __init__(
        self, label: str, url: str, profile: Profile, http: httpx.AsyncClient, report: Report
    ) -> None:
        self.label = label
        self.url = url
        self.profile = profile
        self.http = http
        self.report = report

    async def run(self, name: str, expected: str, body: Callable[[CheckRow], Awaitable[None]]) -> CheckRow:
        row = CheckRow(self.label, name, expected)
        started = time.monotonic()
        try:
            await body(row)
        except httpx.HTTPStatusError as exc:
            row.ok = False
            row.measured = row.measured or f"HTTP {exc.response.status_code}"
            row.detail = f"{exc.request.method} {exc.request.url.path}: {exc.response.text[:300]}"
        except (httpx.HTTPError, ValueError, KeyError, TypeError) as exc:
            row.ok = False
            row.measured = row.measured or "error"
            row.detail = f"{type(exc).__name__}: {exc}"
        row.seconds = time.monotonic() - started
        return self.report.add(row)

    async def set_live(self, key: str, value: int) -> str | None:
        """Apply one live key; None when applied and read back, else why not."""
        outcome = await apply_live(self.http, self.url, {key: value}, {})
        return None if outcome.ok else outcome.message

    async def accept_after(self, name: str, key: str, value: int, expected: float) -> CheckRow:
        async def body(row: CheckRow) -> None:
            refused = await self.set_live(key, value)
            if refused is not None:
                row.measured, row.detail = "not applied", refused
                return
            accept, tokens, verify = await measure_accept(self.http, self.url)
            row.measured = f"{accept:.2f} ({tokens} tokens / {verify} verify)"
            row.ok = abs(accept - expected) <= tolerance(expected)

        return await self.run(name, f"≈ {expected:.2f} ± {tolerance(expected):.2f}", body)

    async def refused(self, name: str, key: str, value: Any) -> CheckRow:
        """An invalid value: the engine refuses it (HTTP 400 or ``[false]``) and the live state is unchanged."""

        async def body(row: CheckRow) -> None:
            engine = EngineClient(self.url, self.http, timeout_s=CONTROL_TIMEOUT_S)
            before = await engine.live_state()
            response = await self.http.post(
                self.url + paths.SET_INTERNAL_STATE,
                json={"server_args": {key: value}},
                timeout=CONTROL_TIMEOUT_S,
            )
            answer = (
                response.json()
                if response.headers.get("content-type", "").startswith("application/json")
                else None
            )
            refused = response.status_code >= 400 or (
                isinstance(answer, list) and not all(x is True for x in answer)
            )
            after = await engine.live_state()
            unchanged = (
                before is not None
                and after is not None
                and (before.threshold, before.pinned_steps, before.prebuilt_steps)
                == (after.threshold, after.pinned_steps, after.prebuilt_steps)
            )
            row.measured = refusal_words(response.status_code, answer)
            row.measured += ", state unchanged" if unchanged else ", STATE CHANGED"
            if response.status_code >= 400:
                row.detail = f"the engine said: {response.text.strip()}"
            row.ok = refused and unchanged

        return await self.run(name, "refused, nothing changed", body)


def refusal_words(status: int, answer: Any) -> str:
    """How the engine answered an invalid value, in words (never its JSON cut at 60 characters)."""
    if status >= 400:
        return f"refused with HTTP {status}"
    if isinstance(answer, list) and answer and not any(x is True for x in answer):
        return f"refused: {'the scheduler' if len(answer) == 1 else f'all {len(answer)} schedulers'} answered false"
    if isinstance(answer, list) and not all(x is True for x in answer):
        return "refused by some schedulers, accepted by others"
    return f"accepted (HTTP {status})"


async def snapshot_check(checks: EngineChecks, kind: EngineKind, pid: int | None, pool_cap: int) -> CheckRow:
    """The agent's own Collector reads the engine's real /metrics and /server_info into a Snapshot."""
    spec = checks.profile.speculation
    prebuilt = sorted({*spec.live_steps, *([0] if spec.threshold else [])})

    async def body(row: CheckRow) -> None:
        collector = Collector(
            checks.url,
            checks.profile,
            NoGpuSampler(),
            checks.http,
            sample_gpus_in_thread=False,
        )
        try:
            snap = await collector.tick("ready", pid)  # an Observation: the snapshot's parts
        finally:
            await collector.aclose()
        s, kv = snap.speculation, snap.kv
        row.measured = (
            f"source {snap.metrics_source}, threshold {s.threshold}, prebuilt {s.prebuilt_steps}, "
            f"steps {s.steps}, KV pool {kv.pool_tokens}"
        )
        problems = [
            *([] if snap.metrics_source == "metrics" else [f"{paths.METRICS} was not read"]),
            *([] if s.configured else ["speculation not configured"]),
            *([] if s.threshold_available else [f"no {live_control.READBACK_FIELD} in {paths.SERVER_INFO}"]),
            *(
                []
                if s.threshold == (spec.threshold or 0)
                else [f"threshold {s.threshold} != {spec.threshold}"]
            ),
            *([] if s.prebuilt_steps == prebuilt else [f"prebuilt {s.prebuilt_steps} != {prebuilt}"]),
            *(
                []
                if kv.pool_tokens and 0 < kv.pool_tokens <= pool_cap
                else [f"KV pool {kv.pool_tokens} not in 1..{pool_cap}"]
            ),
        ]
        row.ok, row.detail = not problems, "; ".join(problems)

    return await checks.run(
        f"snapshot from real {paths.METRICS} and {paths.SERVER_INFO}",
        f"speculation configured, threshold {spec.threshold or 0}, prebuilt {prebuilt}, pool <= {pool_cap}",
        body,
    )


async def oracle_checks(checks: EngineChecks) -> None:
    """Every draft accepted: the accept length shows the step count the engine runs at."""
    spec = checks.profile.speculation
    live = sorted(spec.live_steps)
    start = launch_steps(checks.profile)
    await checks.accept_after(
        "threshold 1 (never speculate)", live_control.LIVE_THRESHOLD_KEY, 1, oracle_accept(0)
    )
    await checks.accept_after(
        "threshold 0 (always speculate)", live_control.LIVE_THRESHOLD_KEY, 0, oracle_accept(start)
    )
    for steps in live:
        await checks.accept_after(
            f"steps pinned to {steps}", live_control.LIVE_STEPS_KEY, steps, oracle_accept(steps)
        )
    await checks.accept_after(
        "steps released (-1): re-learns from the launch step",
        live_control.LIVE_STEPS_KEY,
        live_control.RELEASE_PINNED_STEPS,
        oracle_accept(start),
    )
    unbuilt = max([0, *live]) + 4
    await checks.refused(f"steps {unbuilt} (not built) refused", live_control.LIVE_STEPS_KEY, unbuilt)
    await checks.refused('threshold "x" (wrong type) refused', live_control.LIVE_THRESHOLD_KEY, "x")


async def random_checks(checks: EngineChecks) -> None:
    """Drafts of a random head are rejected: accept length ~1 whatever the step count."""
    live = sorted(checks.profile.speculation.live_steps)
    await checks.accept_after(
        "threshold 0, random head", live_control.LIVE_THRESHOLD_KEY, 0, oracle_accept(0)
    )
    if live:
        await checks.accept_after(
            f"steps pinned to {live[-1]}, random head",
            live_control.LIVE_STEPS_KEY,
            live[-1],
            oracle_accept(0),
        )
        await checks.accept_after(
            "steps released (-1), random head",
            live_control.LIVE_STEPS_KEY,
            live_control.RELEASE_PINNED_STEPS,
            oracle_accept(0),
        )
