"""What the benchmark reads from and sets on the engine: ``agent.sglang.client.EngineClient``, plus
the two live-control moves a comparison makes (force a threshold, put the step policy back).

Accept length comes from the engine, never the client: the counter ratio
``generation_tokens_total / spec_verify_calls_total`` over the measured window (both tokenizer-side
counters, advanced when a request finishes, so the window holds exactly the measured requests), and
``/server_info`` → ``internal_states[0].avg_spec_accept_length`` after a ``/flush_cache`` taken just
before the level (bench_serving's way). Both are recorded, with which one ``accept_length`` is. The
counters are read by the same reader as the agent's telemetry (``agent.sglang.reading``).
"""

from __future__ import annotations

import httpx

from agent.sglang.client import EngineClient, EngineError, EngineRefused
from agent.sglang.info_view import live_unavailable_reason
from agent.sglang.live_control import LIVE_STEPS_KEY, LIVE_THRESHOLD_KEY, RELEASE_PINNED_STEPS

__all__ = ["EngineError", "EngineProbe", "EngineRefused", "live_unavailable_reason"]


class EngineProbe(EngineClient):
    """The engine's control and telemetry endpoints, as the benchmark uses them."""

    def __init__(
        self,
        client: httpx.AsyncClient,
        base_url: str,
        headers: dict[str, str],
        admin_headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(base_url, client, headers=headers, admin_headers=admin_headers, timeout_s=30.0)

    @property
    def base_url(self) -> str:
        return self.url

    async def set_threshold(self, threshold: int) -> None:
        """Set the live threshold and check the read-back; EngineError with SGLang's answer if refused."""
        await self.set_live(**{LIVE_THRESHOLD_KEY: threshold})

    async def reset_steps(self, steps: int) -> None:
        """Put the EMA step policy back at ``steps`` (pin them, then release the pin).

        SGLang's policy is history-dependent: at 2 steps a verify accepts at most 2 drafts, so its
        EMA rarely climbs past the 1.5 that moves it to 3, while at 3 steps it stays above the 1.25
        that moves it down. Which state a level meets depends on the arms before it, which made
        two arms with the same effective setting differ by 6-11% at c=250. Starting every live arm
        from the launch step count makes the arms differ only by their threshold.
        """
        await self.set_live(**{LIVE_STEPS_KEY: steps})
        await self.release_steps()

    async def release_steps(self) -> None:
        """Give the step choice back to the EMA policy (a pin left by an interrupted reset)."""
        await self.set_live(**{LIVE_STEPS_KEY: RELEASE_PINNED_STEPS})
