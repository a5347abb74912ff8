"""The KV screen against the real agent on the simulated engine: "off" (0 steps) against no drafter, and overfull."""

from __future__ import annotations

from console_testkit import RunningAgent, text_of, until
from textual.widgets import Input

from console.app import ConsoleApp
from console.link.local import LocalLink
from console.screens.kv import KvScreen


async def test_kv_screen_shows_off_against_no_drafter_and_says_when_it_does_not_fit(
    agent: RunningAgent,
) -> None:
    app = ConsoleApp(LocalLink(agent.socket), operator="pilot")  # type: ignore[arg-type]
    async with app.run_test(size=(120, 40)) as pilot:
        await until(
            lambda: app.model.latest is not None and app.model.latest.kv.pool_tokens,
            what="a snapshot with the engine's KV pool",
        )
        await pilot.press("k")
        assert isinstance(app.screen, KvScreen)
        assert app.model.latest is not None
        kv = app.model.latest.kv
        # local-sim is 3/1/4 adaptive with a threshold: 0 steps keeps the widest candidate's reserve
        assert (kv.reserve_per_request_on, kv.reserve_per_request_zero_step, kv.reserve_per_request_off) == (
            8,
            8,
            2,
        )
        assert (
            kv.pool_tokens
            and kv.pool_tokens_without_drafter
            and kv.pool_tokens_without_drafter > kv.pool_tokens
        )
        await until(lambda: "off (0 steps) 8 tokens" in text_of(app, "#reserve"), what="the reserve line")
        reserve = text_of(app, "#reserve")
        assert (
            "no drafter 2 tokens" in reserve
            and f"without the drafter {kv.pool_tokens_without_drafter:,} tokens" in reserve
        )

        # More requests of 4000 tokens than the pool holds, whatever size the sim's pool is.
        running = kv.pool_tokens // 4000 + 8
        app.screen.query_one("#whatif-context", Input).value = "4000"
        app.screen.query_one("#whatif-running", Input).value = str(running)
        await pilot.click("#whatif-ask")
        await until(lambda: "does not fit" in text_of(app, "#whatif-result"), what="the what-if answer")
        answer = text_of(app, "#whatif-result")
        assert "speculation on" in answer and "off (0 steps)" in answer and "no drafter" in answer
        assert f"{running} requests of 4000 tokens hold {running * (4000 + 8):,} tokens" in answer

        running = app.screen.query_one("#whatif-running", Input)
        running.value = "4"
        running.focus()
        await pilot.press("enter")  # the Input's own submit asks again
        await until(
            lambda: "the pool holds all 4 requests" in text_of(app, "#whatif-result"),
            what="a fit",
            explain=lambda: text_of(app, "#whatif-result"),
        )
