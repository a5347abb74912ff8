"""Issue 50, item 11: a run cut short shows the windows it completed on the Bench screen, with which
levels are whole and which cut. Against the real agent on the simulated engine and the real app
(Pilot); on the code before issue 50 the screen said "It has no table." and showed none."""

from __future__ import annotations

from console_testkit import RunningAgent, screen_text, until, until_async

from console.app import ConsoleApp
from console.link.local import LocalLink
from console.screens.bench import BenchScreen

COMPARE = {"mode": "compare", "concurrency": [1, 4], "repeats": 4, "input_len": 32, "output_len": 32}


async def test_a_cancelled_run_shows_its_completed_windows_marked_partial(agent: RunningAgent) -> None:
    app = ConsoleApp(LocalLink(agent.socket), operator="pilot")
    async with app.run_test(size=(120, 40)) as pilot:
        await until(lambda: app.model.link.state == "connected", what="the link")
        await pilot.press("b")
        screen = app.screen
        assert isinstance(screen, BenchScreen)
        await until(lambda: screen.available, what="the bench runner")
        async with agent.client() as client:
            bench_id = (await client.post("/v1/bench", json=COMPARE)).json()["bench_id"]

            async def stored_levels() -> bool:
                stored = (await client.get(f"/v1/bench/{bench_id}")).json()
                return bool(stored.get("partial") and stored.get("levels"))

            await until_async(stored_levels, timeout_s=60, what="windows stored")
            answer = await client.post(f"/v1/bench/{bench_id}/cancel", json={"operator": "pilot"})
            assert answer.json()["cancelled"], answer.text
        await until(lambda: app.model.bench.runs[bench_id].state == "cancelled", what="the cancel")
        # the words wrap to a second line once the screen lays the status out again: wait for their end
        await until(lambda: "recommends no threshold" in " ".join(screen_text(app).split()), timeout_s=30,
                    what="the partial words, laid out whole")  # fmt: skip
        text = " ".join(screen_text(app).split())
        assert "whole" in text and "cut" in text, text
        assert "It has no table" not in text, text
        assert "a partial run recommends no threshold" in text, text
        assert "output tok/s" in text, text  # the table of the windows it completed
