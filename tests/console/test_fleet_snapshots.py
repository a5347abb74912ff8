"""SVG snapshots of the Fleet screen at 100x30 and 80x24: four hosts (two live, one whose link
dropped, one never reached) and the real router's captured view beside them (``fleet_kit``); and at
100x30 the same fleet mapped so that the router's view and the agents' disagree.
After a deliberate change: ``pytest tests/console/test_fleet_snapshots.py --snapshot-update``."""

from __future__ import annotations

from typing import Any

import pytest
from console_testkit import screen_text, until
from fleet_kit import scripted_fleet
from textual.pilot import Pilot

from console.fleet.app import FleetApp
from console.link.backoff import Backoff

NO_WAIT = Backoff(base_s=0.05, cap_s=0.2, jitter=0.0)

REPRS = ("{'", "None", "True", "False", "[]")


def fleet_app(disagreeing: bool = False) -> FleetApp:
    targets, links = scripted_fleet(disagreeing)
    return FleetApp(targets, links=links, clock=lambda: 1000.0, operator="snap", backoff=NO_WAIT)


async def settled(pilot: Pilot[None]) -> None:
    app = pilot.app
    assert isinstance(app, FleetApp)
    hosts = app.hosts
    await until(
        lambda: (
            hosts["gpu-a"].model.latest is not None
            and hosts["gpu-b"].model.latest is not None
            and hosts["gpu-c"].model.link.state == "reconnecting"
            and hosts["gpu-d"].model.link.state == "failed"
        ),
        what="every host in its state",
    )
    app.poll_router()
    await until(lambda: app.fleet.router is not None, what="the router's view")
    app.paint_now()
    await pilot.pause()


@pytest.mark.parametrize("size", [(100, 30), (80, 24)], ids=["100x30", "80x24"])
def test_fleet_screen(snap_compare: Any, size: tuple[int, int]) -> None:
    assert snap_compare(fleet_app(), run_before=settled, terminal_size=size)


def test_fleet_screen_where_the_router_and_the_agents_disagree(snap_compare: Any) -> None:
    assert snap_compare(fleet_app(disagreeing=True), run_before=settled, terminal_size=(100, 30))


async def test_each_disagreement_between_the_router_and_the_agents_is_said_on_the_screen() -> None:
    app = fleet_app(disagreeing=True)
    async with app.run_test(size=(100, 30)) as pilot:
        await settled(pilot)
        text = screen_text(app)
    assert "The router does not send to gpu-b, whose agent says its engine is ready" in text, text
    assert "The router still sends to gpu-c, whose agent this console has not heard from" in text, text
    for repr_ in REPRS:
        assert repr_ not in text, f"{repr_!r} on the Fleet screen:\n{text}"


@pytest.mark.parametrize("size", [(100, 30), (80, 24)], ids=["100x30", "80x24"])
async def test_fleet_screen_reads_as_words_at_both_sizes(size: tuple[int, int]) -> None:
    app = fleet_app()
    async with app.run_test(size=size) as pilot:
        await settled(pilot)
        text = screen_text(app)
    for repr_ in REPRS:
        assert repr_ not in text, f"{repr_!r} on the Fleet screen:\n{text}"
    for host in ("gpu-a", "gpu-b", "gpu-c", "gpu-d"):
        assert host in text, text
    assert "4 hosts, 2 live" in text and "UNHEALTHY" in text, text
    assert "not in this fleet" not in text, text  # every worker the router has is a host of this fleet
