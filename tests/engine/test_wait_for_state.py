"""``Supervisor.wait_for_state`` must let a cancel through even when it lands in the very tick the
awaited state change happens: that is where `agent smoke`'s SIGTERM lands when it is sent on the
"engine.ready" line (Python 3.11's ``asyncio.wait_for`` then returned the state and swallowed the
cancel, so the smoke ran its checks on and did not exit)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest

from agent.engine.logfile import EngineLog
from agent.engine.spec import EngineSpec
from agent.engine.supervisor import Supervisor
from agent.profile import Profile


def _supervisor(tmp_path: Path, http: httpx.AsyncClient) -> Supervisor:
    def no_spec(_profile: Profile) -> EngineSpec:
        raise AssertionError("nothing is launched here")

    return Supervisor(
        kind="sim",
        record_path=tmp_path / "engine.json",
        engine_log=EngineLog(tmp_path / "engine.log"),
        http=http,
        spec_for=no_spec,
        emit=lambda name, message, data: None,
    )


@pytest.mark.parametrize("timeout_s", [30.0, None])
async def test_a_cancel_in_the_tick_the_state_changes_is_not_swallowed(
    tmp_path: Path, timeout_s: float | None
) -> None:
    async with httpx.AsyncClient() as http:
        sup = _supervisor(tmp_path, http)
        waiting = asyncio.create_task(sup.wait_for_state({"ready"}, timeout_s))
        await asyncio.sleep(0)  # one tick: the waiter is parked on the state-change event
        assert not waiting.done()
        sup._set_state("ready")
        waiting.cancel()  # same tick, as a signal handler's cancel right after "engine.ready"
        with pytest.raises(asyncio.CancelledError):
            await waiting


async def test_it_still_answers_true_on_the_change_and_false_on_timeout(tmp_path: Path) -> None:
    async with httpx.AsyncClient() as http:
        sup = _supervisor(tmp_path, http)
        waiting = asyncio.create_task(sup.wait_for_state({"ready"}, 30.0))
        await asyncio.sleep(0)
        sup._set_state("ready")
        assert await waiting is True
        assert await sup.wait_for_state({"crashed"}, 0.01) is False
        assert await sup.wait_for_state({"ready"}, 0) is True  # already there: no wait at all
