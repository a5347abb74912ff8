"""A short soak (about a minute): console and agent under the demo traffic keep memory bounded and log
no errors. ``python -m bench.costs.soak`` runs the full ten minutes and prints the figures."""

from __future__ import annotations

import gc
from collections import Counter

import pytest
from agent_harness import AgentProc
from textual.message_pump import MessagePump

from bench.costs import soak
from console.app import ConsoleApp
from console.link.local import LocalLink

SCREENS = ("overview", "kv", "gpus", "controls", "bench", "profiles", "logs")

GROWTH_BOUND_MIB = {"agent": 24.0, "engine (sim)": 24.0, "console": 40.0}
"""Generous: RSS may grow by allocator noise and buffers filling, not by a leak that scales with time.
Over a minute the agent's ring buffer adds ~60 snapshots and the console's model as many."""


@pytest.mark.slow
def test_a_short_soak_keeps_memory_bounded_and_logs_no_errors() -> None:
    result = soak.soak(minutes=1.0, speedup=10.0, peak=32, period_s=60.0, sample_every_s=2.0)
    soak.print_report(result)
    by_name = {p["name"]: p for p in result["processes"]}
    for name, bound in GROWTH_BOUND_MIB.items():
        process = by_name[name]
        assert process["alive_at_end"], f"{name} was not running at the end"
        assert process["samples"] >= 10, process
        assert process["peak_growth_after_warmup_mib"] < bound, f"{name} grew: {process}"
    assert result["agent_error_lines"] == 0, result["agent_error_examples"]
    assert result["engine_error_lines"] == 0, result["engine_error_examples"]
    assert result["console_error_lines"] == 0, result["console_error_examples"]
    assert result["engine_restarts"] == 0
    console = result["console"]
    assert console["final"] and console["link"] == "connected" and console["drops"] == 0, console
    # It really streamed the whole time: about one snapshot a second reached the console.
    assert console["snapshots_held"] >= 0.7 * result["seconds_run"], console


def _live_widgets() -> Counter[str]:
    gc.collect()
    return Counter(type(o).__name__ for o in gc.get_objects() if isinstance(o, MessagePump))


async def test_switching_screens_keeps_the_number_of_live_widgets_flat(shared_agent: AgentProc) -> None:
    """What the soak's memory figure shows, counted directly: an operator looking around the
    screens for a day must not grow the console."""
    app = ConsoleApp(LocalLink(shared_agent.socket), operator="e2e", readonly=True)
    async with app.run_test(size=(120, 40)) as pilot:
        for mode in SCREENS:  # every screen mounted once
            app.action_show(mode)
            await pilot.pause()
        app.action_show("overview")
        await pilot.pause()
        before = _live_widgets()
        for _ in range(5):
            for mode in SCREENS:
                app.action_show(mode)
                await pilot.pause()
        app.action_show("overview")
        await pilot.pause()
        after = _live_widgets()
        # The last switch's footer recompose removes the old keys some message loops later (on a loaded
        # machine the old and the new FooterKeys were both alive, +12, even after 50 message loops): poll
        # for up to 10 s of the app's own time. A leak stays however long we wait; that does not.
        for _ in range(200):
            if not _grown(before, after):
                break
            await pilot.pause(0.05)
            after = _live_widgets()
    grown = _grown(before, after)
    assert not grown, f"widgets piling up after 35 screen switches: {grown}"


def _grown(before: Counter[str], after: Counter[str]) -> dict[str, int]:
    return {name: after[name] - before[name] for name in after if after[name] - before[name] > 5}
