"""EngineClient over real HTTP against the simulated engine: the read-back round trip, refusals,
the typed /server_info view, /metrics through the one reader, /flush_cache."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from agent.profile.store import load_profile
from agent.sglang.client import EngineClient, EngineError, EngineRefused
from agent.sglang.live_control import LIVE_STEPS_KEY, LIVE_THRESHOLD_KEY, RELEASE_PINNED_STEPS
from agent.sim.server import run_sim

PROFILE = load_profile(Path(__file__).resolve().parents[2] / "profiles" / "local-sim.toml")


async def test_set_live_returns_the_state_read_back() -> None:
    async with run_sim(PROFILE, port=0, speedup=50, seed=1) as sim, httpx.AsyncClient() as http:
        client = EngineClient(sim.url, http)
        info = await client.server_info()
        assert info.version == "0.5.23" and info.speculative and info.adaptive is True
        assert info.live is not None and info.live.threshold == PROFILE.speculation.threshold
        live = await client.set_live(**{LIVE_THRESHOLD_KEY: 9})
        assert (
            live.threshold == 9 and sim.engine.controller is not None and sim.engine.controller.threshold == 9
        )
        pinned = await client.set_live(**{LIVE_STEPS_KEY: 2})
        assert pinned.pinned and pinned.pinned_steps == 2 and pinned.threshold == 9
        released = await client.set_live(**{LIVE_STEPS_KEY: RELEASE_PINNED_STEPS})
        assert not released.pinned


async def test_a_refusal_changes_nothing_and_says_what_was_refused() -> None:
    async with run_sim(PROFILE, port=0, speedup=50, seed=1) as sim, httpx.AsyncClient() as http:
        client = EngineClient(sim.url, http)
        before = await client.live_state()
        with pytest.raises(EngineRefused, match=r"refused adaptive_spec_steps=7 \(answer \[false\]\)"):
            await client.set_live(**{LIVE_STEPS_KEY: 7})  # not a state built at start-up
        with pytest.raises(EngineRefused, match="HTTP 400"):
            await client.set_internal_state({LIVE_THRESHOLD_KEY: "x"})  # type: ignore[dict-item]
        with pytest.raises(ValueError, match="not a live key"):
            await client.set_live(page_size=2)
        assert await client.live_state() == before


async def test_metrics_come_through_the_one_reader_and_flush_cache_works() -> None:
    async with run_sim(PROFILE, port=0, speedup=50, seed=1) as sim, httpx.AsyncClient() as http:
        client = EngineClient(sim.url, http)
        reading = await client.metrics()
        assert reading is not None and reading.gauge_int("running") == 0
        assert reading.gauge_int("max_total_num_tokens") == sim.server.config.pool_tokens
        assert await client.flush_cache() is None
        assert await client.healthy() and await client.served_model() == PROFILE.model.served_name


async def test_an_engine_that_does_not_answer_is_an_engine_error() -> None:
    async with httpx.AsyncClient() as http:
        client = EngineClient("http://127.0.0.1:9", http, timeout_s=1.0)
        with pytest.raises(EngineError, match="GET /server_info: ConnectError"):
            await client.server_info()
        assert not await client.healthy()


async def test_start_profile_on_an_engine_without_a_profiler_is_an_engine_error(tmp_path: Path) -> None:
    # the simulated engine has no torch profiler: the route is not there, and the error says so
    async with run_sim(PROFILE, port=0, speedup=50, seed=1) as sim, httpx.AsyncClient() as http:
        client = EngineClient(sim.url, http)
        with pytest.raises(EngineError, match=r"/start_profile answered HTTP 404"):
            await client.start_profile(str(tmp_path), 4, "plain")
        assert list(tmp_path.iterdir()) == []
