"""The console, driven by Pilot, reaches the agent through a real OpenSSH sshd and changes the engine."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from agent_harness import AgentProc
from textual.widgets import Input

from agent.wire import WIRE_VERSION
from console.screens.confirm import ConfirmPlan
from console.screens.controls import ControlsScreen
from console.screens.overview import OverviewScreen

from .console_kit import engine_live_state, ssh_console, text_of
from .sshd import Sshd, running_sshd
from .waiting import until, until_async


async def test_console_over_ssh_reads_snapshots_and_changes_the_threshold_live(
    sshd: Sshd, shared_agent: AgentProc
) -> None:
    before = await engine_live_state(shared_agent)
    new = 23 if before["threshold"] != 23 else 24
    accepted_before = sshd.log_text().count("Accepted publickey")
    app = ssh_console(sshd, shared_agent)
    async with app.run_test(size=(110, 32)) as pilot:
        await until(lambda: app.model.link.state == "connected", what="the SSH link", timeout_s=30)
        await until(lambda: len(app.model.snapshots) >= 2, what="two snapshots over SSH")
        # A snapshot is the sampler's tick: one taken as the engine came up may still say "starting"
        # after the supervisor (which the fixture waited on) says ready; the next one says ready.
        latest = await until(
            lambda: (
                app.model.latest if app.model.latest and app.model.latest.engine_state == "ready" else None
            ),
            what="a snapshot of the ready engine",
        )
        assert latest.wire_version == WIRE_VERSION and latest.engine_kind == "sim"
        assert latest.profile_name == "local-sim"
        assert isinstance(app.screen, OverviewScreen)
        await until(lambda: "ssh" in app.link.describe(), what="the link description")
        # It really went through our sshd, as our user, with our key.
        assert sshd.log_text().count("Accepted publickey") > accepted_before

        await pilot.press("c")
        assert isinstance(app.screen, ControlsScreen)
        app.screen.query_one("#in-threshold", Input).value = str(new)
        await pilot.click("#apply-threshold")
        dialog = await until(lambda: isinstance(app.screen, ConfirmPlan) and app.screen, what="the plan")
        assert dialog.plan.mode == "live", dialog.plan.reason
        assert any(c.key == "speculation.threshold" and c.new == new for c in dialog.plan.changes)
        await pilot.press("y")
        await until(lambda: "applied" in text_of(app, "#control-result"), what="the applied result")
        # The agent's own telemetry, as the console shows it, follows the engine.
        await until(
            lambda: app.model.latest is not None and app.model.latest.speculation.threshold == new,
            what="a snapshot showing the new threshold",
        )
    after = await until_async(
        lambda: _threshold_is(shared_agent, new), what="the engine's read-back of the new threshold"
    )
    assert after["threshold"] == new
    applied = [
        line
        for line in shared_agent.audit_lines()
        if line["action"]["kind"] == "threshold" and line["action"]["value"] == new
    ]
    assert len(applied) == 1
    assert applied[0]["operator"] == "e2e" and applied[0]["result"]["status"] == "applied"
    assert applied[0]["after"] == {"speculation.threshold": new}
    # The console read the agent's token over an SSH exec channel; sshd logged none of it.
    assert shared_agent.token() not in sshd.log_text()


async def _threshold_is(agent: AgentProc, value: int) -> dict[str, object] | None:
    state = await engine_live_state(agent)
    return state if state["threshold"] == value else None


async def test_console_refuses_a_changed_host_key_and_says_why(sshd: Sshd, shared_agent: AgentProc) -> None:
    accepted_before = sshd.log_text().count("Accepted publickey")
    app = ssh_console(sshd, shared_agent, known_hosts=sshd.changed_known_hosts)
    async with app.run_test(size=(110, 32)):
        await until(lambda: app.model.link.state == "failed", what="the link to fail")
        message = app.model.link.message
        assert "host key" in message
        assert f"ssh-keygen -R '[127.0.0.1]:{sshd.port}'" in message
        assert "never accepts an unverified key" in message
        assert not app.model.snapshots
        # No retry loop against a key that cannot verify: the state stays failed.
        assert app.model.link.attempt == 0
    assert sshd.log_text().count("Accepted publickey") == accepted_before


@pytest.fixture(scope="module")
def hardened_sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sshd]:
    """An sshd that allows logins but no forwarding at all, as hardened hosts are configured."""
    overrides = {"AllowStreamLocalForwarding": "no", "DisableForwarding": "yes"}
    with running_sshd(tmp_path_factory.mktemp("hardened-sshd"), overrides=overrides) as server:
        yield server


async def test_console_says_why_when_sshd_refuses_to_forward_to_the_agent_socket(
    hardened_sshd: Sshd, shared_agent: AgentProc
) -> None:
    app = ssh_console(hardened_sshd, shared_agent)
    async with app.run_test(size=(110, 32)):
        await until(lambda: app.model.link.state in ("reconnecting", "failed"), what="the link to give up")
        await until(lambda: app.model.link.attempt >= 1 or app.model.link.state == "failed", what="a try")
        assert "refused streamlocal" in hardened_sshd.log_text()
        assert "forward" in app.model.link.message.lower(), app.model.link.message
